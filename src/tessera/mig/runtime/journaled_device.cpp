#include "tessera/mig/runtime/journaled_device.hpp"

#include <fmt/format.h>

#include <utility>

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::mig {

class JournaledMigDevice::RunObserver final : public device::MigJobObserver {
 public:
  RunObserver(JournaledMigDevice& device, device::MigJobObserver& target, std::string job)
      : device_(device), target_(&target), job_(std::move(job)) {}

  // The run was stopped because its start could not be recorded: its manager never heard of it.
  void disown() { target_ = nullptr; }

  void on_sample(const device::JobSample& sample) override {
    if (target_ != nullptr) target_->on_sample(sample);
  }

  void on_exit(const device::JobExit& exit) override {
    // The exit is passed on even when it cannot be recorded: the restart then finds the job's
    // process group empty, which costs it nothing.
    if (auto st = device_.journal_.job_exited(job_); !st) {
      core::logger().warn("{}", st.error().message());
    }
    device::MigJobObserver* target = target_;
    JournaledMigDevice& device = device_;
    device.observers_.erase(exit.run);  // `this` is gone from here on
    if (target != nullptr) target->on_exit(exit);
  }

 private:
  JournaledMigDevice& device_;
  device::MigJobObserver* target_;
  std::string job_;
};

JournaledMigDevice::JournaledMigDevice(device::MigDevice& inner, Journal& journal)
    : inner_(inner), journal_(journal) {}

JournaledMigDevice::~JournaledMigDevice() = default;

core::Result<device::MigInstance> JournaledMigDevice::create_instance(int profile_id, int start) {
  TESSERA_ASSIGN_OR_RETURN(device::MigInstance inst, inner_.create_instance(profile_id, start));
  auto recorded = journal_.instance_created(
      {.id = inst.id, .profile_id = inst.profile_id, .start = inst.start});
  if (recorded) return inst;
  const auto undone = inner_.destroy_instance(inst.id);
  return std::unexpected(recorded.error().with_context(
      undone ? fmt::format("created GPU instance {} and destroyed it again", inst.id)
             : fmt::format("created GPU instance {}, which could not be destroyed either ({}), "
                           "so it is left on the GPU",
                           inst.id, undone.error().message())));
}

core::Status JournaledMigDevice::destroy_instance(device::MigInstanceId id) {
  TESSERA_TRY(inner_.destroy_instance(id));
  return journal_.instance_destroyed(id);
}

core::Result<device::JobRunId> JournaledMigDevice::start_job(device::MigInstanceId instance,
                                                             workload::BatchJobPtr job,
                                                             device::MigJobObserver& observer) {
  if (job == nullptr) return inner_.start_job(instance, std::move(job), observer);
  const std::string name = job->name;
  auto watcher = std::make_unique<RunObserver>(*this, observer, name);
  TESSERA_ASSIGN_OR_RETURN(const device::JobRunId run,
                           inner_.start_job(instance, std::move(job), *watcher));
  RunObserver& w = *watcher;
  observers_.emplace(run, std::move(watcher));
  auto recorded = journal_.job_started(name, instance, inner_.job_process(run));
  if (recorded) return run;
  w.disown();
  (void)inner_.stop_job(run);  // its exit still arrives, and is recorded if it can be
  return std::unexpected(
      recorded.error().with_context(fmt::format("started job '{}' and stopped it again", name)));
}

}  // namespace tessera::mig
