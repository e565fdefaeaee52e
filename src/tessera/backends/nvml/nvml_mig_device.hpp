#pragma once
// device::MigDevice on a real MIG GPU through NVML. Instances are GPU instances created at a
// placement, each with one compute instance spanning it; jobs are processes (the job's command)
// started with CUDA_VISIBLE_DEVICES set to the instance's MIG UUID. A running job's memory is the
// MIG device's used memory, sampled every sample_period; its exit status says how it ended.
// Energy is the board's total-energy counter, where the driver has it.
//
// Everything here runs on the caller's thread: run() is a wall-clock loop that fires timers
// (samples, kill deadlines), reaps exited processes and sleeps in between. Tested against a fake
// libnvidia-ml (tests/support/native/fake_nvml) only; docs/mig.md says what that leaves unverified.

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/backends/nvml/nvml_library.hpp"
#include "tessera/device/mig_device.hpp"
#include "tessera/device/wall_clock_executor.hpp"

namespace tessera::cuda {

struct NvmlMigOptions {
  // How often a running job's memory is read. ASSUMPTION: 500 ms, the brief's default; NVML's
  // memory query is cheap, and a job's memory changes on the scale of iterations.
  core::Nanos sample_period = core::millis(500);
  // SIGTERM, then SIGKILL this long after (stop_job). ASSUMPTION: 5 s, time for a framework to
  // flush a checkpoint; the manager stops jobs only to restart them elsewhere.
  core::Nanos kill_grace = core::seconds(5);
  // The longest run() sleeps before looking for exited processes. ASSUMPTION: 50 ms, small next
  // to job lengths (seconds and more) and cheap (one waitpid per job).
  core::Nanos poll_period = core::millis(50);
  // A job that exits non-zero after its memory reached this fraction of the instance's is
  // reported as out of memory. ASSUMPTION: 0.95; the CUDA allocator fails close to the limit and
  // the driver keeps a little of each instance for itself.
  double oom_fraction = 0.95;
  // The catalog GPU (hw::find_mig_geometry) when the NVML device name does not map onto one;
  // empty: from nvmlDeviceGetName.
  std::string gpu;
};

class NvmlMigDevice final : public device::MigDevice {
 public:
  // Opens GPU `gpu_index` (NVML's index). Fails, saying what to do, when MIG mode is off, when the
  // GPU is not in the MIG catalog, or when NVML's profiles differ from the catalog's.
  static core::Result<std::unique_ptr<NvmlMigDevice>> open(std::shared_ptr<NvmlLibrary> library,
                                                           unsigned gpu_index,
                                                           NvmlMigOptions options = {});
  // Stops (SIGKILL) and reaps every job still running; instances are left as they are.
  ~NvmlMigDevice() override;

  const hw::MigGeometry& geometry() const override { return geometry_; }
  device::MigCapabilities capabilities() const override;
  device::Executor& executor() override { return executor_; }
  // Every GPU instance of a catalog profile on the GPU, tessera's or not, ascending by start. If
  // NVML cannot be queried, the instances this object created (query_instances has the error).
  std::vector<device::MigInstance> instances() const override;
  core::Result<std::vector<device::MigInstance>> query_instances() const;
  core::Result<device::MigInstance> create_instance(int profile_id, int start) override;
  core::Status destroy_instance(device::MigInstanceId id) override;
  core::Result<device::JobRunId> start_job(device::MigInstanceId instance,
                                           workload::BatchJobPtr job,
                                           device::MigJobObserver& observer) override;
  core::Status stop_job(device::JobRunId run) override;
  std::optional<device::JobProcess> job_process(device::JobRunId run) const override;
  core::Status run(const std::function<bool()>& done) override;
  device::MigDeviceStats stats() const override;

 private:
  struct Instance;
  struct Run;
  struct GpuInstanceEntry {
    nvml::GpuInstance gi;
    nvml::GpuInstanceInfo info;
    const hw::MigProfile* profile;
  };
  NvmlMigDevice(std::shared_ptr<NvmlLibrary> library, nvml::Device device, unsigned gpu_index,
                hw::MigGeometry geometry, NvmlMigOptions options);

  const NvmlApi& api() const { return library_->api(); }
  core::Status check(nvml::Return r, std::string_view call) const {
    return library_->check(r, call);
  }
  // Every GPU instance of a catalog profile on the GPU.
  core::Result<std::vector<GpuInstanceEntry>> list_gpu_instances() const;
  // The GPU instance handle, compute instance (null if none) and MIG device of GPU instance `id`.
  core::Result<Instance> find_instance(device::MigInstanceId id) const;
  core::Result<nvml::Device> find_mig_device(unsigned gi_id) const;
  core::Result<std::string> uuid_of(nvml::Device mig_device) const;
  // Destroys every compute instance of `gi`, then `gi`.
  core::Status destroy_gpu_instance(nvml::GpuInstance gi) const;
  void sample(device::JobRunId run);
  void reap();
  // `wait_status`: waitpid's, or none when the process was reaped elsewhere.
  void finish(Run& run, std::optional<int> wait_status);

  std::shared_ptr<NvmlLibrary> library_;
  nvml::Device device_;
  unsigned gpu_index_;
  hw::MigGeometry geometry_;
  NvmlMigOptions options_;
  device::WallClockExecutor executor_;
  bool energy_ = false;
  unsigned long long energy_start_mj_ = 0;
  core::Nanos opened_at_ = 0;
  std::map<int, unsigned> nvml_instance_count_;  // profile ID -> NVML's instanceCount
  std::map<device::MigInstanceId, std::unique_ptr<Instance>> created_;  // by GPU instance ID
  std::map<device::JobRunId, std::unique_ptr<Run>> runs_;               // running jobs
  device::JobRunId next_run_ = 1;
  std::int64_t instances_created_ = 0;
  std::int64_t instances_destroyed_ = 0;
};

}  // namespace tessera::cuda
