// CPU time per simulated kernel of a whole scenario run: the Azure code-completion trace served by
// Llama-3-8B beside ResNet-50 training on a simulated H100 (examples/azure-code-1h.yaml), its
// first five simulated minutes, under each baseline sharing mode, with the simulated GPU's
// co-residency of kernels on SMs off (the first-order model) and on. The counter per_kernel is
// the run's CPU time over the kernels the simulated GPU completed (arrivals, the inference server,
// the mode and the simulator all included). Needs ../shared/data beside the checkout (the trace);
// without it the benchmark reports an error and skips.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "tessera/backends/sim/gpu/sim_run_backend.hpp"
#include "tessera/core/time.hpp"
#include "tessera/scenario/runner.hpp"
#include "tessera/scenario/scenario.hpp"

namespace {

using namespace tessera;

const std::vector<std::string> kModes{"exclusive", "time-slicing", "mps", "static-partitions"};

void BM_AzureCodeFiveMinutes(benchmark::State& state) {
  auto loaded =
      scenario::load_scenario(std::string(TESSERA_SOURCE_DIR) + "/examples/azure-code-1h.yaml");
  if (!loaded) {
    state.SkipWithError(loaded.error().message().c_str());
    return;
  }
  scenario::Scenario s = std::move(*loaded);
  s.duration = core::seconds(300);
  s.modes = {kModes[static_cast<std::size_t>(state.range(0))]};
  s.sim_overrides.co_residency = state.range(1) != 0;
  scenario::RunOptions options;
  options.backend = [](const scenario::Scenario& run) {
    return core::Result<std::unique_ptr<device::RunBackend>>(
        sim::make_sim_run_backend(run.sim_overrides));
  };
  double kernels = 0;
  for (auto _ : state) {
    auto report = scenario::run_scenario(s, options);
    if (!report) {
      state.SkipWithError(report.error().message().c_str());
      return;
    }
    kernels += static_cast<double>(report->modes.front().device.kernels_completed);
  }
  state.SetLabel(s.modes.front() + (state.range(1) != 0 ? " co-residency" : ""));
  state.counters["kernels"] = benchmark::Counter(kernels, benchmark::Counter::kAvgIterations);
  // CPU seconds per kernel (printed with its SI prefix: "27.5ns").
  state.counters["per_kernel"] =
      benchmark::Counter(kernels, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_AzureCodeFiveMinutes)
    ->ArgsProduct({{0, 1, 2, 3}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
