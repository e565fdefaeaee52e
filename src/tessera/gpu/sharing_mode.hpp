#pragma once
// How tenants share one GPU. A sharing mode takes each tenant's kernel sequences and decides where
// (which stream, SM set, bandwidth domain) and when they run on a device::GpuDevice. The
// foundation's baselines (exclusive, time-slicing, MPS, static partitions) and the papers'
// schedulers (lithos, cogpu, tpot-first) are all SharingModes, created by name through
// registry.hpp.

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

// Options of the baseline modes; each mode reads the fields that concern it.
struct ModeOptions {
  // Time-slicing. The driver's slice length is not documented; 2 ms is an assumption, and
  // scenarios can set it.
  core::Nanos time_slice = core::millis(2);
  // Cost of switching contexts (save and restore of SM state), an assumption of the model.
  core::Nanos context_switch = core::micros(25);
  // MPS: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE for every client, in (0, 100].
  double mps_active_thread_percentage = 100;

  // lithos. Target length of one atom of a split kernel: the longest a high-priority kernel waits
  // for a best-effort atom on its TPCs. LithOS does not report its value; 250 us is an assumption.
  core::Nanos atom_duration = core::micros(250);
  bool right_sizing = false;  // give each kernel the fewest TPCs within latency_slip
  bool dvfs = false;          // lower the clock where latency_slip allows
  // Right-sizing and DVFS may make a kernel at most this fraction slower (LithOS evaluates 1.1x).
  double latency_slip = 0.1;

  // cogpu, tpot-first. Moving a virtual context to another SM partition drains its stream and
  // waits on an event in the new one; 10 us is an assumption (CoGPU reports only relative cost).
  core::Nanos remap_cost = core::micros(10);
  // cogpu, tpot-first. A latency-critical tenant's partition is not shrunk sooner than this after
  // it last changed, so a gap between requests shorter than this keeps its SMs instead of two
  // remaps (anti-thrash). CoGPU gives no value; 2 ms (about one decode step) is an assumption.
  core::Nanos remap_min_residency = core::millis(2);
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
