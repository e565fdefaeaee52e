// The inference server's tensor-parallel option on the simulated RTX 4090: off by default and at
// degree 1 it changes nothing; at degree 2 the placement's topology penalty slows the collectives,
// so TTFT and TPOT rise with it.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/metrics/latency.hpp"
#include "tessera/tenant/inference_server.hpp"

namespace tessera::tenant {
namespace {

constexpr core::Nanos kHorizon = core::seconds(20);  // ample: every request finishes

std::vector<workload::Request> requests() {
  std::vector<workload::Request> out;
  for (int i = 0; i < 6; ++i) {
    out.push_back(workload::Request{.id = static_cast<std::uint64_t>(i),
                                    .arrival = i * core::millis(300),
                                    .input_tokens = 1024 + 256 * (i % 3),
                                    .output_tokens = 16});
  }
  return out;
}

struct Outcome {
  std::vector<metrics::RequestRecord> records;
  std::optional<core::Error> failure;
};

Outcome serve(const std::string& model_name, const workload::TensorParallel* tp) {
  sim::Engine engine;
  const auto spec = hw::find_gpu("rtx4090");
  EXPECT_TRUE(spec.has_value());
  sim::SimGpu gpu(engine, spec.value());
  auto mode = gpu::make_sharing_mode("exclusive");
  EXPECT_TRUE(mode.has_value());
  const std::vector<gpu::TenantInfo> infos{{.id = 0, .name = "svc", .latency_critical = true}};
  EXPECT_TRUE(mode.value()->attach(gpu, infos).has_value());
  const auto model = workload::find_model(model_name);
  EXPECT_TRUE(model.has_value());
  InferenceConfig config{.name = "svc", .model = model.value(), .slo = {}};
  if (tp != nullptr) config.tensor_parallel = *tp;
  InferenceServer server(0, config, requests(), **mode, engine);
  server.start();
  engine.run_until(kHorizon);
  return Outcome{.records = server.records(), .failure = server.failure()};
}

metrics::InferenceSummary summary(const Outcome& o) {
  return metrics::summarize_inference(o.records, {}, kHorizon);
}

TEST(TensorParallelServer, DegreeOneChangesNothing) {
  // llama-3-8b's 16 GB fit one 24 GB board.
  workload::TensorParallel one;
  one.penalty = 3.2;
  const Outcome plain = serve("llama-3-8b", nullptr);
  const Outcome explicit_one = serve("llama-3-8b", &one);
  ASSERT_FALSE(plain.failure);
  ASSERT_EQ(plain.records.size(), explicit_one.records.size());
  for (std::size_t i = 0; i < plain.records.size(); ++i) {
    EXPECT_TRUE(plain.records[i].done());
    EXPECT_EQ(plain.records[i].first_token, explicit_one.records[i].first_token);
    EXPECT_EQ(plain.records[i].finished, explicit_one.records[i].finished);
  }
}

TEST(TensorParallelServer, TtftAndTpotRiseWithThePenalty) {
  std::vector<metrics::InferenceSummary> at;
  for (double penalty : {1.0, 1.2, 3.2}) {
    const workload::TensorParallel tp{.degree = 2, .link_bytes_per_s = 24e9, .penalty = penalty};
    const Outcome o = serve("qwen2.5-14b", &tp);
    ASSERT_FALSE(o.failure) << o.failure->message();
    at.push_back(summary(o));
    EXPECT_EQ(at.back().completed, 6u);
  }
  for (std::size_t i = 1; i < at.size(); ++i) {
    EXPECT_GT(at[i].ttft_ms.mean, at[i - 1].ttft_ms.mean);
    EXPECT_GT(at[i].tpot_ms.mean, at[i - 1].tpot_ms.mean);
  }
}

TEST(TensorParallelServer, RejectsADegreeTheHeadsDoNotDivide) {
  const workload::TensorParallel three{.degree = 3, .link_bytes_per_s = 24e9, .penalty = 1.0};
  const Outcome o = serve("qwen2.5-14b", &three);
  ASSERT_TRUE(o.failure.has_value());
  EXPECT_NE(o.failure->message().find("heads (40)"), std::string::npos) << o.failure->message();
  EXPECT_NE(o.failure->message().find("svc"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tenant
