#pragma once
// A batch job as the MIG level schedules it: a number of iterations, the work of each iteration
// (for the simulated device's timing), the memory it holds as it runs, and the command that runs
// it on a real GPU.
//
// Memory follows PyTorch's caching allocator's two figures (the MIGM paper instruments the same
// ones): `requested` is what live tensors ask for, `reserved` is what the allocator holds from
// the driver, and reserved is what counts against a MIG slice. A job runs out of memory at the
// first iteration whose reserved bytes exceed its instance's memory.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/core/time.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::workload {

enum class JobKind { kScientific, kTraining, kInference, kCustom };
std::string_view to_string(JobKind k);

// From iteration `iteration` on, `bytes` more are requested.
struct MemoryStep {
  std::int64_t iteration = 0;
  std::int64_t bytes = 0;
  bool operator==(const MemoryStep&) const = default;
};

// Requested bytes at iteration i (i = 0 .. iterations-1):
//   base + per_iteration * i + per_iteration_squared * i^2 + sum of steps with iteration <= i
// Reserved bytes: requested / reuse_ratio(i), where reuse_ratio(i) = reuse_start +
// (reuse_end - reuse_start) * i / (iterations - 1) is the fraction of reserved bytes that live
// tensors use (1: no cache slack), rounded up to a multiple of granule_bytes (the allocator's
// segment size; 0: no rounding).
struct MemoryTrajectory {
  std::int64_t base_bytes = 0;
  double per_iteration = 0;
  double per_iteration_squared = 0;
  std::vector<MemoryStep> steps;  // ascending by iteration
  double reuse_start = 1.0;
  double reuse_end = 1.0;
  std::int64_t granule_bytes = 0;

  std::int64_t requested_at(std::int64_t iteration, std::int64_t iterations) const;
  std::int64_t reserved_at(std::int64_t iteration, std::int64_t iterations) const;
  // Largest reserved over [0, iterations), and the first iteration where it is reached.
  std::int64_t peak_reserved(std::int64_t iterations) const;
  // First iteration whose reserved bytes exceed `limit`, or -1 if none does.
  std::int64_t first_iteration_above(std::int64_t limit, std::int64_t iterations) const;
};

// What an allocator reading at iteration i shows: requested and reserved bytes, both scaled by
// one factor max(0, 1 + noise z), z a standard normal draw the caller makes from its own seeded
// stream: what varies between iterations (batch contents, sequence lengths) moves live tensors
// and the allocator's pool together, so their ratio carries no noise of its own. Reserved is
// never below requested. The simulated MIG GPU and the predictor's replay both read memory
// through this.
struct MemoryReading {
  std::int64_t requested = 0;
  std::int64_t reserved = 0;
};
MemoryReading noisy_reading(const MemoryTrajectory& trajectory, std::int64_t iteration,
                            std::int64_t iterations, double noise, double z);

// The work of one iteration, for timing on a simulated device. `key` names the shape so that
// times can be cached (equal keys must give equal sequences); `build(i)` gives iteration i's
// kernels. Iterations whose work changes with i (a growing context) say so with `varies`.
struct IterationWork {
  std::string key;
  bool varies = false;
  std::function<KernelSequence(std::int64_t iteration)> build;
};

struct BatchJob {
  std::string name;  // unique within a job file
  JobKind kind = JobKind::kCustom;
  std::string description;  // "bert-base training, batch 32, AdamW"
  std::int64_t iterations = 1;
  core::Nanos submit_time = 0;  // when the job joins the queue (0: at the start)

  MemoryTrajectory memory;  // the truth, as the simulated device plays it
  // What the scheduler is told before the job runs: the static estimate of its peak (from
  // model size, batch and optimizer, or array sizes), 0 when unknown.
  std::int64_t estimated_peak_bytes = 0;
  // Growth the job declares in advance (a context window that grows at a known iteration),
  // which the predictor adds to its extrapolation.
  std::vector<MemoryStep> declared_steps;

  IterationWork work;  // for the simulated device; may be empty when iteration_time_full is set
  // A fixed time per iteration on the whole (7-slice) GPU, scaled by the simulated device to
  // smaller slices; used when `work.build` is empty (custom jobs).
  core::Nanos iteration_time_full = 0;
  double serial_fraction = 0;  // Amdahl fraction of iteration_time_full that does not scale

  std::vector<std::string> command;  // argv for a real GPU (nvml backend); empty in pure sims
};

using BatchJobPtr = std::shared_ptr<const BatchJob>;

}  // namespace tessera::workload
