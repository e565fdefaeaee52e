#pragma once
// The simulated MIG GPU: a device::MigDevice in the engine's virtual time.
//
// Each GPU instance is timed as a GPU of its own (sim::SliceCostModel): the board's spec with the
// profile's SMs, memory and memory_slices / 8 of its bandwidth. A job's iteration time on an
// instance is the simulated time (sim::SimGpu) of its iteration's kernels on that slice, cached
// per (work key, profile); custom jobs with a fixed time scale by Amdahl's law over the slice's
// SMs. Memory
// follows the job's trajectory; a job runs out of memory at the first iteration whose reserved
// bytes exceed its instance. Creating and destroying instances take SimMigOptions' times, during
// which the instance cannot run a job. Power: the board's idle power always, plus each busy
// instance's active power above idle as its SimGpu run measured it.
//
// Sharing (SimMigOptions::jobs_per_instance 2): a second job may start on a busy instance. While
// both run iterations, each iteration takes its time alone times its slowdown beside the other
// (SliceCostModel::co_run, under SimMigOptions::share_mode) and the pair's measured power is
// split between them; when one starts or ends, the other's iteration in flight keeps the part
// it has done and runs the rest at the new rate. A job runs out of memory when its iteration's
// reserved bytes and the other's exceed the instance.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/device/mig_device.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::sim {

struct SimMigOptions {
  // ASSUMPTION values, named in docs/mig.md with how they were chosen: NVIDIA publishes no
  // timing for these and no measurement was found; they are order-of-magnitude guesses (seconds,
  // as `nvidia-smi mig -cgi -C` and a PyTorch process start take by hand), kept separate so an
  // experiment can set them to zero or to measured values.
  core::Nanos create_time = core::seconds(1);  // one GPU instance plus its compute instance
  core::Nanos destroy_time = core::millis(500);
  // Process start and CUDA context creation before iteration 0.
  core::Nanos job_start_time = core::seconds(2);
  // Relative noise (seeded) on reported memory samples, as allocator readings jitter; the
  // out-of-memory check uses the trajectory itself. ASSUMPTION: 1%.
  double sample_noise = 0.01;
  std::uint64_t seed = 1;
  // MIG disabled: one instance spanning the whole board (all its SMs and memory), the paper's
  // sequential baseline. Its geometry has a single profile, "full", ID -1.
  bool whole_gpu = false;
  // Jobs an instance runs at once (1 or 2), and the intra-GPU sharing mode (gpu/registry.hpp)
  // two of them share it under.
  int jobs_per_instance = 1;
  std::string share_mode = "mps";
};

class SimMig final : public device::MigDevice {
 public:
  static core::Result<std::unique_ptr<SimMig>> create(Engine& engine, hw::GpuSpec spec,
                                                      SimMigOptions options = {});
  ~SimMig() override;

  const hw::MigGeometry& geometry() const override;
  device::MigCapabilities capabilities() const override;
  device::Executor& executor() override;
  std::vector<device::MigInstance> instances() const override;
  core::Result<device::MigInstance> create_instance(int profile_id, int start) override;
  core::Status destroy_instance(device::MigInstanceId id) override;
  core::Result<device::JobRunId> start_job(device::MigInstanceId instance,
                                           workload::BatchJobPtr job,
                                           device::MigJobObserver& observer) override;
  core::Status stop_job(device::JobRunId run) override;
  core::Status run(const std::function<bool()>& done) override;
  device::MigDeviceStats stats() const override;

 private:
  struct State;
  SimMig(Engine& engine, hw::GpuSpec spec, SimMigOptions options, hw::MigGeometry geometry);
  std::unique_ptr<State> state_;
};

}  // namespace tessera::sim
