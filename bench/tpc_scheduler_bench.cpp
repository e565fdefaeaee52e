// Cost of one LithOS scheduling decision (TpcScheduler::decide) on an H100's 66 TPCs: the work
// the lithos mode does per kernel piece before it calls the device. The goal is a median under
// 300 ns per decision.
//   ./build/bench/tessera_tpc_scheduler_bench
//
// BM_StealDecision: the high-priority owner is idle and every best-effort tenant is ready, so
//   the first borrows the whole GPU (atomizer included).
// BM_ReclaimDecision: best-effort atoms hold every TPC and the owner's kernel arrives.
// BM_RightSizedDecision: the owner runs a right-sized piece on 16 TPCs; a best-effort tenant
//   borrows the idle 50 against the owner's per-TPC timers.
// The *Profiles variants predict through KernelProfiles (as the mode does) instead of a fixed
// per-wave time, to show what the learned model adds.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "tessera/gpu/policy/kernel_profiles.hpp"
#include "tessera/gpu/policy/tpc_scheduler.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace {

using namespace tessera;

const hw::GpuSpec& h100() {
  static const hw::GpuSpec spec = *hw::find_gpu("h100");
  return spec;
}

workload::Kernel gemm(std::int64_t blocks) {
  workload::Kernel k;
  k.name = "gemm";
  k.kind = workload::KernelClass::kGemm;
  k.pipe = workload::ComputePipe::kTensorFp16;
  k.blocks = blocks;
  k.block = {.threads = 256, .registers_per_thread = 128, .shared_memory_bytes = 64 * 1024};
  k.flops_per_block = 2e8;
  k.bytes_per_block = 1e5;
  return k;
}

class FixedWave final : public gpu::LatencyPredictor {
 public:
  std::optional<core::Nanos> predict(const workload::Kernel& k, std::int64_t blocks,
                                     int tpcs) const override {
    const std::int64_t wave = gpu::wave_blocks(h100(), k, tpcs);
    return core::micros(20) * ((blocks + wave - 1) / wave);
  }
};

class FromProfiles final : public gpu::LatencyPredictor {
 public:
  explicit FromProfiles(const gpu::KernelProfiles& p) : profiles_(p) {}
  std::optional<core::Nanos> predict(const workload::Kernel& k, std::int64_t blocks,
                                     int tpcs) const override {
    return profiles_.predict(h100(), k, blocks, tpcs);
  }

 private:
  const gpu::KernelProfiles& profiles_;
};

enum class Scene { kSteal, kReclaim, kRightSized };

void run(benchmark::State& state, Scene scene, bool profiled) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<gpu::TenantInfo> infos;
  infos.push_back({.id = 0, .name = "hp", .latency_critical = true, .priority = 1});
  for (std::size_t i = 1; i < n; ++i) {
    infos.push_back({.id = static_cast<gpu::TenantId>(i), .name = "be" + std::to_string(i)});
  }
  auto scheduler = *gpu::TpcScheduler::make(h100(), infos, core::micros(250));
  const auto hp_kernel = gemm(132);
  const auto be_kernel = gemm(20000);
  gpu::KernelProfiles profiles;
  for (const int t : {66, 33}) {
    profiles.record(h100(), hp_kernel, hp_kernel.blocks, t, h100().boost_clock_mhz,
                    core::micros(2000.0 / t + 5));
    profiles.record(h100(), be_kernel, be_kernel.blocks, t, h100().boost_clock_mhz,
                    core::micros(200000.0 / t + 5));
  }
  const FixedWave fixed;
  const FromProfiles learned(profiles);
  const gpu::LatencyPredictor& predictor =
      profiled ? static_cast<const gpu::LatencyPredictor&>(learned) : fixed;

  const core::Nanos now = core::millis(10);
  gpu::TpcBoard board(h100().tpcs, n);
  std::vector<gpu::TenantState> tenants(n);
  for (std::size_t i = 1; i < n; ++i) {
    tenants[i] = {.has_work = true, .ready = &be_kernel, .next_block = 0, .tpc_need = 0};
  }
  switch (scene) {
    case Scene::kSteal: break;
    case Scene::kReclaim:
      board.launch(1, gpu::TpcSet{}.set(), now + core::micros(120));
      tenants[0] = {.has_work = true, .ready = &hp_kernel, .next_block = 0, .tpc_need = 0};
      tenants[1].ready = nullptr;
      break;
    case Scene::kRightSized:
      board.launch(0, gpu::TpcSet{(1u << 16) - 1}, now + core::millis(2));
      tenants[0] = {.has_work = true, .ready = nullptr, .next_block = 0, .tpc_need = 0};
      break;
  }
  std::vector<gpu::TpcLaunch> out;
  out.reserve(n);
  std::size_t launches = 0;
  for (auto _ : state) {
    scheduler.decide(board, tenants, now, predictor, out);
    launches += out.size();
    benchmark::DoNotOptimize(out.data());
  }
  if (launches == 0) state.SkipWithError("the scene launched nothing");
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_StealDecision(benchmark::State& s) {
  run(s, Scene::kSteal, false);
}
void BM_ReclaimDecision(benchmark::State& s) {
  run(s, Scene::kReclaim, false);
}
void BM_RightSizedDecision(benchmark::State& s) {
  run(s, Scene::kRightSized, false);
}
void BM_StealDecisionProfiles(benchmark::State& s) {
  run(s, Scene::kSteal, true);
}
void BM_ReclaimDecisionProfiles(benchmark::State& s) {
  run(s, Scene::kReclaim, true);
}
void BM_RightSizedDecisionProfiles(benchmark::State& s) {
  run(s, Scene::kRightSized, true);
}

BENCHMARK(BM_StealDecision)->Arg(2)->Arg(4)->Arg(8);
BENCHMARK(BM_ReclaimDecision)->Arg(2)->Arg(4)->Arg(8);
BENCHMARK(BM_RightSizedDecision)->Arg(2)->Arg(4)->Arg(8);
BENCHMARK(BM_StealDecisionProfiles)->Arg(2)->Arg(8);
BENCHMARK(BM_ReclaimDecisionProfiles)->Arg(2)->Arg(8);
BENCHMARK(BM_RightSizedDecisionProfiles)->Arg(2)->Arg(8);

}  // namespace

BENCHMARK_MAIN();
