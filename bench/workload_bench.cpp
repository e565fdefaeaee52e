// Cost of building kernel sequences (an inference server builds one per iteration) and of
// loading request traces.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "tessera/workload/arrivals.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace {

using namespace tessera;

void BM_DecodeStep(benchmark::State& state) {
  const auto model = *workload::find_model("llama-3-8b");
  const std::vector<int> contexts(static_cast<std::size_t>(state.range(0)), 1500);
  for (auto _ : state) {
    auto seq = workload::decode_step(model, contexts);
    benchmark::DoNotOptimize(seq);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeStep)->Arg(1)->Arg(32)->Arg(256);

void BM_PrefillStep(benchmark::State& state) {
  const auto model = *workload::find_model("llama-3-8b");
  const std::vector<int> prompts(static_cast<std::size_t>(state.range(0)), 2048);
  for (auto _ : state) {
    auto seq = workload::prefill_step(model, prompts);
    benchmark::DoNotOptimize(seq);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PrefillStep)->Arg(1)->Arg(4);

void BM_ResNet50Iteration(benchmark::State& state) {
  for (auto _ : state) {
    auto seq = workload::resnet50_iteration(256);
    benchmark::DoNotOptimize(seq);
  }
}
BENCHMARK(BM_ResNet50Iteration);

void BM_LoadAzureTrace(benchmark::State& state) {
  const std::string path = std::string(TESSERA_SHARED_DATA_DIR) +
                           "/llm_traces/azure_llm_2023/AzureLLMInferenceTrace_code.csv";
  std::int64_t rows = 0;
  for (auto _ : state) {
    auto r = workload::load_trace_csv(path, {});
    if (!r) {
      state.SkipWithError(r.error().message().c_str());
      return;
    }
    rows += static_cast<std::int64_t>(r->size());
  }
  state.SetItemsProcessed(rows);
}
BENCHMARK(BM_LoadAzureTrace);

void BM_GeneratePoissonHour(benchmark::State& state) {
  const workload::SyntheticArrivals spec{.rate_per_s = 10,
                                         .cv = 1.0,
                                         .input_tokens = {.min = 100, .max = 4000},
                                         .output_tokens = {.min = 1, .max = 500}};
  const core::RandomStreams streams(1);
  std::int64_t requests = 0;
  for (auto _ : state) {
    auto r = workload::generate_arrivals(spec, core::seconds(3600), streams, "bench");
    if (!r) {
      state.SkipWithError(r.error().message().c_str());
      return;
    }
    requests += static_cast<std::int64_t>(r->size());
  }
  state.SetItemsProcessed(requests);
}
BENCHMARK(BM_GeneratePoissonHour);

}  // namespace

BENCHMARK_MAIN();
