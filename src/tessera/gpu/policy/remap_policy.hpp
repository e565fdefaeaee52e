#pragma once
// Remap policies of the cogpu runtime (CoGPU §4.3, §6.3): pure functions from a snapshot of the
// tenants to a target partition size per tenant. The runtime (cogpu_mode.hpp) turns sizes into
// physical contexts and migrates virtual contexts between kernels; a policy never calls the device
// and never reads a clock (`now` is in the snapshot).
//
// Writing a third policy: derive from RemapPolicy, build one Claim per latency-critical tenant
// that needs SMs (how many, and in which tier it is served), and return allocate(snapshot,
// claims): the shared part gives tiers their demands in order, holds recently grown partitions
// for the minimum residency, hands best-effort tenants what is left and keeps every size on the
// hardware grid. Then add one line for it in registry.cpp.

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "tessera/core/time.hpp"
#include "tessera/gpu/policy/physical_contexts.hpp"
#include "tessera/gpu/sharing_mode.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::gpu {

// A tenant's last finished submission of one phase: how long it ran on the device (first kernel
// start to last kernel end; for a decode step of a tenant that was already decoding, the time
// since its previous decode step ended, which is what a running request waits per token) and on
// how many SMs it finished. latency 0: none observed yet.
struct PhaseObservation {
  core::Nanos latency = 0;
  int sms = 0;
};

struct TenantSnapshot {
  TenantId id = 0;
  int priority = 0;
  bool latency_critical = false;
  core::Nanos ttft_slo = 0;  // 0: no target
  core::Nanos tpot_slo = 0;
  double sm_share = 0;    // a fixed fraction of the SMs it was given (static partitions); 0: none
  bool has_work = false;  // a kernel queued or in flight
  // Phase of the next kernel to launch; kUnspecified when nothing is queued.
  workload::Phase next_phase = workload::Phase::kUnspecified;
  // It has requests mid-generation: it finished a prefill or decode step since it last ran dry.
  bool decoding = false;
  PhaseObservation prefill{};
  PhaseObservation decode{};
  int sms = 0;                  // current partition
  core::Nanos last_change = 0;  // when its partition last changed
};

struct RemapSnapshot {
  core::Nanos now = 0;
  PartitionGrid grid;
  core::Nanos min_residency = 0;
  std::vector<TenantSnapshot> tenants;  // in the runtime's order (attach order)
};

// Target partition size per tenant, in snapshot order. Each size is one PartitionGrid::round
// keeps (0, or a multiple of the granularity of at least the minimum) and they add up to at most
// grid.usable_sms.
struct RemapTargets {
  std::vector<int> sms;
  // When the answer may change with no submission or completion to say so (a policy that
  // decides by time): the runtime asks again then, even mid-kernel. kNever: only on events.
  core::Nanos revisit_at = core::kNever;
};

class RemapPolicy {
 public:
  virtual ~RemapPolicy() = default;
  virtual std::string_view name() const = 0;
  virtual RemapTargets decide(const RemapSnapshot& snapshot) const = 0;
};

// --- Shared building blocks ---

// Fraction of an SLO a policy aims one step at: a token's time between tokens also holds the
// other iterations interleaved with its decode steps (prefills) and remap waits, and TTFT holds
// queueing. Half is an assumption of tessera; CoGPU does not give its margin.
inline constexpr double kSloStepBudget = 0.5;

// SMs a latency-critical tenant needs so that a step of `phase` meets kSloStepBudget of the
// phase's SLO (TTFT for prefill, TPOT for decode; the smaller of the two for a prefill while the
// tenant is decoding, since it delays every running request's next token), from its last observed
// step of that phase, rounded up to the grid. Assumes step latency scales as 1/SMs (an
// assumption: memory-bound steps scale less, so this over-asks, erring towards the SLO). Without
// a target or an observation it asks for every usable SM: isolation first, until the tenant has
// been seen.
int slo_demand(const RemapSnapshot& snapshot, const TenantSnapshot& tenant, workload::Phase phase);

// A latency-critical tenant's request for SMs. Every claim first gets the minimum partition
// (while SMs last); then lower tiers are served first, and within a tier demands that do not all
// fit are scaled down in proportion.
struct Claim {
  std::size_t tenant;  // index into snapshot.tenants
  int demand;          // SMs
  int tier;
};

// The shared allocation described in the header comment. With no tenant holding work, the
// current partitions stay as they are (nothing to gain from a remap). Each best-effort tenant
// with work is first set a minimum partition aside (while SMs last). After the claims, tenants
// that may not shrink yet (latency-critical, last change within min_residency) keep what they
// have while SMs last; best-effort tenants with work split the rest evenly (higher priority first
// for what does not divide); SMs still left go round-robin to the claims.
RemapTargets allocate(const RemapSnapshot& snapshot, std::vector<Claim> claims);

}  // namespace tessera::gpu
