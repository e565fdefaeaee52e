// Event-engine throughput. items_per_second is events executed per second.
//   ./build/bench/tessera_engine_bench

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/core/random.hpp"

namespace {

using tessera::core::Nanos;
using tessera::sim::Engine;

// The classic "hold" model: a steady population of pending events; each event, when it runs,
// schedules one more a random delay ahead. Measures push + pop at a realistic queue depth.
struct HoldState {
  Engine* engine;
  const std::vector<Nanos>* delays;
  std::size_t next = 0;
  std::int64_t left;
};

// One pointer, like the simulator's own callbacks ([this, slot]): small enough for
// std::function to keep inline, so the figure is the engine's own cost.
struct Hold {
  HoldState* st;
  void operator()() const {
    if (--st->left <= 0) return;
    const Nanos d = (*st->delays)[st->next++ & (st->delays->size() - 1)];
    st->engine->schedule_after(d, Hold{st});
  }
};

// The same with a 32-byte capture, too big for std::function's inline buffer (16 bytes in
// libstdc++): every schedule also allocates, and each callback is a cache miss away.
struct FatHold {
  explicit FatHold(HoldState* s) : st(s) {}
  HoldState* st;
  const void* unused[3] = {};
  void operator()() const {
    if (--st->left <= 0) return;
    const Nanos d = (*st->delays)[st->next++ & (st->delays->size() - 1)];
    st->engine->schedule_after(d, FatHold{st});
  }
};

template <class Callback>
void run_hold(benchmark::State& state) {
  const auto population = static_cast<int>(state.range(0));
  std::vector<Nanos> delays(1 << 16);
  tessera::core::RandomStream rng(42);
  for (auto& d : delays) d = static_cast<Nanos>(rng.exponential(1.0 / 1000)) + 1;
  constexpr std::int64_t kEvents = 1'000'000;
  for (auto _ : state) {
    Engine engine;
    HoldState st{.engine = &engine, .delays = &delays, .left = kEvents};
    for (int i = 0; i < population; ++i) {
      engine.schedule_at(delays[st.next++], Callback{&st});
    }
    engine.run_until(tessera::core::kNever);
    benchmark::DoNotOptimize(engine.events_executed());
    state.SetItemsProcessed(state.items_processed() +
                            static_cast<std::int64_t>(engine.events_executed()));
  }
}

void BM_EngineHold(benchmark::State& state) {
  run_hold<Hold>(state);
}
BENCHMARK(BM_EngineHold)->Arg(16)->Arg(1024)->Arg(65536)->Unit(benchmark::kMillisecond);

void BM_EngineHoldFatCallback(benchmark::State& state) {
  run_hold<FatHold>(state);
}
BENCHMARK(BM_EngineHoldFatCallback)->Arg(16)->Arg(1024)->Arg(65536)->Unit(benchmark::kMillisecond);

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
