#pragma once
// "mig": each tenant in a MIG GPU instance of its own (hw/mig_profiles.hpp), run as a static
// partition: the instance's SMs, the bandwidth of its memory slices (each an eighth of the
// board's, with its memory controllers) and its own memory, which the scenario runner holds the
// tenant to. A tenant's sm_share asks for the smallest profile with at least that share of the 7
// compute slices; tenants with share 0 split the slices the others leave, each taking the
// largest profile that fits its part. The instances are placed as the driver accepts them (the
// larger first, each at its first free placement), or the error names the layout that does not
// fit. The layout is fixed for the run: no reconfiguration, and no L2 slice (the simulator has
// no L2).

#include <span>
#include <vector>

#include "tessera/gpu/modes/static_partitions/static_partitions.hpp"

namespace tessera::gpu {

core::Result<std::vector<PartitionPlan>> plan_mig_instances(const hw::GpuSpec& spec,
                                                            std::span<const TenantInfo> tenants);

class MigMode final : public StaticPartitionsMode {
 public:
  MigMode() : StaticPartitionsMode("mig", &plan_mig_instances) {}
};

}  // namespace tessera::gpu
