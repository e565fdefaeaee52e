#include "tessera/tenant/training_job.hpp"

#include <memory>

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
  auto iteration = config_.model.iteration(batch());
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
