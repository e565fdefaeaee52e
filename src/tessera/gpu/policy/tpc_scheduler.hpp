#pragma once
// LithOS's TPC scheduler (§4.2-4.3) as a pure policy: the state of every TPC and tenant in, the
// launches to make now out. No device calls, no clock reads; ties break by tenant index, then
// TPC index, so the same state always gives the same decision.
//
// Rules:
// - Ownership: tenants own TPCs by priority, fixed at construction (allocate_tpcs below).
// - An owner may always use its own TPCs, including ones still running another tenant's
//   borrowed atom: it launches at once on them and its blocks take those SMs as the atom's
//   blocks leave, so it waits at most for one atom.
// - Idle TPCs (unowned; owner has no work; or right-sizing leaves them unused) are lent to other
//   tenants in priority order (stealing), but never when the owner's timer says it will
//   need them before the borrowed atom is predicted to end.
// - Unowned TPCs go by priority: a tenant may take one back from a launch of a less important
//   tenant (priority, then latency-critical), waiting for at most that atom, as owners do.
// - Where an owner will need its TPCs back soon, a borrower either leaves them out or keeps
//   them with its atom cut to end in time (at least one wave), whichever hands out more blocks.
// - A launch on any borrowed TPC is an atom no longer than the atom target (the atomizer), and a
//   tenant has at most one piece in flight (the caller reports it ready only when none is), so
//   best-effort work outstanding on borrowed TPCs is at most one atom per borrower.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/device/sm_mask.hpp"
#include "tessera/gpu/policy/atomizer.hpp"
#include "tessera/gpu/policy/tpc_board.hpp"
#include "tessera/gpu/sharing_mode.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::gpu {

// The SMs of the TPCs in `tpcs`: TPC i is SMs [i * sms_per_tpc, (i + 1) * sms_per_tpc), the
// numbering static-partitions uses too.
device::SmMask sms_of(const hw::GpuSpec& spec, const TpcSet& tpcs);

// Which tenant (index in `tenants`) owns each TPC, kNoTenant for none. With any sm_share given,
// each tenant owns floor(share x TPCs) TPCs, laid out in attach order from TPC 0, and the rest
// is unowned (free for anyone to borrow). Otherwise the latency-critical tenants, or if there
// are none the tenants of the highest priority, own all TPCs split evenly (the first ones get
// the remainder) and the others own none. Errors name the tenant whose share does not fit.
core::Result<std::vector<int>> allocate_tpcs(const hw::GpuSpec& spec,
                                             std::span<const TenantInfo> tenants);

// Predicted latency of `blocks` blocks of `kernel` on `tpcs` TPCs; nullopt if unknown.
class LatencyPredictor {
 public:
  virtual ~LatencyPredictor() = default;
  virtual std::optional<core::Nanos> predict(const workload::Kernel& kernel, std::int64_t blocks,
                                             int tpcs) const = 0;
};

// One tenant now.
struct TenantState {
  bool has_work = false;  // something queued or in flight
  // The kernel to launch now; null when nothing is queued or a piece is still in flight.
  const workload::Kernel* ready = nullptr;
  std::int64_t next_block = 0;  // blocks of `ready` already handed out
  int tpc_need = 0;             // right-sized TPC count; 0: as many as it can get
};

struct TpcLaunch {
  std::size_t tenant = 0;
  TpcSet tpcs;
  int tpc_count = 0;
  int borrowed = 0;   // TPCs in the set the tenant does not own
  int reclaimed = 0;  // owned TPCs in the set still running another tenant's piece
  // The blocks to launch and why that many. On own TPCs only, the rest of the kernel runs as one
  // piece (reason kOwnTpcs): nothing there has to be handed back.
  Atom atom;
};

class TpcScheduler {
 public:
  // `tenants` fixes ownership (allocate_tpcs) and the stealing order: priority, then
  // latency-critical first, then attach order. Fails on an invalid spec or shares, or a
  // non-positive atom target.
  static core::Result<TpcScheduler> make(const hw::GpuSpec& spec,
                                         std::span<const TenantInfo> tenants,
                                         core::Nanos atom_target);

  int tpcs() const { return static_cast<int>(owner_.size()); }
  const TpcSet& owned(std::size_t tenant) const { return owned_[tenant]; }
  int owned_count(std::size_t tenant) const { return owned_count_[tenant]; }

  // The launches to make at `now`, written to `out` (cleared first; reuse it to avoid
  // allocating). `board` is who runs where (sized for this GPU and these tenants), `tenants` has
  // one entry per tenant in attach order.
  void decide(const TpcBoard& board, std::span<const TenantState> tenants, core::Nanos now,
              const LatencyPredictor& predictor, std::vector<TpcLaunch>& out);

 private:
  TpcScheduler() = default;

  // Free TPCs an owner needs back at `deadline` (later than now), lent only to atoms that end
  // before it.
  struct Lendable {
    TpcSet tpcs;
    int count = 0;
    core::Nanos deadline = 0;
  };
  // One tenant's launch while it is being decided.
  struct Plan {
    TpcSet own;  // its own TPCs it takes, then the borrowed ones too
    int own_count = 0;
    int reclaimed = 0;
    int want_more = 0;  // TPCs it would still use beyond its own
    int borrowed = 0;
    bool launch = false;
    Atom atom;
  };

  // Pass 1 for ready tenant `t`: up to `want` of its own TPCs, free ones first.
  void take_own(std::size_t t, const TpcBoard& board, int want);
  Atom plan_atom(const TenantState& state, int tpc_count, bool borrowing,
                 const LatencyPredictor& predictor, core::Nanos target) const;

  hw::GpuSpec spec_;
  core::Nanos atom_target_ = 0;
  std::vector<int> owner_;  // per TPC
  TpcSet all_;              // every TPC of the GPU
  TpcSet unowned_;          // TPCs no tenant owns
  std::vector<TpcSet> owned_;
  std::vector<int> owned_count_;
  std::vector<std::size_t> order_;  // tenant indexes, most important first
  // Per tenant: priority, then latency-critical; a tenant may take back an unowned TPC from a
  // launch of a tenant of lower importance.
  std::vector<std::int64_t> importance_;
  // Scratch, sized once, so a decision does not allocate.
  std::vector<Plan> plans_;
  std::vector<core::Nanos> need_at_;  // per tenant: when it needs its own TPCs back
  std::vector<Lendable> finite_;
  std::vector<Lendable> finite_all_;
  std::vector<int> reclaim_;
  TpcSet taken_;
  int free_left_ = 0;     // TPCs with nothing running that this decision has not granted yet
  int unowned_busy_ = 0;  // unowned TPCs running a launch, not taken back by this decision
};

}  // namespace tessera::gpu
