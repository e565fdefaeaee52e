#pragma once
// The determinism invariant: under every policy, every kernel a tenant
// submitted runs with the launch configuration and the block-to-work mapping it was submitted
// with, in submission order. DeterminismChecker compares what a device reports (KernelEvents)
// with what tenants submitted; CheckedMode wraps any SharingMode so that every run is checked.
// Device-agnostic: it sees only the device interface, so it checks the simulator and a real GPU
// alike.
//
// Contract with sharing modes: the streams a mode runs tenant i's kernels on carry device context
// context_for(i) (tenant_table.hpp), with i the tenant's position in the attach order. Contexts
// are per device: with a GPU per tenant (exclusive), each GPU has its own checker.

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/gpu/sharing_mode.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::gpu {

// Checks, per context, against the submitted sequences in order (a cursor walks groups and
// repeats; a training iteration is never flattened into memory):
//  - each completed launch is the expected kernel with the same launch configuration (name,
//    blocks, block threads / registers / shared memory, flops and bytes per block, pipe,
//    block_independent);
//  - its block ranges tile [0, blocks) exactly once across launches (atoms may complete out of
//    order); a kernel that is not block-independent runs as one range covering the grid;
//  - a yielded launch (KernelEvent::yielded) covers nothing and must be followed by the rest of
//    the same kernel;
//  - no launch of kernel i+1 starts before every launch of kernel i has ended;
//  - events for contexts nothing was submitted to are violations.
// The first violation is kept (Domain::kGpu, Code::kInternal) naming the tenant context, the
// kernel's position and what differed; checking stops there.
class DeterminismChecker final : public device::DeviceObserver {
 public:
  // A submission a tenant made, in order, with the device context its kernels run under (the
  // mode's context_for(index)). Call from a wrapper around SharingMode::submit. Returns the
  // submission's number within its context, for on_done.
  std::int64_t on_submit(device::ContextId context, const workload::KernelSequencePtr& sequence);
  // The mode reported submission `number` of `context` done. Checked in finish(): a device may
  // run the done callback before it reports the submission's last kernel to observers.
  void on_done(device::ContextId context, std::int64_t number);
  // End of run: a submission reported done must have run every block of every kernel (a policy
  // that skips a range of the last kernel is caught here). Returns the first violation, if any.
  const std::optional<core::Error>& finish();
  // Takes back the latest submission to `context`: the mode rejected it, so none of it will run.
  void forget_last(device::ContextId context);
  // Names the tenant behind `context` in violation messages (optional).
  void name_context(device::ContextId context, std::string name);
  void on_kernel_complete(const device::KernelEvent& event) override;
  void on_kernels_complete(std::span<const device::KernelEvent> events) override;

  // The first violation seen, or none.
  const std::optional<core::Error>& violation() const { return violation_; }
  // Kernels whose every block was seen to run, correctly.
  std::int64_t kernels_checked() const { return kernels_checked_; }

 private:
  // Where a context stands in its submissions, and what has run of the current kernel.
  struct ContextState {
    std::string name;                                 // the tenant, when named
    std::deque<workload::KernelSequencePtr> pending;  // front: the sequence now running
    std::int64_t submission = 0;     // sequences of this context that ran to their end
    std::int64_t submitted = 0;      // sequences recorded (including the ones that ran)
    std::int64_t reported_done = 0;  // 1 + the highest submission number reported done
    std::size_t group = 0;
    int repeat = 0;
    std::size_t kernel = 0;
    // The kernel the cursor is at, once expected() has found it; null until then.
    const workload::Kernel* current = nullptr;
    const workload::KernelGroup* current_group = nullptr;  // the group `current` is in
    std::int64_t position = 0;                     // kernel index within the current sequence
    std::map<std::int64_t, std::int64_t> covered;  // begin -> end of the ranges run so far
    std::int64_t covered_blocks = 0;
    bool yielded = false;  // a launch of the current kernel yielded
    core::Nanos previous_end = std::numeric_limits<core::Nanos>::min();  // of kernel i - 1
    core::Nanos current_end = std::numeric_limits<core::Nanos>::min();   // of kernel i so far
  };

  static const workload::Kernel* expected(ContextState& state);
  void check(device::ContextId context, ContextState& state, const device::KernelEvent& e);
  void check_in_detail(device::ContextId context, ContextState& state,
                       const device::KernelEvent& e);
  // The current kernel has run all its blocks: the cursor moves to the next.
  void complete(ContextState& state);
  // The same for a kernel that ran whole in one launch ending at `end`, with nothing of it
  // recorded before.
  void complete_whole(ContextState& state, core::Nanos end);
  void next_kernel(ContextState& state);
  void fail(device::ContextId context, const ContextState& state, std::string what);

  std::map<device::ContextId, ContextState> contexts_;
  // The context of the latest event: a device reports a stream's kernels in runs. Map nodes
  // never move, so the pointer stays valid.
  device::ContextId last_context_{};
  ContextState* last_state_ = nullptr;
  std::optional<core::Error> violation_;
  std::int64_t kernels_checked_ = 0;
};

// A SharingMode decorator: forwards everything to `inner`, records each submission into its
// checker under the tenant's context (context_for of its attach position) and registers the
// checker as an observer of the device at attach time.
class CheckedMode final : public SharingMode {
 public:
  explicit CheckedMode(std::unique_ptr<SharingMode> inner);

  std::string_view name() const override { return inner_->name(); }
  core::Status attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) override;
  core::Status submit(TenantId tenant, workload::KernelSequencePtr sequence, std::uint64_t tag,
                      device::DoneCallback done) override;
  std::vector<PartitionInfo> partitions() const override { return inner_->partitions(); }
  std::vector<ModeCounter> counters() const override { return inner_->counters(); }

  const DeterminismChecker& checker() const { return checker_; }
  // Ends the check (DeterminismChecker::finish) and returns its violation as a Status, with the
  // mode's name in the message. Call once the run is over.
  core::Status verdict();
  const SharingMode& inner() const { return *inner_; }

 private:
  std::unique_ptr<SharingMode> inner_;
  DeterminismChecker checker_;
  std::vector<std::pair<TenantId, device::ContextId>> contexts_;  // attach order
};

}  // namespace tessera::gpu
