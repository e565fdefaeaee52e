#include "tessera/backends/sim/mig/slice_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/core/try.hpp"

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

SliceCostModel::SliceCostModel(hw::GpuSpec spec, const hw::MigGeometry& geometry)
    : spec_(std::move(spec)) {
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
  const std::int64_t bucket = job.work.varies ? iteration / kVaryingBucket : 0;
  const auto key = std::make_tuple(job.work.key, profile.id, bucket);
  const bool cacheable = !job.work.key.empty();
  if (cacheable) {
    if (auto it = costs_.find(key); it != costs_.end()) return it->second;
  }
  const std::int64_t at =
      job.work.varies ? bucket * kVaryingBucket + kVaryingBucket / 2 : iteration;
  auto sequence = std::make_shared<const workload::KernelSequence>(job.work.build(at));
  Engine local;
  TESSERA_ASSIGN_OR_RETURN(
      auto gpu, SimGpu::create(local, slice_spec(spec_, profile), default_options(spec_)));
  TESSERA_ASSIGN_OR_RETURN(auto stream, gpu->create_stream(device::StreamConfig{}));
  core::Nanos finished = -1;
  auto submitted = gpu->submit(
      stream, sequence, 0, [&finished](const device::SubmissionDone& d) { finished = d.finished; });
  if (!submitted) {
    return std::unexpected(
        submitted.error().with_context(fmt::format("job '{}' on {}", job.name, profile.name)));
  }
  local.run_until(core::kNever);
  if (finished < 0) {
    return core::failf(Domain::kSim, Code::kInternal,
                       "job '{}': its iteration never finished on the simulated {}", job.name,
                       profile.name);
  }
  const double joules = gpu->stats().energy_joules;
  IterationCost c{.time = finished,
                  .active_watts = finished > 0 ? joules / core::to_seconds(finished) : 0};
  if (cacheable) costs_.emplace(key, c);
  return c;
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

}  // namespace tessera::sim
