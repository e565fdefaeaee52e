#pragma once
// A best-effort training job: submits one iteration after another for as long as the run lasts.

#include <cstdint>
#include <optional>
#include <vector>

#include "tessera/gpu/sharing_mode.hpp"
#include "tessera/metrics/latency.hpp"
#include "tessera/metrics/timeline.hpp"
#include "tessera/workload/training.hpp"

namespace tessera::tenant {

struct TrainingConfig {
  std::string name;
  workload::TrainingModel model;
  int batch = 0;  // 0: the model's default
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
