// CPU time of tesserad's policy round (TenantTable::tick) on one H100 with N tenants, half
// latency-critical and half best-effort, all with work: what the daemon spends every --tick.
// A tenant's launches move between rounds, as a busy node's do, so every round reads fresh
// activity; the policy (cogpu, whose layout is planned each time, or priority-fill, the
// default, with its reserve following the served tenants' steps) decides each time.

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "tessera/daemon/tenant_table.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace {

using namespace tessera;

void policy_round(benchmark::State& state, const char* policy) {
  const int n = static_cast<int>(state.range(0));
  daemon::TableOptions options;
  options.policy.slo_guided = true;
  daemon::TenantTable table({*gpu::PartitionGrid::of(*hw::find_gpu("h100"))},
                            *daemon::make_node_policy(policy, options.policy), options);
  std::vector<std::unique_ptr<daemon_abi::AssignmentPage>> pages;
  for (int i = 0; i < n; ++i) {
    pages.push_back(std::make_unique<daemon_abi::AssignmentPage>());
    daemon::RegisterRequest r;
    r.tenant = fmt::format("t{}", i);
    r.settings.tenant_class =
        i % 2 == 0 ? daemon::TenantClass::kLatencyCritical : daemon::TenantClass::kBestEffort;
    r.settings.tpot_slo = i % 2 == 0 ? core::millis(50) : 0;
    if (!table.add(r, pages.back().get(), 0)) {
      state.SkipWithError("registration refused");
      return;
    }
  }
  core::Nanos now = core::seconds(1);
  for (auto _ : state) {
    now += core::millis(1);
    for (auto& p : pages) {
      p->launches.fetch_add(1, std::memory_order_relaxed);
      p->last_launch_ns.store(static_cast<std::uint64_t>(now), std::memory_order_relaxed);
      // A decode step of 10 ms timed every round: well within half the 50 ms target.
      p->last_step_ns.store(static_cast<std::uint64_t>(core::millis(10)),
                            std::memory_order_relaxed);
      p->steps.fetch_add(1, std::memory_order_release);
    }
    benchmark::DoNotOptimize(table.tick(now));
  }
  state.SetLabel(fmt::format("{}, {} tenants", policy, n));
}

void BM_PolicyRound(benchmark::State& state) {
  policy_round(state, "cogpu");
}
BENCHMARK(BM_PolicyRound)->Arg(2)->Arg(8)->Arg(32);

void BM_PriorityFillRound(benchmark::State& state) {
  policy_round(state, "priority-fill");
}
BENCHMARK(BM_PriorityFillRound)->Arg(2)->Arg(8)->Arg(32);

}  // namespace

BENCHMARK_MAIN();
