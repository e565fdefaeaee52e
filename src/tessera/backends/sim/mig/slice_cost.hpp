#pragma once
// What a batch job's iterations cost on one MIG slice, timed as a GPU of its own: the board's spec
// with the profile's SMs, memory and memory_slices / 8 of its bandwidth, running the iteration's
// kernels on the simulated GPU (sim::SimGpu). Custom jobs with a fixed time scale by Amdahl's law
// over the slice's SMs. The simulated MIG GPU times its jobs with it, and tessera's MIG policy
// predicts a job's time on each profile with it (the same kernel model as everything else).
//
// Two jobs on one slice (co_run) are timed the same way: both jobs' iterations loop on the
// slice's simulated GPU under an intra-GPU sharing mode (gpu::SharingMode, "mps" by default), and
// each job's rate of progress there, read from its kernels' ends against their ends alone, gives
// its slowdown.

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/workload/jobs/batch_job.hpp"

namespace tessera::sim {

struct IterationCost {
  core::Nanos time = 0;
  double active_watts = 0;  // above the board's idle power
};

// Two jobs' iterations sharing one slice.
struct CoRunCost {
  double slowdown_a = 1;    // a's iteration time beside b over its time alone
  double slowdown_b = 1;    // b's beside a over alone
  double active_watts = 0;  // of the slice while both run, above the board's idle power
};

// MIG disabled: one profile spanning the whole board (all its SMs and memory), ID -1, "full".
hw::MigGeometry whole_gpu_geometry(const hw::GpuSpec& spec);

class SliceCostModel {
 public:
  // `geometry`: the board's MIG profiles (whole_gpu_geometry for MIG disabled). A custom job's
  // time per iteration is given for the profile with all 7 compute slices.
  // `share_mode`: the sharing mode (gpu/registry.hpp) two jobs on one slice run under.
  SliceCostModel(hw::GpuSpec spec, const hw::MigGeometry& geometry, std::string share_mode = "mps");

  const hw::GpuSpec& spec() const { return spec_; }

  // Iteration `iteration` of `job` on an instance of `profile`; cached per (work key, profile,
  // bucket of a varying job's iterations).
  core::Result<IterationCost> iteration(const workload::BatchJob& job, std::int64_t iteration,
                                        const hw::MigProfile& profile);

  // Every iteration of `job` on `profile`, summed: how long it runs there once started (process
  // start excluded), as the simulated GPU times it.
  core::Result<core::Nanos> job_time(const workload::BatchJob& job, const hw::MigProfile& profile);

  // Iteration `ia` of `a` and `ib` of `b` together on one instance of `profile`; cached per
  // (work keys, buckets, profile). Both jobs need kernels: a custom job's time beside another
  // cannot be simulated (kUnsupported).
  core::Result<CoRunCost> co_run(const workload::BatchJob& a, std::int64_t ia,
                                 const workload::BatchJob& b, std::int64_t ib,
                                 const hw::MigProfile& profile);
  // Whole jobs together: their middle iterations'.
  core::Result<CoRunCost> co_run(const workload::BatchJob& a, const workload::BatchJob& b,
                                 const hw::MigProfile& profile);

 private:
  using WorkKey = std::pair<std::string, std::int64_t>;  // work key, bucket
  // An iteration alone on a slice: its cost, and when each of its kernels ends from its start.
  struct AloneRun {
    IterationCost cost;
    std::vector<core::Nanos> kernel_ends;
  };
  core::Result<AloneRun> run_alone(const workload::BatchJob& job, std::int64_t iteration,
                                   const hw::MigProfile& profile) const;
  // The kernel ends of an iteration alone (cached with its cost where the job has a work key).
  core::Result<std::vector<core::Nanos>> kernel_ends_alone(const workload::BatchJob& job,
                                                           std::int64_t iteration,
                                                           const hw::MigProfile& profile);
  core::Result<CoRunCost> simulate_co_run(const workload::BatchJob& a, std::int64_t ia,
                                          const workload::BatchJob& b, std::int64_t ib,
                                          const hw::MigProfile& profile);

  hw::GpuSpec spec_;
  std::string share_mode_;
  int full_sms_ = 0;  // SMs of the 7-slice profile (the board's with MIG disabled)
  std::map<std::tuple<std::string, int, std::int64_t>, AloneRun> costs_;
  std::map<std::tuple<WorkKey, WorkKey, int>, CoRunCost> co_runs_;
};

}  // namespace tessera::sim
