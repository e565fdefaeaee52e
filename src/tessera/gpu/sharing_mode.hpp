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
  // The memory the partition's tenants share when it has its own (a MIG instance); 0: they
  // share the device's.
  std::int64_t memory_bytes = 0;
};

// Lifetime. attach() binds a mode to a device and to the device's executor, on which the mode
// keeps timers that call back into it. A device runs on an executor that outlives it; the
// executor must outlive the mode as well. The device may go before or after the mode:
// - the mode's destructor makes no device calls; it only cancels the mode's timers on the
//   executor, so destroying the device first is safe;
// - the work a mode submitted holds callbacks into the mode, so once the mode is gone its device
//   must not run again (destroy the device next);
// - once the device is gone, the mode is not used and the executor not run until the mode is
//   destroyed as well (a timer due would call into the device).
// tests/gpu/modes/mode_lifetime_test.cpp holds every registered mode to the first two.
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
