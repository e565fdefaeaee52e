#pragma once
// "cogpu" and "tpot-first": CoGPU's GPU coroutines as a sharing mode (CoGPU §4). Each tenant's
// virtual context (virtual_context.hpp) keeps its kernels, in order and with their launch
// configuration; the runtime feeds them to one device stream per tenant, one kernel at a time, on
// a physical context (an SM partition, physical_contexts.hpp) that a RemapPolicy sizes.
//
// Cooperative migration: when the policy moves a context to another partition, the runtime stops
// feeding it, lets its in-flight kernel end, waits CoGpuOptions::remap_cost (draining the stream
// and waiting on an event in the new one), configures the stream to the new SMs and resumes. A
// context only takes SMs no other context holds: a context that grows into SMs another still
// runs a kernel on waits for that kernel to end, so SM masks of different contexts never overlap.
// If the in-flight kernel is persistent (workload::Kernel::checkpoints > 0) and the device has
// Capabilities::kernel_preemption, the runtime asks it to yield at its next checkpoint (CoGPU's
// resident control kernel raising a flag) instead of waiting for its end; its rest then runs on
// the new partition, and the device's save at the checkpoint is the cost of that move.
//
// The policy is re-evaluated on every submission and kernel completion, and at the time its last
// answer names (RemapTargets::revisit_at); CoGpuOptions::remap_min_residency keeps a
// latency-critical partition from shrinking right after it changed.
//
// Runs. On a device that can end a submission early (Capabilities::early_end), a context is fed
// every kernel of a submission but its last as one span, and the last alone. Between two kernels
// of a run, no input of the policy changes but the clock, and the clock matters only where a
// latency-critical partition's residency ends: a run is ended at its next kernel boundary
// (GpuDevice::end_after_head) whenever its context must move, and every run is ended when a
// residency ends while its tenant is busy, so the policy still decides at the first kernel
// boundary after it. The decisions, and so the outputs, are the ones of feeding kernel by kernel,
// with one device submission per run instead of per kernel. A kernel with checkpoints goes alone,
// so a yield is asked of the kernel the runtime knows is running.

#include <memory>
#include <optional>
#include <vector>

#include "tessera/gpu/modes/cogpu/cogpu_options.hpp"
#include "tessera/gpu/modes/tenant_table.hpp"
#include "tessera/gpu/modes/virtual_context.hpp"
#include "tessera/gpu/policy/physical_contexts.hpp"
#include "tessera/gpu/policy/remap_policy.hpp"
#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

class CoGpuMode final : public SharingMode, private device::DeviceObserver {
 public:
  CoGpuMode(const CoGpuOptions& options, std::unique_ptr<RemapPolicy> policy);
  ~CoGpuMode() override;
  CoGpuMode(const CoGpuMode&) = delete;
  CoGpuMode& operator=(const CoGpuMode&) = delete;

  std::string_view name() const override { return policy_->name(); }
  // Needs Capabilities::sm_partitions, a GPU whose green-context granularity describes partitions
  // (PartitionGrid::of) and room for a minimum partition per tenant.
  core::Status attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) override;
  core::Status submit(TenantId tenant, workload::KernelSequencePtr sequence, std::uint64_t tag,
                      device::DoneCallback done) override;
  // Partitions move at run time and all share the device's bandwidth, so this is one entry for
  // the whole device, as for mps; counters() reports each tenant's mean partition.
  std::vector<PartitionInfo> partitions() const override;
  // remaps, preemptions, remap_wait_ms (time contexts had a kernel ready that a remap held back:
  // draining others, waiting for SMs, paying remap_cost), and per tenant
  // "mean_partition_sms[name]" (time-weighted).
  std::vector<ModeCounter> counters() const override;
  const CoGpuOptions& options() const { return options_; }

  // The SMs tenant `index` (attach order) holds now; for tests and reports.
  device::SmMask held_sms(std::size_t index) const { return contexts_[index].owned; }

 private:
  enum class State {
    kRunning,    // on its target partition; fed a kernel at a time
    kDraining,   // target changed: not fed; its in-flight kernel (if any) is ending or yielding
    kWaiting,    // drained, holds no SMs, waits until its target's SMs are free
    kRemapping,  // holds its target, paying remap_cost before the stream moves there
  };
  struct Context {
    VirtualContext vc;
    device::StreamId stream = 0;
    device::SmMask mask;    // the stream's configuration: where its kernels run
    device::SmMask target;  // where the policy wants it
    device::SmMask owned;   // SMs it holds; pairwise disjoint between contexts
    State state = State::kRunning;
    bool in_flight = false;
    bool in_run = false;     // the piece in flight is a run
    bool run_ended = false;  // and the device was asked to end it early
    int in_flight_checkpoints = 0;
    bool yield_requested = false;
    device::SmMask yield_to;  // the stream's configuration while a yield is pending
    std::optional<device::TimerId> remap_timer;
    // Since when it has a kernel ready that a remap keeps from launching (-1: not blocked).
    core::Nanos blocked_since = -1;
    core::Nanos last_change = 0;
    PhaseObservation prefill;
    PhaseObservation decode;
    bool decoding = false;             // its latest step had requests mid-generation
    core::Nanos last_decode_end = -1;  // while decoding: when its last decode step ended
    double sm_ns = 0;                  // integral of owned SMs over time
    core::Nanos sm_since = 0;
  };

  const RemapSnapshot& snapshot();
  void decide();
  void retarget(std::size_t i, const device::SmMask& target);
  void pump();
  bool step(std::size_t i);
  bool free_for(std::size_t i, const device::SmMask& sms) const;
  void set_owned(Context& c, const device::SmMask& sms);
  void launch(std::size_t i);
  void try_yield(std::size_t i);
  void finish_remap(std::size_t i);
  void moved(Context& c, const device::SmMask& to);
  void on_piece_done(std::size_t i, const device::SubmissionDone& done);
  void on_kernel_complete(const device::KernelEvent& event) override;
  void schedule_residency_check();
  // Ends context i's run at its next kernel boundary, if one is in flight.
  void end_run(std::size_t i);
  void end_runs();
  void schedule_boundary();
  device::StreamConfig config_for(std::size_t i, const device::SmMask& sms) const;
  void fail(core::Error error);

  CoGpuOptions options_;
  std::unique_ptr<RemapPolicy> policy_;
  device::GpuDevice* device_ = nullptr;
  // device.executor(), which outlives the device: the timers live there.
  device::Executor* executor_ = nullptr;
  TenantTable tenants_;
  PartitionGrid grid_;
  std::vector<std::size_t> layout_order_;  // latency-critical first, so partitions move little
  std::vector<Context> contexts_;          // attach order
  RemapSnapshot snapshot_;                 // reused by every decision
  std::vector<int> last_targets_;          // the policy's last answer, attach order
  core::Nanos attached_at_ = 0;
  int busy_ = 0;  // inside a completion: submissions wait for its pump
  std::optional<device::TimerId> residency_timer_;  // also the policy's revisit_at
  core::Nanos residency_check_at_ = core::kNever;
  // When a busy latency-critical tenant's residency ends: runs end there (see Runs above).
  std::optional<device::TimerId> boundary_timer_;
  core::Nanos boundary_at_ = core::kNever;
  bool runs_ = false;  // the device has Capabilities::early_end
  // A launch since the last decision changed what the policy sees (see Runs above).
  bool inputs_changed_ = false;
  core::Nanos revisit_at_ = core::kNever;  // the policy's last RemapTargets::revisit_at
  std::optional<core::Error> failure_;
  std::int64_t remaps_ = 0;
  std::int64_t preemptions_ = 0;
  core::Nanos remap_wait_ = 0;
};

}  // namespace tessera::gpu
