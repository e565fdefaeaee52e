#pragma once
// How tenants share one GPU. A sharing mode takes each tenant's kernel sequences and decides where
// (which stream, SM set, bandwidth domain) and when they run on a device::GpuDevice. The
// foundation's baselines (exclusive, time-slicing, MPS, static partitions) and the papers'
// schedulers (lithos, cogpu, tpot-first) are all SharingModes, created by name through
// registry.hpp, each from its own typed options (gpu/modes/<name>/).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::gpu {

using TenantId = std::uint32_t;

struct TenantInfo {
  TenantId id;
  std::string name;
  bool latency_critical = false;  // inference with an SLO, as opposed to best-effort work
  int priority = 0;               // larger is more important
  double sm_share = 0;            // static partitions: fraction of SMs; 0 splits evenly
  // The tenant's latency targets, for SLO-aware modes (cogpu, tpot-first); 0: no target.
  core::Nanos ttft_slo = 0;
  core::Nanos tpot_slo = 0;
};

// A named figure a mode keeps about its own decisions (atoms launched, TPCs lent, remaps), for
// reports; the name carries the unit.
struct ModeCounter {
  std::string name;
  double value = 0;
};

// A named SM set with its bandwidth domain, for timelines and reports.
struct PartitionInfo {
  std::string name;
  device::SmMask sms;
  device::DomainId bandwidth_domain;
  std::vector<TenantId> tenants;
};

class SharingMode {
 public:
  virtual ~SharingMode() = default;
  virtual std::string_view name() const = 0;

  // Creates streams, partitions and timers for `tenants` on `device`. Fails with a clear message
  // if the device lacks a capability the mode needs or the tenants do not fit.
  virtual core::Status attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) = 0;

  // A tenant's work, in submission order per tenant; `done` runs when all of it has finished.
  virtual core::Status submit(TenantId tenant, workload::KernelSequencePtr sequence,
                              std::uint64_t tag, device::DoneCallback done) = 0;

  virtual std::vector<PartitionInfo> partitions() const = 0;

  // Figures about the mode's own decisions so far; baselines have none.
  virtual std::vector<ModeCounter> counters() const { return {}; }
};

}  // namespace tessera::gpu
