#include "tessera/workload/jobs/batch_job.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::workload {

namespace {

constexpr double kMaxBytes = 9.0e18;  // below INT64_MAX (9.22e18), so the cast cannot overflow

// Bytes are computed in double and rounded up, so a fractional byte counts as a whole one and a
// trajectory that overflows int64 saturates instead of wrapping.
std::int64_t ceil_bytes(double bytes) {
  if (!(bytes > 0)) return 0;
  return static_cast<std::int64_t>(std::ceil(std::min(bytes, kMaxBytes)));
}

}  // namespace

std::string_view to_string(JobKind k) {
  switch (k) {
    case JobKind::kScientific: return "scientific";
    case JobKind::kTraining: return "training";
    case JobKind::kInference: return "inference";
    case JobKind::kCustom: return "custom";
  }
  return "?";
}

std::int64_t MemoryTrajectory::requested_at(std::int64_t iteration,
                                            std::int64_t /*iterations*/) const {
  const auto i = static_cast<double>(iteration);
  double bytes =
      static_cast<double>(base_bytes) + per_iteration * i + per_iteration_squared * i * i;
  for (const MemoryStep& s : steps) {
    if (s.iteration <= iteration) bytes += static_cast<double>(s.bytes);
  }
  return ceil_bytes(bytes);
}

std::int64_t MemoryTrajectory::reserved_at(std::int64_t iteration, std::int64_t iterations) const {
  double ratio = reuse_start;
  if (iterations > 1) {
    ratio += (reuse_end - reuse_start) * static_cast<double>(iteration) /
             static_cast<double>(iterations - 1);
  }
  // A ratio outside (0, 1] has no meaning (live tensors cannot use more than is reserved); it
  // counts as 1, no slack, rather than dividing by zero or shrinking the figure.
  if (!(ratio > 0) || ratio > 1) ratio = 1;
  const std::int64_t reserved =
      ceil_bytes(static_cast<double>(requested_at(iteration, iterations)) / ratio);
  if (granule_bytes <= 0) return reserved;
  const std::int64_t segments = reserved / granule_bytes + (reserved % granule_bytes != 0 ? 1 : 0);
  if (segments > std::numeric_limits<std::int64_t>::max() / granule_bytes) {
    return std::numeric_limits<std::int64_t>::max();
  }
  return segments * granule_bytes;
}

std::int64_t MemoryTrajectory::peak_reserved(std::int64_t iterations) const {
  std::int64_t peak = 0;
  for (std::int64_t i = 0; i < iterations; ++i) peak = std::max(peak, reserved_at(i, iterations));
  return peak;
}

std::int64_t MemoryTrajectory::first_iteration_above(std::int64_t limit,
                                                     std::int64_t iterations) const {
  for (std::int64_t i = 0; i < iterations; ++i) {
    if (reserved_at(i, iterations) > limit) return i;
  }
  return -1;
}

MemoryReading noisy_reading(const MemoryTrajectory& trajectory, std::int64_t iteration,
                            std::int64_t iterations, double noise, double z) {
  const double f = std::max(0.0, 1 + noise * z);
  const auto scaled = [f](std::int64_t bytes) {
    return static_cast<std::int64_t>(std::llround(static_cast<double>(bytes) * f));
  };
  const std::int64_t requested = scaled(trajectory.requested_at(iteration, iterations));
  const std::int64_t reserved =
      std::max(requested, scaled(trajectory.reserved_at(iteration, iterations)));
  return {.requested = requested, .reserved = reserved};
}

}  // namespace tessera::workload
