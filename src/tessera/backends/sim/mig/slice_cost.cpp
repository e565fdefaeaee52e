#include "tessera/backends/sim/mig/slice_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/core/try.hpp"
#include "tessera/gpu/registry.hpp"

namespace tessera::sim {

using core::Code;
using core::Domain;

namespace {

// Iterations whose work varies (a growing context) are timed once per bucket of this many
// iterations, at the bucket's midpoint (bucket b is timed as iteration b x 256 + 128, whatever
// the job's length, so equal keys share times). 256 decode steps change a context of a few
// thousand tokens by under 10%, which moves a decode step's time by less than that.
constexpr std::int64_t kVaryingBucket = 256;

// ASSUMPTION: a custom job (a fixed time per iteration, no kernels) keeps its slice's SMs this
// busy: its active power is (TDP - idle) x slice SMs / board SMs x 0.6. Chosen as a middling
// utilisation between a memory-bound and a compute-bound job; no source.
constexpr double kCustomActivity = 0.6;

// A co-run is timed by each job's progress: after its k-th kernel beside the other, how far it
// would be in its time alone. The rate is taken from each job's first kernel beside the other
// (before which it may have waited for the other's kernels) to its last. Timed until each job has
// finished this many iterations ...
constexpr std::int64_t kCoRunIterations = 3;
// ... or, where one job's iterations are far longer, until this many kernels have finished in
// all and each job has finished two; ...
constexpr std::int64_t kCoRunKernels = 2048;
// ... and given up (kUnsupported) when one job has not finished two kernels after this many.
constexpr std::int64_t kCoRunKernelLimit = 32768;

std::int64_t bucket_of(const workload::BatchJob& job, std::int64_t iteration) {
  return job.work.varies ? iteration / kVaryingBucket : 0;
}

// The iteration a bucket is timed as.
std::int64_t timed_iteration(const workload::BatchJob& job, std::int64_t iteration) {
  return job.work.varies ? bucket_of(job, iteration) * kVaryingBucket + kVaryingBucket / 2
                         : iteration;
}

// The spec of one GPU instance timed as a GPU of its own (sim_mig.hpp).
hw::GpuSpec slice_spec(const hw::GpuSpec& board, const hw::MigProfile& p) {
  hw::GpuSpec s = board;
  const double share = static_cast<double>(p.sms) / board.sms;
  s.name = fmt::format("{} {}", board.name, p.name);
  s.sms = p.sms;
  s.tpcs = std::max(1, p.sms / std::max(1, board.sms_per_tpc));
  s.gpcs = p.compute_slices;
  s.memory_bytes = p.memory_bytes;
  s.memory_bandwidth_bytes_per_s =
      board.memory_bandwidth_bytes_per_s * p.memory_slices / hw::kMigMemorySlices;
  s.peak_fp16_tensor_flops = board.peak_fp16_tensor_flops * share;
  s.peak_fp32_flops = board.peak_fp32_flops * share;
  s.peak_tf32_tensor_flops = board.peak_tf32_tensor_flops * share;
  s.peak_fp8_tensor_flops = board.peak_fp8_tensor_flops * share;
  // The slice's SimGpu reports only its active energy above idle; the board's idle power is
  // counted once, by SimMig.
  s.idle_watts = 0;
  s.tdp_watts = (board.tdp_watts - board.idle_watts) * share;
  return s;
}

}  // namespace

hw::MigGeometry whole_gpu_geometry(const hw::GpuSpec& spec) {
  hw::MigGeometry g;
  g.gpu = spec.name;
  g.profiles.push_back(hw::MigProfile{.id = -1,
                                      .nvml_index = -1,
                                      .name = "full",
                                      .compute_slices = hw::kMigComputeSlices,
                                      .memory_slices = hw::kMigMemorySlices,
                                      .memory_bytes = spec.memory_bytes,
                                      .sms = spec.sms,
                                      .max_instances = 1,
                                      .placement_starts = {0},
                                      .media_extensions = false});
  return g;
}

SliceCostModel::SliceCostModel(hw::GpuSpec spec, const hw::MigGeometry& geometry,
                               std::string share_mode)
    : spec_(std::move(spec)), share_mode_(std::move(share_mode)) {
  for (const hw::MigProfile& p : geometry.profiles) {
    if (p.compute_slices == hw::kMigComputeSlices) full_sms_ = std::max(full_sms_, p.sms);
  }
  if (full_sms_ == 0) full_sms_ = spec_.sms;
}

core::Result<IterationCost> SliceCostModel::iteration(const workload::BatchJob& job,
                                                      std::int64_t iteration,
                                                      const hw::MigProfile& profile) {
  const double share = static_cast<double>(profile.sms) / spec_.sms;
  if (!job.work.build) {
    // Amdahl over the slice's SMs against the 7-slice GPU the time was given for.
    if (job.iteration_time_full <= 0) {
      return core::failf(Domain::kMig, Code::kInvalidArgument,
                         "job '{}' has neither kernels nor a time per iteration", job.name);
    }
    const double serial = std::clamp(job.serial_fraction, 0.0, 1.0);
    const double scale =
        serial + (1 - serial) * static_cast<double>(full_sms_) / static_cast<double>(profile.sms);
    return IterationCost{
        .time = core::round_to_nanos(static_cast<double>(job.iteration_time_full) * scale),
        .active_watts = (spec_.tdp_watts - spec_.idle_watts) * share * kCustomActivity};
  }
  const auto key = std::make_tuple(job.work.key, profile.id, bucket_of(job, iteration));
  const bool cacheable = !job.work.key.empty();
  if (cacheable) {
    if (auto it = costs_.find(key); it != costs_.end()) return it->second.cost;
  }
  TESSERA_ASSIGN_OR_RETURN(AloneRun run, run_alone(job, iteration, profile));
  const IterationCost cost = run.cost;
  if (cacheable) costs_.emplace(key, std::move(run));
  return cost;
}

core::Result<SliceCostModel::AloneRun> SliceCostModel::run_alone(
    const workload::BatchJob& job, std::int64_t iteration, const hw::MigProfile& profile) const {
  struct Ends final : device::DeviceObserver {
    std::vector<core::Nanos> at;
    void on_kernel_complete(const device::KernelEvent& e) override { at.push_back(e.end); }
  } ends;
  auto sequence = std::make_shared<const workload::KernelSequence>(
      job.work.build(timed_iteration(job, iteration)));
  Engine local;
  TESSERA_ASSIGN_OR_RETURN(
      auto gpu, SimGpu::create(local, slice_spec(spec_, profile), default_options(spec_)));
  TESSERA_ASSIGN_OR_RETURN(auto stream, gpu->create_stream(device::StreamConfig{}));
  gpu->add_observer(&ends);
  core::Nanos finished = -1;
  auto submitted = gpu->submit(
      stream, sequence, 0, [&finished](const device::SubmissionDone& d) { finished = d.finished; });
  if (!submitted) {
    return std::unexpected(
        submitted.error().with_context(fmt::format("job '{}' on {}", job.name, profile.name)));
  }
  local.run_until(core::kNever);
  if (finished < 0 || ends.at.empty()) {
    return core::failf(Domain::kSim, Code::kInternal,
                       "job '{}': its iteration never finished on the simulated {}", job.name,
                       profile.name);
  }
  const double joules = gpu->stats().energy_joules;
  return AloneRun{.cost = {.time = finished,
                           .active_watts = finished > 0 ? joules / core::to_seconds(finished) : 0},
                  .kernel_ends = std::move(ends.at)};
}

core::Result<std::vector<core::Nanos>> SliceCostModel::kernel_ends_alone(
    const workload::BatchJob& job, std::int64_t iteration, const hw::MigProfile& profile) {
  if (job.work.key.empty()) {
    TESSERA_ASSIGN_OR_RETURN(AloneRun run, run_alone(job, iteration, profile));
    return std::move(run.kernel_ends);
  }
  TESSERA_TRY(SliceCostModel::iteration(job, iteration, profile));
  return costs_.at(std::make_tuple(job.work.key, profile.id, bucket_of(job, iteration)))
      .kernel_ends;
}

core::Result<core::Nanos> SliceCostModel::job_time(const workload::BatchJob& job,
                                                   const hw::MigProfile& profile) {
  // Iterations of one bucket cost the same, so each bucket is timed once.
  const std::int64_t step = job.work.build && job.work.varies ? kVaryingBucket : job.iterations;
  core::Nanos total = 0;
  for (std::int64_t i = 0; i < job.iterations; i += std::max<std::int64_t>(step, 1)) {
    TESSERA_ASSIGN_OR_RETURN(const IterationCost c, iteration(job, i, profile));
    total += c.time * (std::min(job.iterations, i + step) - i);
  }
  return total;
}

core::Result<CoRunCost> SliceCostModel::co_run(const workload::BatchJob& a, std::int64_t ia,
                                               const workload::BatchJob& b, std::int64_t ib,
                                               const hw::MigProfile& profile) {
  for (const workload::BatchJob* job : {&a, &b}) {
    if (!job->work.build) {
      return core::failf(Domain::kMig, Code::kUnsupported,
                         "job '{}' has no kernels: its time beside another job on one slice "
                         "cannot be simulated",
                         job->name);
    }
  }
  const WorkKey ka{a.work.key, bucket_of(a, ia)};
  const WorkKey kb{b.work.key, bucket_of(b, ib)};
  const bool cacheable = !a.work.key.empty() && !b.work.key.empty();
  // One entry per unordered pair: the key with the smaller work first.
  const bool swapped = kb < ka;
  const auto key =
      swapped ? std::make_tuple(kb, ka, profile.id) : std::make_tuple(ka, kb, profile.id);
  if (cacheable) {
    if (auto it = co_runs_.find(key); it != co_runs_.end()) {
      CoRunCost c = it->second;
      if (swapped) std::swap(c.slowdown_a, c.slowdown_b);
      return c;
    }
  }
  TESSERA_ASSIGN_OR_RETURN(CoRunCost c, swapped ? simulate_co_run(b, ib, a, ia, profile)
                                                : simulate_co_run(a, ia, b, ib, profile));
  if (cacheable) co_runs_.emplace(key, c);
  if (swapped) std::swap(c.slowdown_a, c.slowdown_b);
  return c;
}

core::Result<CoRunCost> SliceCostModel::co_run(const workload::BatchJob& a,
                                               const workload::BatchJob& b,
                                               const hw::MigProfile& profile) {
  return co_run(a, a.iterations / 2, b, b.iterations / 2, profile);
}

namespace {

// One job of a co-run: its kernels' ends alone, and its progress beside the other.
struct CoRunProgress {
  workload::KernelSequencePtr sequence;
  std::vector<core::Nanos> alone;  // SliceCostModel::kernel_ends_alone
  std::int64_t kernels = 0;        // finished beside the other
  core::Nanos first_at = 0;        // when its first finished, and its progress alone then
  core::Nanos first_alone = 0;
  core::Nanos last_at = 0;  // the same at its last
  core::Nanos last_alone = 0;

  std::int64_t per_iteration() const { return std::ssize(alone); }
  void finished(core::Nanos at) {
    ++kernels;
    const std::int64_t n = per_iteration();
    const std::int64_t rem = kernels % n;
    const core::Nanos progress = kernels / n * alone.back() + (rem > 0 ? alone[rem - 1] : 0);
    if (kernels == 1) {
      first_at = at;
      first_alone = progress;
    }
    last_at = at;
    last_alone = progress;
  }
  double slowdown() const {
    return static_cast<double>(last_at - first_at) /
           static_cast<double>(std::max<core::Nanos>(1, last_alone - first_alone));
  }
};

}  // namespace

core::Result<CoRunCost> SliceCostModel::simulate_co_run(const workload::BatchJob& a,
                                                        std::int64_t ia,
                                                        const workload::BatchJob& b,
                                                        std::int64_t ib,
                                                        const hw::MigProfile& profile) {
  const auto context = [&] {
    return fmt::format("jobs '{}' and '{}' together on {} under {}", a.name, b.name, profile.name,
                       share_mode_);
  };
  std::array<CoRunProgress, 2> jobs;
  for (const auto& [job, i, p] : {std::tuple{&a, ia, &jobs[0]}, std::tuple{&b, ib, &jobs[1]}}) {
    p->sequence =
        std::make_shared<const workload::KernelSequence>(job->work.build(timed_iteration(*job, i)));
    auto alone = kernel_ends_alone(*job, i, profile);
    if (!alone) return std::unexpected(alone.error().with_context(context()));
    p->alone = std::move(*alone);
  }

  Engine local;
  TESSERA_ASSIGN_OR_RETURN(
      auto gpu, SimGpu::create(local, slice_spec(spec_, profile), default_options(spec_)));
  auto mode = gpu::make_sharing_mode(share_mode_);
  if (!mode) return std::unexpected(mode.error().with_context(context()));
  std::vector<gpu::TenantInfo> tenants(2);
  for (gpu::TenantId t = 0; t < 2; ++t) {
    tenants[t].id = t;
    tenants[t].name = t == 0 ? a.name : b.name;
  }
  if (auto st = (*mode)->attach(*gpu, tenants); !st) {
    return std::unexpected(st.error().with_context(context()));
  }
  // Modes number their tenants' device contexts from 1 in attach order (gpu::context_for).
  struct Counter final : device::DeviceObserver {
    std::array<CoRunProgress, 2>* jobs = nullptr;
    void on_kernel_complete(const device::KernelEvent& e) override {
      if (e.context >= 1 && e.context <= 2) (*jobs)[e.context - 1].finished(e.end);
    }
  } counter;
  counter.jobs = &jobs;
  gpu->add_observer(&counter);

  // Each job loops its iteration until the measure is taken.
  std::optional<core::Error> failed;
  std::function<void(gpu::TenantId)> submit = [&](gpu::TenantId t) {
    auto st = (*mode)->submit(t, jobs[t].sequence, 0,
                              [&submit, t](const device::SubmissionDone&) { submit(t); });
    if (!st && !failed) failed = st.error();
  };
  submit(0);
  submit(1);
  const auto measured = [&] {
    const std::int64_t fewer = std::min(jobs[0].kernels / jobs[0].per_iteration(),
                                        jobs[1].kernels / jobs[1].per_iteration());
    const std::int64_t least = std::min(jobs[0].kernels, jobs[1].kernels);
    return fewer >= kCoRunIterations ||
           (least >= 2 && jobs[0].kernels + jobs[1].kernels >= kCoRunKernels);
  };
  while (!failed && !measured() && jobs[0].kernels + jobs[1].kernels < kCoRunKernelLimit &&
         local.step()) {
  }
  if (failed) return std::unexpected(failed->with_context(context()));
  if (!measured()) {
    const bool a_slower = jobs[0].kernels < jobs[1].kernels;
    return core::failf(Domain::kSim, Code::kUnsupported,
                       "{}: one kernel of '{}' outlasts {} of '{}', too long a pair to time",
                       context(), a_slower ? a.name : b.name,
                       std::max(jobs[0].kernels, jobs[1].kernels), a_slower ? b.name : a.name);
  }
  const core::Nanos horizon = local.now();
  return CoRunCost{
      .slowdown_a = jobs[0].slowdown(),
      .slowdown_b = jobs[1].slowdown(),
      .active_watts = horizon > 0 ? gpu->stats().energy_joules / core::to_seconds(horizon) : 0};
}

}  // namespace tessera::sim
