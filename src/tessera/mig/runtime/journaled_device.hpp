#pragma once
// A device::MigDevice that writes to a mig::Journal what the device it wraps leaves on the
// machine: each GPU instance created and destroyed, each job started (with its process group) and
// exited. Nothing is acknowledged to the manager before its record is on disk: an instance or job
// whose record cannot be written is undone and reported as the failure.

#include <map>
#include <memory>
#include <string>

#include "tessera/device/mig_device.hpp"
#include "tessera/mig/runtime/journal.hpp"

namespace tessera::mig {

class JournaledMigDevice final : public device::MigDevice {
 public:
  // Neither is owned; both must outlive this object.
  JournaledMigDevice(device::MigDevice& inner, Journal& journal);
  ~JournaledMigDevice() override;

  const hw::MigGeometry& geometry() const override { return inner_.geometry(); }
  device::MigCapabilities capabilities() const override { return inner_.capabilities(); }
  device::Executor& executor() override { return inner_.executor(); }
  std::vector<device::MigInstance> instances() const override { return inner_.instances(); }
  core::Result<device::MigInstance> create_instance(int profile_id, int start) override;
  core::Status destroy_instance(device::MigInstanceId id) override;
  core::Result<device::JobRunId> start_job(device::MigInstanceId instance,
                                           workload::BatchJobPtr job,
                                           device::MigJobObserver& observer) override;
  core::Status stop_job(device::JobRunId run) override { return inner_.stop_job(run); }
  std::optional<device::JobProcess> job_process(device::JobRunId run) const override {
    return inner_.job_process(run);
  }
  core::Status run(const std::function<bool()>& done) override { return inner_.run(done); }
  device::MigDeviceStats stats() const override { return inner_.stats(); }

 private:
  // Records a run's exit before passing it on.
  class RunObserver;

  device::MigDevice& inner_;
  Journal& journal_;
  std::map<device::JobRunId, std::unique_ptr<RunObserver>> observers_;
};

}  // namespace tessera::mig
