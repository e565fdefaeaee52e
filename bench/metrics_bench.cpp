// Cost of recording kernels in the timeline (called once per simulated kernel) and of summarizing
// request latencies.

#include <benchmark/benchmark.h>

#include <vector>

#include "tessera/metrics/latency.hpp"
#include "tessera/metrics/timeline.hpp"

namespace {

using namespace tessera;

workload::Kernel named(std::string_view name) {
  workload::Kernel k;
  k.name = name;
  return k;
}

// Kernels stored while under the cap: routing, name interning and one compact record each.
void BM_TimelineRecordKernel(benchmark::State& state) {
  const workload::Kernel kernels[] = {named("gemm_qkv"), named("flash_attention"),
                                      named("rms_norm"), named("gemm_mlp_up")};
  const auto cap = static_cast<std::size_t>(state.range(0));
  std::int64_t i = 0;
  for (auto _ : state) {
    state.PauseTiming();
    metrics::Timeline timeline(cap);
    const int process = timeline.add_process("mps");
    timeline.route_domain(process, 0, timeline.add_track(process, "partition all"));
    state.ResumeTiming();
    for (std::size_t n = 0; n < cap; ++n, ++i) {
      timeline.on_kernel_complete({.stream = 1,
                                   .context = 0,
                                   .bandwidth_domain = 0,
                                   .kernel = &kernels[i % 4],
                                   .submission_tag = 0,
                                   .start = i * 1000,
                                   .end = i * 1000 + 900,
                                   .sms = 132});
    }
    benchmark::DoNotOptimize(timeline.kernel_events_dropped());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_TimelineRecordKernel)->Arg(200'000);

// Kernels past the cap are only counted: the steady state of a long run.
void BM_TimelineDropKernel(benchmark::State& state) {
  const workload::Kernel kernel = named("gemm_qkv");
  metrics::Timeline timeline(0);
  timeline.add_process("mps");
  const device::KernelEvent event{.stream = 1,
                                  .context = 0,
                                  .bandwidth_domain = 0,
                                  .kernel = &kernel,
                                  .submission_tag = 0,
                                  .start = 0,
                                  .end = 900,
                                  .sms = 132};
  for (auto _ : state) timeline.on_kernel_complete(event);
  benchmark::DoNotOptimize(timeline.kernel_events_dropped());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_TimelineDropKernel);

// Writing a full trace (the default cap of kernels) event by event; /dev/null isolates the
// formatting cost from the disk.
void BM_TimelineWrite(benchmark::State& state) {
  const workload::Kernel kernel = named("gemm_qkv");
  metrics::Timeline timeline(static_cast<std::size_t>(state.range(0)));
  const int process = timeline.add_process("mps");
  timeline.route_domain(process, 0, timeline.add_track(process, "partition all"));
  for (std::int64_t i = 0; i < state.range(0); ++i) {
    timeline.on_kernel_complete({.stream = static_cast<device::StreamId>(i % 2),
                                 .context = 0,
                                 .bandwidth_domain = 0,
                                 .kernel = &kernel,
                                 .submission_tag = static_cast<std::uint64_t>(i),
                                 .start = i * 500,
                                 .end = i * 500 + 900,
                                 .sms = 66});
  }
  for (auto _ : state) {
    if (!timeline.write("/dev/null")) state.SkipWithError("writing /dev/null failed");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_TimelineWrite)->Arg(200'000)->Unit(benchmark::kMillisecond);

void BM_SummarizeInference(benchmark::State& state) {
  std::vector<metrics::RequestRecord> records(static_cast<std::size_t>(state.range(0)));
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto t = static_cast<core::Nanos>((i * 7919) % 100'003) * 1000;
    records[i] = {.id = i,
                  .arrival = t,
                  .first_token = t + 50'000'000,
                  .finished = t + 900'000'000,
                  .input_tokens = 512,
                  .output_tokens = 128};
  }
  const metrics::Slo slo{.ttft = core::millis(200), .tpot = core::millis(50)};
  for (auto _ : state) {
    benchmark::DoNotOptimize(metrics::summarize_inference(records, slo, core::seconds(3600)));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_SummarizeInference)->Arg(100'000);

}  // namespace

BENCHMARK_MAIN();
