#pragma once
// MIG GPU-instance profiles of the MIG-capable GPUs in the catalog: slices, memory, SMs and the
// placements the driver accepts. Every number in mig_profiles.cpp names its source.
//
// Geometry (NVIDIA MIG User Guide, "Supported MIG Profiles"): a MIG GPU has 7 compute slices and
// 8 memory slices. A GPU instance occupies `memory_slices` consecutive memory slices starting at
// one of its profile's `placement_starts`, and `compute_slices` of the 7 compute slices. The
// placement axis is the memory one: `nvidia-smi mig -lgipp` prints placements as {starts}:size
// in memory slices.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::hw {

inline constexpr int kMigComputeSlices = 7;
inline constexpr int kMigMemorySlices = 8;

struct MigProfile {
  // The GPU-instance profile ID, as `nvidia-smi mig -lgip` prints it and as NVML's create,
  // placement and capacity calls take it (nvmlGpuInstanceProfileInfo_t::id): 19 = 1g, 20 = 1g+me,
  // 15 = 1g with two memory slices, 14 = 2g, 9 = 3g, 5 = 4g, 0 = 7g.
  int id;
  // The NVML_GPU_INSTANCE_PROFILE_* index that nvmlDeviceGetGpuInstanceProfileInfo takes; a
  // different number from `id` (shared/notes/cuda-api-facts.md section 3).
  int nvml_index;
  std::string name;  // "3g.20gb"
  int compute_slices;
  int memory_slices;          // also the placement size
  std::int64_t memory_bytes;  // the profile name's GB read as GiB, like the GPU's total
  int sms;
  int max_instances;
  std::vector<int> placement_starts;  // valid first memory slices, ascending
  bool media_extensions;              // "+me": holds the GPU's only set of media engines
};

struct MigGeometry {
  std::string gpu;  // GpuSpec::name of the board, e.g. "A100-SXM4-40GB"
  // Ascending by (compute_slices, memory_slices, media_extensions).
  std::vector<MigProfile> profiles;

  // nullptr when the GPU has no profile with this ID.
  const MigProfile* find(int id) const;
  // By name ("3g.20gb", case-insensitive) or ID ("9"); the error lists this GPU's profiles.
  core::Result<const MigProfile*> find(std::string_view name_or_id) const;
  // The smallest profile (fewest memory slices, then compute slices; media-extension profiles
  // skipped) with at least `bytes` of memory; nullptr if even the largest is too small.
  const MigProfile* smallest_with_memory(std::int64_t bytes) const;
};

// One GPU instance of a layout: a profile at a first memory slice.
struct MigSlot {
  int profile_id = 0;
  int start = 0;
};

// The placement rules every backend and the layout space apply: each instance's profile exists
// on this GPU and starts at one of its placement starts; memory slices do not overlap; compute
// slices add up to at most 7; no profile has more than max_instances; at most one instance holds
// the media extensions. The error names the instance at fault.
core::Status check_mig_layout(const MigGeometry& g, const std::vector<MigSlot>& instances);

// The MIG geometries, one per MIG-capable catalog GPU, in catalog order.
const std::vector<MigGeometry>& mig_catalog();
// Looked up like find_gpu (catalog name or alias, case-insensitive); a GPU without MIG is an
// error that lists the ones with it.
core::Result<MigGeometry> find_mig_geometry(std::string_view gpu);

}  // namespace tessera::hw
