#pragma once
// A best-effort training job: submits one iteration after another for as long as the run lasts.

#include <cstdint>
#include <optional>
#include <vector>

#include "tessera/gpu/sharing_mode.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/metrics/latency.hpp"
#include "tessera/metrics/timeline.hpp"
#include "tessera/workload/models/training.hpp"

namespace tessera::tenant {

// The job's GEMM and convolution kernels as persistent kernels (workload/persistent.hpp), so a
// scheduler can preempt them at checkpoints. The grids are sized to `sms` SMs: a launch
// configuration never changes, so a study sizes them to the partition the job is meant to run in.
struct PersistentGemms {
  int sms = 0;        // SMs the grids are sized for, at least 1
  hw::SmLimits sm{};  // the GPU's per-SM limits, which fix the blocks resident per SM
  // Polls per kernel at most. CoGPU does not say how often its persistent kernels poll; 16 is an
  // assumption (scenarios set it).
  int max_checkpoints = 16;
};

struct TrainingConfig {
  std::string name;
  workload::TrainingModel model;
  int batch = 0;                                               // 0: the model's default
  workload::Precision precision = workload::Precision::kBf16;  // a training precision
  // Empty: the kernels as the model builds them.
  std::optional<PersistentGemms> persistent = std::nullopt;
};

class TrainingJob {
 public:
  // The job is driven by its own completions alone, so `executor` is not kept; the parameter
  // keeps the tenants' constructors alike for the scenario runner.
  TrainingJob(gpu::TenantId id, TrainingConfig config, gpu::SharingMode& mode,
              device::Executor& executor, metrics::Timeline* timeline = nullptr,
              int timeline_track = -1);

  // Submits the first iteration; each completion submits the next. Must outlive the run.
  void start();
  const TrainingConfig& config() const { return config_; }
  int batch() const;
  const std::vector<metrics::IterationRecord>& iterations() const { return iterations_; }
  const std::optional<core::Error>& failure() const { return failure_; }

 private:
  void submit_next();

  gpu::TenantId id_;
  TrainingConfig config_;
  gpu::SharingMode& mode_;
  metrics::Timeline* timeline_;
  int timeline_track_;
  workload::KernelSequencePtr iteration_;  // built once: every iteration has the same shapes
  std::vector<metrics::IterationRecord> iterations_;
  std::optional<core::Error> failure_;
};

}  // namespace tessera::tenant
