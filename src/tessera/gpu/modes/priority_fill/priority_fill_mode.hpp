#pragma once
// "priority-fill": latency-critical tenants first, best-effort tenants filling what they leave
// (policy/fill_policy.hpp). Each tenant submits whole sequences to its own device stream: the
// latency-critical ones at high stream priority on every SM, the best-effort ones at the lowest
// on an SM set the policy resizes whenever a latency-critical tenant becomes busy or idle. The
// device applies a new SM set from a stream's next kernel, so kernels are never split, and a
// stream whose set does not change keeps the simulator's fast path for isolated runs of kernels.
//
// With options.slo_guided the reserve follows the latency-critical tenants' slack: after each of
// their prefill or decode submissions the policy compares its time (submitted to finished) with
// its budget and grows or shrinks the reserve (fill_policy.hpp, next_reserve).
//
// Needs SM partitions (green contexts on a real GPU); without stream priorities every stream runs
// at the default priority and the reserve alone protects latency-critical work.

#include <optional>
#include <vector>

#include "tessera/gpu/modes/priority_fill/priority_fill_options.hpp"
#include "tessera/gpu/modes/tenant_table.hpp"
#include "tessera/gpu/policy/fill_policy.hpp"
#include "tessera/gpu/sharing_mode.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::gpu {

class PriorityFillMode final : public SharingMode {
 public:
  explicit PriorityFillMode(const PriorityFillOptions& options) : options_(options) {}

  std::string_view name() const override { return "priority-fill"; }
  core::Status attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) override;
  core::Status submit(TenantId tenant, workload::KernelSequencePtr sequence, std::uint64_t tag,
                      device::DoneCallback done) override;
  // One entry for the whole device, as for mps: the best-effort reserve moves with the load.
  std::vector<PartitionInfo> partitions() const override;
  // reserve_time_fraction (time best-effort tenants were held to the reserve), resizes (changes
  // of the best-effort SM set); with slo_guided also mean_reserve_sms (its size, averaged over
  // the time it held).
  std::vector<ModeCounter> counters() const override;
  const PriorityFillOptions& options() const { return options_; }

  // The SM set tenant `index` (attach order) runs on now; empty is every SM. For tests.
  device::SmMask sm_set(std::size_t index) const { return sets_[index]; }

 private:
  // Adds `delta` to tenant `index`'s submissions in flight; true when that turned a protected
  // tenant busy or idle, which changes the sets.
  bool count(std::size_t index, int delta);
  void resize();
  void on_done(std::size_t index, workload::Phase phase, const device::SubmissionDone& done,
               const device::DoneCallback& callback);
  // slo_guided: a latency-critical step of `phase` ended; true when the reserve changed.
  bool follow_slack(std::size_t index, workload::Phase phase, const device::SubmissionDone& done);
  // Adds the reserve's SM time up to now.
  void account_reserve(core::Nanos now);

  PriorityFillOptions options_;
  device::GpuDevice* device_ = nullptr;
  TenantTable tenants_;
  PartitionGrid grid_;
  std::vector<FillTenant> state_;  // attach order
  std::vector<int> in_flight_;     // submissions queued or running, per tenant
  std::vector<device::StreamId> streams_;
  std::vector<int> priorities_;
  std::vector<device::SmMask> sets_;
  int floor_ = 0;    // the reserve best_effort_share gives
  int reserve_ = 0;  // its size now
  double reserve_sm_ns_ = 0;
  core::Nanos accounted_to_ = 0;
  core::Nanos attached_at_ = 0;
  core::Nanos reserve_since_ = -1;  // -1: best-effort tenants hold every SM
  core::Nanos reserve_time_ = 0;
  std::int64_t resizes_ = 0;
  // A stream the device would not resize; the next submission reports it.
  std::optional<core::Error> failure_;
};

}  // namespace tessera::gpu
