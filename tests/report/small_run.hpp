#pragma once
// A small run for the tests of simulate's page: two modes, an inference tenant with an SLO and a
// sized KV cache (some single-token outputs, whose TPOT is 0), and a trainer.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/sim_run_options.hpp"
#include "tessera/metrics/report.hpp"
#include "tessera/scenario/runner.hpp"

namespace tessera::test {

inline constexpr const char* kSmallRun = R"(
name: small-run
gpu: H100-SXM5-80GB
seed: 7
duration: 3s
modes: [time-slicing, mps]
tenants:
  - name: chat
    kind: inference
    model: llama-3-8b
    slo: {ttft: 200ms, tpot: 30ms}
    kv_cache: {gpu_memory_utilization: 0.5}
    arrivals: {process: poisson, rate: 8, input_tokens: {min: 64, max: 1024},
               output_tokens: {min: 1, max: 64}}
  - name: trainer
    kind: training
    model: resnet-50
    batch: 32
)";

inline metrics::RunReport run_on_sim(const char* yaml, bool keep_samples) {
  auto s = scenario::parse_scenario(yaml, "small-run.yaml", ".");
  EXPECT_TRUE(s.has_value()) << s.error().message();
  auto options = test::sim_run_options();
  options.keep_samples = keep_samples;
  auto r = scenario::run_scenario(*s, options);
  EXPECT_TRUE(r.has_value()) << r.error().message();
  return r ? *r : metrics::RunReport{};
}

}  // namespace tessera::test
