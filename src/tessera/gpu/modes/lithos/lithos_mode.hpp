#pragma once
// "lithos": LithOS's scheduler (§4.2-4.6) as a sharing mode. Each tenant submits into a virtual
// context; on every submission and every finished piece the TPC scheduler (tpc_scheduler.hpp)
// decides which tenants launch what where, and this runtime applies it through the device
// interface only: the tenant's stream is confined to the granted TPCs, then the piece is launched
// whole or as a block-range atom. One piece is in flight per tenant; the next is launched from
// the previous one's completion, so each piece pays the device's launch overhead as real launches
// do.
//
// It learns as it runs: every finished piece feeds KernelProfiles (TPC scaling curves) that
// predict piece durations for the per-TPC timers and atom sizes. With options.right_sizing each
// kernel gets the fewest TPCs within latency_slip of its latency on all it may use, found by
// walking down from all of them in steps that stay within the slip even for a compute-bound
// kernel, and cut short where the fitted curve l = m/t + b says further steps would not. With
// options.dvfs a DvfsGovernor picks the device clock after every piece; the clock is one per
// device, so the governor weighs every tenant's kernels by their share of the runtime.
//
// Needs SM partitions (TPC masks) and block-range launches; with dvfs also clock control.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "tessera/gpu/modes/lithos/lithos_options.hpp"
#include "tessera/gpu/modes/tenant_table.hpp"
#include "tessera/gpu/modes/virtual_context.hpp"
#include "tessera/gpu/policy/dvfs_governor.hpp"
#include "tessera/gpu/policy/kernel_profiles.hpp"
#include "tessera/gpu/policy/tpc_scheduler.hpp"
#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

class LithosMode final : public SharingMode {
 public:
  explicit LithosMode(const LithosOptions& options);
  ~LithosMode() override;
  LithosMode(const LithosMode&) = delete;
  LithosMode& operator=(const LithosMode&) = delete;

  std::string_view name() const override { return "lithos"; }
  core::Status attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) override;
  core::Status submit(TenantId tenant, workload::KernelSequencePtr sequence, std::uint64_t tag,
                      device::DoneCallback done) override;
  std::vector<PartitionInfo> partitions() const override;
  // atoms, kernels_whole, kernels_not_splittable, tpc_lendings, tpc_seconds_lent, hp_waits,
  // mean_hp_wait_us, mean_tpcs_allocated, tpc_seconds_saved, clock_changes.
  std::vector<ModeCounter> counters() const override;
  const LithosOptions& options() const { return options_; }

  // What the mode has learned so far (for experiments and tests).
  const KernelProfiles& profiles() const { return profiles_; }
  const DvfsGovernor* governor() const { return governor_ ? &*governor_ : nullptr; }

 private:
  struct Slot;
  class Predictor;

  void schedule();
  core::Status launch(const TpcLaunch& launch);
  void piece_done(std::size_t tenant, const device::SubmissionDone& done);
  // TPCs a kernel's grid can spread over (at most all of them), and how many it is given: that,
  // or with right-sizing the fewest within latency_slip of it.
  int usable_tpcs(const workload::Kernel& kernel) const;
  int tpc_need(const workload::Kernel& kernel) const;
  void tune_clock(const Slot& slot, core::Nanos latency);
  workload::KernelSequencePtr sequence_for(Slot& slot, const workload::Kernel& kernel,
                                           workload::Phase phase);

  LithosOptions options_;
  device::GpuDevice* device_ = nullptr;
  TenantTable tenants_;
  std::optional<TpcScheduler> scheduler_;
  std::vector<Slot> slots_;  // per tenant, in attach order
  TpcBoard board_;
  KernelProfiles profiles_;
  std::optional<DvfsGovernor> governor_;
  std::unique_ptr<Predictor> predictor_;
  // Scratch reused by every decision.
  std::vector<TenantState> states_;
  std::vector<TpcLaunch> launches_;
  bool scheduling_ = false;
  bool again_ = false;
  // The first launch that failed: returned by the submit() whose scheduling made it, or, when it
  // was made from a completion callback, by the next submit(); and by every submit() after.
  std::optional<core::Error> deferred_error_;

  struct Counters {
    std::int64_t atoms = 0;
    std::int64_t kernels_whole = 0;
    std::int64_t kernels_not_splittable = 0;
    std::int64_t tpc_lendings = 0;
    double tpc_seconds_lent = 0;
    std::int64_t hp_waits = 0;
    core::Nanos hp_wait_total = 0;
    std::int64_t pieces = 0;
    std::int64_t tpcs_allocated = 0;
    double tpc_seconds_saved = 0;
    std::int64_t clock_changes = 0;
  } counters_;
};

}  // namespace tessera::gpu
