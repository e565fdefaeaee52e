#include "tessera/tenant/training_job.hpp"

#include <memory>

#include "tessera/device/occupancy.hpp"
#include "tessera/workload/kernels/persistent.hpp"

namespace tessera::tenant {

using core::Code;
using core::Domain;

TrainingJob::TrainingJob(gpu::TenantId id, TrainingConfig config, gpu::SharingMode& mode,
                         device::Executor& /*executor*/, metrics::Timeline* timeline,
                         int timeline_track)
    : id_(id),
      config_(std::move(config)),
      mode_(mode),
      timeline_(timeline),
      timeline_track_(timeline_track) {}

int TrainingJob::batch() const {
  return config_.batch > 0 ? config_.batch : config_.model.default_batch;
}

void TrainingJob::start() {
  if (config_.model.iteration == nullptr || config_.batch < 0 || batch() <= 0) {
    failure_ = core::Error(
        Domain::kWorkload, Code::kInvalidArgument,
        fmt::format("training job '{}': model '{}' with batch {} cannot be built; give a known "
                    "model and a batch >= 1 (or 0 for the model's default)",
                    config_.name, config_.model.name, config_.batch));
    return;
  }
  const auto& persistent = config_.persistent;
  if (persistent && (persistent->sms < 1 || persistent->max_checkpoints < 0)) {
    failure_ = core::Error(
        Domain::kWorkload, Code::kInvalidArgument,
        fmt::format("training job '{}': persistent kernels need grids sized for at least 1 SM and "
                    "max_checkpoints >= 0, got {} SMs and {}",
                    config_.name, persistent->sms, persistent->max_checkpoints));
    return;
  }
  if (auto ok = workload::check_training_precision(config_.precision); !ok) {
    failure_ = ok.error().with_context(fmt::format("training job '{}'", config_.name));
    return;
  }
  auto iteration = config_.model.iteration(batch(), config_.precision);
  if (persistent) {
    const auto residency = [&p = *persistent](const workload::BlockResources& b) {
      return static_cast<std::int64_t>(p.sms) * device::blocks_per_sm(p.sm, b);
    };
    iteration = workload::persistent_gemms(iteration, residency, persistent->max_checkpoints);
  }
  iteration.phase = workload::Phase::kTraining;
  iteration_ = std::make_shared<const workload::KernelSequence>(std::move(iteration));
  submit_next();
}

void TrainingJob::submit_next() {
  auto submitted =
      mode_.submit(id_, iteration_, iterations_.size(), [this](const device::SubmissionDone& done) {
        iterations_.push_back(
            metrics::IterationRecord{.start = done.started, .end = done.finished});
        if (timeline_ != nullptr && timeline_track_ >= 0) {
          timeline_->add_span(timeline_track_, "iteration", done.started, done.finished,
                              {{"index", iterations_.size() - 1}, {"batch", batch()}});
        }
        submit_next();
      });
  if (!submitted) {
    failure_ = submitted.error().with_context(
        fmt::format("training job '{}' could not submit an iteration", config_.name));
  }
}

}  // namespace tessera::tenant
