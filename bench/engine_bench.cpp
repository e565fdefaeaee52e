// Event-engine throughput. items_per_second is events executed per second.
//   ./build/bench/tessera_engine_bench

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/sim/engine.hpp"

namespace {

using tessera::core::Nanos;
using tessera::sim::Engine;

// The classic "hold" model: a steady population of pending events; each event, when it runs,
// schedules one more a random delay ahead. Measures push + pop at a realistic queue depth.
struct Hold {
  Engine* engine;
  std::vector<Nanos>* delays;
  std::size_t* next;
  std::int64_t* left;
  void operator()() const {
    if (--*left <= 0) return;
    const Nanos d = (*delays)[(*next)++ & (delays->size() - 1)];
    engine->schedule_after(d, Hold{*this});
  }
};

void BM_EngineHold(benchmark::State& state) {
  const auto population = static_cast<int>(state.range(0));
  std::vector<Nanos> delays(1 << 16);
  tessera::core::RandomStream rng(42);
  for (auto& d : delays) d = static_cast<Nanos>(rng.exponential(1.0 / 1000)) + 1;
  constexpr std::int64_t kEvents = 1'000'000;
  for (auto _ : state) {
    Engine engine;
    std::size_t next = 0;
    std::int64_t left = kEvents;
    for (int i = 0; i < population; ++i) {
      engine.schedule_at(delays[next++], Hold{&engine, &delays, &next, &left});
    }
    engine.run_until(tessera::core::kNever);
    benchmark::DoNotOptimize(engine.events_executed());
    state.SetItemsProcessed(state.items_processed() +
                            static_cast<std::int64_t>(engine.events_executed()));
  }
}
BENCHMARK(BM_EngineHold)->Arg(16)->Arg(1024)->Arg(65536)->Unit(benchmark::kMillisecond);

// What the simulated GPU does: every event also moves another pending timer (cancel and
// schedule again), as a kernel's completion is moved when its rate changes.
void BM_EngineCancelAndReschedule(benchmark::State& state) {
  constexpr int kTimers = 64;
  constexpr std::int64_t kEvents = 1'000'000;
  for (auto _ : state) {
    Engine engine;
    std::vector<tessera::device::TimerId> ids(kTimers);
    std::int64_t left = kEvents;
    std::uint64_t x = 1;
    std::function<void(int)> fire = [&](int i) {
      if (--left <= 0) return;
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      const int victim = static_cast<int>(x >> 58);  // 0..63
      if (victim != i) {
        engine.cancel(ids[victim]);
        ids[victim] =
            engine.schedule_after(static_cast<Nanos>(x >> 54), [&fire, victim] { fire(victim); });
      }
      ids[i] =
          engine.schedule_after(static_cast<Nanos>((x >> 44) & 1023) + 1, [&fire, i] { fire(i); });
    };
    for (int i = 0; i < kTimers; ++i) {
      ids[i] = engine.schedule_at(i, [&fire, i] { fire(i); });
    }
    engine.run_until(tessera::core::kNever);
    state.SetItemsProcessed(state.items_processed() +
                            static_cast<std::int64_t>(engine.events_executed()));
  }
}
BENCHMARK(BM_EngineCancelAndReschedule)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
