// priority-fill on the simulated GPU (an H100 from the catalog): a decode tenant's step tail next
// to ResNet-50 training against running alone and under MPS, and training's share of the GPU when
// the decode tenant is idle. Every run goes through the determinism checker (CheckedMode).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/gpu/check/determinism_checker.hpp"
#include "tessera/gpu/modes/priority_fill/priority_fill_mode.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::gpu {
namespace {

struct Outcome {
  double decode_p50_ms = 0;
  double decode_p99_ms = 0;
  int training_iterations = 0;
  int training_iterations_beside_service = 0;  // those finished before its last step did
};

// `steps` decode steps of 32 sequences back to back from t = `start` (no service tenant if
// steps < 0), beside ResNet-50 iterations from t = 0 (none if !with_training), for 4 s.
Outcome run(std::unique_ptr<SharingMode> made, int steps, core::Nanos start, bool with_training) {
  sim::Engine engine;
  sim::SimGpu gpu(engine, hw::find_gpu("h100").value());
  CheckedMode mode(std::move(made));
  std::vector<TenantInfo> ts;
  if (steps >= 0) {
    ts.push_back({.id = 0,
                  .name = "chat",
                  .latency_critical = true,
                  .priority = 1,
                  .tpot_slo = core::millis(50)});
  }
  if (with_training) ts.push_back({.id = 1, .name = "train"});
  const auto attached = mode.attach(gpu, ts);
  EXPECT_TRUE(attached) << attached.error().message();

  const auto model = workload::find_model("llama-3-8b").value();
  const auto step = std::make_shared<const workload::KernelSequence>(
      workload::decode_step(model, std::vector<int>(32, 1024)));
  std::vector<double> latencies;
  std::function<void(const device::SubmissionDone&)> next = [&](const device::SubmissionDone& d) {
    latencies.push_back(core::to_millis(d.finished - d.submitted));
    if (std::cmp_less(latencies.size(), steps)) {
      EXPECT_TRUE(mode.submit(0, step, latencies.size(), next));
    }
  };
  if (steps > 0) {
    engine.schedule_at(start, [&] { EXPECT_TRUE(mode.submit(0, step, 0, next)); });
  }
  Outcome out;
  const auto resnet = workload::find_training_model("resnet-50").value();
  const auto iteration = std::make_shared<const workload::KernelSequence>(
      resnet.iteration(resnet.default_batch, workload::Precision::kBf16));
  std::function<void(const device::SubmissionDone&)> again = [&](const device::SubmissionDone&) {
    ++out.training_iterations;
    if (std::cmp_less(latencies.size(), steps)) ++out.training_iterations_beside_service;
    EXPECT_TRUE(mode.submit(1, iteration, 0, again));
  };
  if (with_training) {
    EXPECT_TRUE(mode.submit(1, iteration, 0, again));
  }
  engine.run_until(core::seconds(4));
  const auto verdict = mode.verdict();
  EXPECT_TRUE(verdict) << verdict.error().message();
  EXPECT_EQ(latencies.size(), static_cast<std::size_t>(std::max(steps, 0)));
  if (!latencies.empty()) {
    std::sort(latencies.begin(), latencies.end());
    const auto rank =
        static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(latencies.size())));
    out.decode_p99_ms = latencies[rank - 1];
    out.decode_p50_ms = latencies[(latencies.size() - 1) / 2];
  }
  return out;
}

std::unique_ptr<SharingMode> named(std::string_view name) {
  auto made = make_sharing_mode(name);
  EXPECT_TRUE(made);
  return std::move(made.value());
}

std::unique_ptr<SharingMode> fill(double share) {
  PriorityFillOptions o;
  o.best_effort_share = share;
  return std::make_unique<PriorityFillMode>(o);
}

TEST(PriorityFillOnSim, KeepsTheDecodeTailMuchCloserToAloneThanMps) {
  const double alone = run(named("exclusive"), 100, 0, false).decode_p99_ms;
  const double mps = run(named("mps"), 100, 0, true).decode_p99_ms;
  const double fill = run(named("priority-fill"), 100, 0, true).decode_p99_ms;
  RecordProperty("decode_p99_ms_alone", std::to_string(alone));
  RecordProperty("decode_p99_ms_mps", std::to_string(mps));
  RecordProperty("decode_p99_ms_priority_fill", std::to_string(fill));
  ASSERT_GT(alone, 0);
  EXPECT_GT(mps, alone * 1.3) << "the comparison needs MPS to interfere";
  // The default reserve is 8 of the H100's 132 SMs: a decode step streams weights with bandwidth
  // in proportion to its SMs, so it cannot be free, but it must cost at most a sixth of what
  // MPS's unrestricted training costs.
  EXPECT_GT(fill, alone);
  EXPECT_LT(fill - alone, (mps - alone) / 6)
      << "alone " << alone << " ms, mps " << mps << " ms, priority-fill " << fill << " ms";
}

TEST(PriorityFillOnSim, TheShareTradesTheDecodeTailForTrainingThroughput) {
  Outcome last;
  for (const double share : {0.1, 0.3, 0.6}) {
    const Outcome o = run(fill(share), 100, 0, true);
    EXPECT_GT(o.decode_p50_ms, last.decode_p50_ms) << share;
    // As a rate per millisecond of a decode step, which the larger share lengthens.
    EXPECT_GT(o.training_iterations_beside_service / o.decode_p50_ms,
              last.training_iterations_beside_service / std::max(last.decode_p50_ms, 1e-9))
        << share;
    last = o;
  }
}

TEST(PriorityFillOnSim, TrainingHasTheWholeGpuWhileTheServiceIsIdle) {
  const int alone = run(named("exclusive"), -1, 0, true).training_iterations;
  // The service runs only in its first 20 steps from t = 3 s: training's first 3 s are its own.
  const Outcome late = run(named("priority-fill"), 20, core::seconds(3), true);
  const Outcome idle = run(named("priority-fill"), 0, 0, true);
  EXPECT_EQ(idle.training_iterations, alone);
  EXPECT_GE(late.training_iterations, alone * 3 / 4 - 1);
  EXPECT_LT(late.training_iterations, alone);
}

}  // namespace
}  // namespace tessera::gpu
