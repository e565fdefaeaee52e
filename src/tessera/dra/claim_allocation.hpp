#pragma once
// What a ResourceClaim (resource.k8s.io/v1, as the API server returns it) gave tessera's driver
// on this node: the devices allocated from its pool, how much of each the scheduler counted as
// consumed, and the share's settings from the claim's opaque configuration.
//
// A device "gpu-N" is GPU N of the node, and "gpu-N-mig-P-S" a MIG partition of it of profile P at
// memory slice S (the ResourceSlices the driver publishes name them so).
// Its consumed capacity (DRA consumable capacity: the device allows several allocations, and each
// claim consumes part of it) gives the share: `smPercent` of its SMs and `memory` bytes. A device
// allocated whole (no consumed capacity) is the claim's alone: every SM, no memory limit.
//
// The configuration is an opaque parameters object for the driver, from the DeviceClass and then
// the claim (the later wins field by field), for every request or for the ones it names:
//
//   apiVersion: gpu.tessera.io/v1alpha1
//   kind: GpuShareConfig
//   class: latency-critical        # or best-effort (the default)
//   priority: 10                   # -1000..1000; higher is served first
//   tpotSLO: 50ms                  # time per output token target (latency-critical)
//   ttftSLO: 1s                    # time to first token target
//   memoryLimit: 20Gi              # at most the memory consumed from the device, if any
//
// Unknown fields, a wrong apiVersion or kind, and values of the wrong type are errors that name
// them, so a typo in a claim fails its pod's start instead of being silently ignored.

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/daemon/control_protocol.hpp"

namespace tessera::dra {

inline constexpr std::string_view kConfigApiVersion = "gpu.tessera.io/v1alpha1";
inline constexpr std::string_view kConfigKind = "GpuShareConfig";
// The capacities each device publishes and a claim may consume.
inline constexpr std::string_view kSmPercentCapacity = "smPercent";
inline constexpr std::string_view kMemoryCapacity = "memory";

// A claim as the kubelet names it.
struct ClaimRef {
  std::string ns;
  std::string name;
  std::string uid;
};

// A MIG device's name, "gpu-N-mig-<profile id>-<start>", read back; an error for another name.
struct MigDeviceName {
  int gpu = 0;
  int profile_id = 0;
  int start = 0;
};
core::Result<MigDeviceName> parse_mig_device_name(std::string_view device);

struct AllocatedShare {
  std::string request;  // the claim's request it was allocated for
  std::string pool;
  std::string device;  // "gpu-N"
  int gpu = 0;         // N
  // A MIG partition ("gpu-N-mig-<profile id>-<start>"), not a share of the whole GPU.
  std::optional<MigDeviceName> mig;
  // Class, priority and targets from the configuration; sm_share and memory_limit from the
  // consumed capacity (memory_limit lowered by the configuration's memoryLimit, if smaller).
  daemon::TenantSettings settings;
};

struct ClaimAllocation {
  ClaimRef claim;
  std::vector<AllocatedShare> shares;
};

// "gpu-N" -> N; an error for any other name.
core::Result<int> gpu_of_device(std::string_view device);

// The shares `claim_json` allocated from `driver`'s pool `pool`. Fails (naming the claim and
// what is wrong) when its UID is not `ref.uid` (the claim was deleted and made again), it is not
// allocated, it holds no device of the driver in that pool, or its capacities or configuration
// are malformed.
core::Result<ClaimAllocation> read_allocation(const nlohmann::json& claim_json, const ClaimRef& ref,
                                              std::string_view driver, std::string_view pool);

}  // namespace tessera::dra
