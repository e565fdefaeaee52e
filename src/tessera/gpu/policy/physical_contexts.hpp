#pragma once
// Physical contexts: the SM partitions virtual contexts are mapped onto (CoGPU §4; green contexts
// on a real GPU). Hardware fixes their granularity: partitions come in multiples of
// hw::GpuSpec::green_ctx_sm_granularity SMs with at least green_ctx_min_sms (Hopper: multiples of
// 8, at least 8; Ampere: multiples of 2, at least 4). The planner here is pure: SM counts in,
// disjoint aligned masks out.

#include <span>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/device/sm_mask.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::gpu {

// The sizes a partition may have on one GPU.
struct PartitionGrid {
  int granularity = 1;  // SMs per step
  int min_sms = 1;      // smallest non-empty partition
  int usable_sms = 0;   // the device's SMs rounded down to the granularity
  int device_sms = 0;

  // Fails with a message naming the GPU if its granularity, minimum or SM count cannot describe a
  // partition (non-positive, a minimum that is not a multiple of the granularity, or more SMs than
  // an SmMask holds).
  static core::Result<PartitionGrid> of(const hw::GpuSpec& spec);

  // The size a request of `sms` gets: 0 stays 0, anything else is rounded down to the
  // granularity, raised to the minimum and capped at usable_sms.
  int round(int sms) const;
  // As round(), but rounding up: the smallest allowed size holding `sms` (capped at usable_sms).
  int round_up(int sms) const;
};

// One partition per tenant, in the order the sizes were given, laid out from SM 0 upwards; the
// SMs no partition takes form the pool (named kPoolName in reports). A size of 0 gives an empty
// mask: that tenant has no SMs now.
struct PhysicalLayout {
  std::vector<device::SmMask> partitions;
  device::SmMask pool;
};
inline constexpr const char* kPoolName = "free pool";

// Plans partitions of the given sizes (each rounded with PartitionGrid::round). Fails, naming the
// tenants (`names`, same order as `sms`; may be empty), if a size is negative or the rounded sizes
// need more than the usable SMs.
core::Result<PhysicalLayout> plan_physical_contexts(const PartitionGrid& grid,
                                                    std::span<const int> sms,
                                                    std::span<const std::string> names = {});

}  // namespace tessera::gpu
