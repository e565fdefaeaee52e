// The baseline sharing modes on the real simulated GPU (sim::SimGpu on an H100 from the catalog):
// an LLM inference tenant next to a training tenant, as the demo runs them. These check the
// modes' first-order effects end to end, with hand-checkable inequalities rather than numbers
// tuned to the model.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/metrics/latency.hpp"
#include "tessera/tenant/inference_server.hpp"
#include "tessera/tenant/training_job.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::tenant {
namespace {

constexpr core::Nanos kArrivalGap = core::millis(40);
constexpr int kRequests = 12;
constexpr core::Nanos kHorizon = core::seconds(4);  // ample: every request should finish

// Every kernel the inference tenant ran, by start time, with its duration.
class KernelLog final : public device::DeviceObserver {
 public:
  explicit KernelLog(device::DomainId domain) : domain_(domain) {}
  void on_kernel_complete(const device::KernelEvent& e) override {
    if (e.bandwidth_domain == domain_) durations.push_back(e.end - e.start);
  }
  std::vector<core::Nanos> durations;

 private:
  device::DomainId domain_;
};

struct Outcome {
  std::vector<metrics::RequestRecord> requests;
  std::vector<metrics::IterationRecord> iterations;
  std::vector<core::Nanos> inference_kernels;  // static partitions only
  std::int64_t kernels = 0;
};

enum class Training { kNone, kAttachedIdle, kRunning };

std::vector<workload::Request> requests() {
  std::vector<workload::Request> out;
  for (int i = 0; i < kRequests; ++i) {
    out.push_back(workload::Request{.id = static_cast<std::uint64_t>(i),
                                    .arrival = i * kArrivalGap,
                                    .input_tokens = 256 + 64 * (i % 4),
                                    .output_tokens = 24});
  }
  return out;
}

Outcome run(std::string_view mode_name, Training training) {
  Outcome out;
  sim::Engine engine;
  const auto spec = hw::find_gpu("h100");
  EXPECT_TRUE(spec);
  sim::SimGpu gpu(engine, spec.value());
  auto mode = gpu::make_sharing_mode(mode_name);
  EXPECT_TRUE(mode);
  std::vector<gpu::TenantInfo> infos{{.id = 0, .name = "chat", .latency_critical = true}};
  if (training != Training::kNone) infos.push_back({.id = 1, .name = "train"});
  const auto attached = mode.value()->attach(gpu, infos);
  EXPECT_TRUE(attached) << attached.error().message();

  std::unique_ptr<KernelLog> log;
  if (mode_name == "static-partitions") {
    log = std::make_unique<KernelLog>((*mode)->partitions()[0].bandwidth_domain);
    gpu.add_observer(log.get());
  }
  const auto model = workload::find_model("llama-3-8b");
  EXPECT_TRUE(model);
  InferenceServer server(0, InferenceConfig{.name = "chat", .model = model.value(), .slo = {}},
                         requests(), **mode, engine);
  server.start();
  std::unique_ptr<TrainingJob> job;
  if (training == Training::kRunning) {
    const auto resnet = workload::find_training_model("resnet-50");
    EXPECT_TRUE(resnet);
    job = std::make_unique<TrainingJob>(1, TrainingConfig{.name = "train", .model = resnet.value()},
                                        **mode, engine);
    job->start();
  }
  engine.run_until(kHorizon);
  EXPECT_FALSE(server.failure());
  out.requests = server.records();
  if (job) {
    EXPECT_FALSE(job->failure());
    out.iterations = job->iterations();
  }
  if (log) out.inference_kernels = log->durations;
  out.kernels = gpu.stats().kernels_completed;
  return out;
}

double mean_e2e_ms(const Outcome& o) {
  return metrics::summarize_inference(o.requests, {}, kHorizon).e2e_ms.mean;
}

void expect_all_finished(const Outcome& o) {
  ASSERT_EQ(o.requests.size(), static_cast<std::size_t>(kRequests));
  for (const auto& r : o.requests) {
    EXPECT_TRUE(r.done()) << "request " << r.id;
    EXPECT_GT(r.first_token, r.arrival);
    EXPECT_GE(r.finished, r.first_token);
  }
}

const Outcome& alone() {
  static const Outcome o = run("exclusive", Training::kNone);
  return o;
}

TEST(SimModes, ExclusiveServesEveryRequest) {
  expect_all_finished(alone());
  EXPECT_GT(alone().kernels, 0);
}

TEST(SimModes, MpsFinishesEverythingButSlowsInferenceDown) {
  const Outcome shared = run("mps", Training::kRunning);
  expect_all_finished(shared);
  EXPECT_GT(shared.iterations.size(), 0u);
  EXPECT_GT(mean_e2e_ms(shared), mean_e2e_ms(alone()));
}

TEST(SimModes, TimeSlicingFinishesEverythingButSlowsInferenceDown) {
  const Outcome shared = run("time-slicing", Training::kRunning);
  expect_all_finished(shared);
  EXPECT_GT(shared.iterations.size(), 0u);
  EXPECT_GT(mean_e2e_ms(shared), mean_e2e_ms(alone()));
}

TEST(SimModes, StaticPartitionsIsolateInferenceFromTrainingTraffic) {
  const Outcome quiet = run("static-partitions", Training::kAttachedIdle);
  const Outcome busy = run("static-partitions", Training::kRunning);
  expect_all_finished(busy);
  EXPECT_GT(busy.iterations.size(), 0u);
  // Disjoint SMs and bandwidth domains: the training tenant's traffic changes nothing for the
  // inference tenant, whose kernels run exactly at its partition's own speed.
  ASSERT_FALSE(quiet.inference_kernels.empty());
  EXPECT_EQ(busy.inference_kernels, quiet.inference_kernels);
  for (std::size_t i = 0; i < busy.requests.size(); ++i) {
    EXPECT_EQ(busy.requests[i].finished, quiet.requests[i].finished) << "request " << i;
  }
  // Half the GPU is slower than all of it.
  EXPECT_GT(mean_e2e_ms(quiet), mean_e2e_ms(alone()));
}

}  // namespace
}  // namespace tessera::tenant
