#pragma once
// The simulated GPU: a device::GpuDevice in the engine's virtual time.
//
// The model, first-order (assumptions are named in SimGpuOptions and beside the code):
// - Occupancy fixes blocks per SM (device/occupancy.hpp); every kernel of a submission is checked
//   against the GPU's limits before any of it is queued.
// - SMs (SimGpuOptions::co_residency off): one kernel holds an SM at a time. A kernel takes
//   min(one SM per unfinished block, free SMs in its stream's set, the stream's cap): like the
//   hardware block scheduler, it spreads a grid across SMs before stacking blocks on one. A
//   running kernel can use more SMs while its unfinished blocks outnumber the SMs it holds.
//   Kernels that find no free SM in their set wait in FIFO order of becoming ready. When SMs
//   free up, running kernels that could use more grow first, earliest launched first (the
//   hardware dispatches an earlier kernel's remaining blocks before a later kernel's), then
//   waiting kernels start, oldest first. Stream priorities (StreamConfig::priority) order this
//   by level, highest first: a waiting kernel of a higher-priority stream places blocks before a
//   lower-priority kernel grows or starts.
// - Co-residency (SimGpuOptions::co_residency, sim_gpu_residency.cpp): a kernel that finds too
//   few free SMs places blocks on SMs that hold other kernels' blocks while the SM's thread,
//   register, shared-memory and block-slot budgets allow (free SMs first, then the lowest-numbered
//   with room). Each kernel holds the same number of resident blocks on every SM it holds
//   (aggregated: no per-block events). Co-resident kernels on one pipe share it max-min fairly by
//   their compute demand, and a kernel progresses at the smaller of its pipe and DRAM grants. A
//   kernel whose last wave fills only some of its SMs gives the others back when that wave
//   starts, keeping one block on each SM it still holds.
// - Time per kernel (kernel_timing.hpp): launch overhead + max(compute with wave quantization at
//   the current clock, DRAM time), stretched when its bandwidth domain is over-subscribed
//   (bandwidth.hpp: max-min fair shares; a kernel granted a fraction s of its demand progresses
//   at rate s). Domains never interfere with each other.
// - Progress is fluid: at every change (start, end, growth, clock, suspend/resume, contention)
//   the affected kernels' progress is brought up to date, their rates recomputed and their
//   completion events moved. When a running kernel's SM count changes, its unfinished blocks
//   (part-run blocks counted by what is left) are re-planned over the new SMs with the same
//   formula.
// - Power: idle + (TDP - idle) x (w_c x compute activity x (f / f_boost)^3 + (1 - w_c) x memory
//   activity), integrated exactly (it is piecewise constant between events). Compute activity
//   is the fraction of SMs held, each weighted by the fraction of its time its kernel computes;
//   memory activity is the bandwidth in use over the achievable device bandwidth.
//
// - Block ranges (submit_range, LithOS's atoms): a launch of blocks [b, e) of a block-independent
//   kernel is timed as the kernel with e - b blocks (same per-block cost and resources), plus
//   SimGpuOptions::atom_launch_overhead on top of the launch overhead.
// - Yields (request_yield, CoGPU's preemption of persistent kernels): a kernel with c checkpoints
//   can stop at fractions j / (c + 1) of its work. Asked to yield, it runs on to the next one,
//   holds its SMs for SimGpuOptions::yield_save_cost more (phase kSaving: no progress, no DRAM
//   traffic), gives them back and reports a yielded event. The rest of its work stays at the head
//   of its stream: the same grid launched again, every block with (c + 1 - j) / (c + 1) of its
//   cost left, under the stream's configuration at that time and paying the launch overhead
//   again. A pending request
//   survives context suspension (the kernel stops at its checkpoint after resume); a kernel that
//   is saving when its context is suspended finishes saving, and its rest then waits for resume.
//
// Delivery: observers and done callbacks run at the end of the operation that produced them, in
// order, once the device's state is consistent; they may submit work or reconfigure the device.
// With SimGpuOptions::batch_isolated_kernels, kernels timed in one go report their events when
// their run of kernels ends or is split, with their true start and end times; per stream the
// events are identical to the per-kernel path's. KernelEvent::kernel points into the submitted
// sequence and is valid only during the notification.

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/kernel_timing.hpp"
#include "tessera/backends/sim/gpu/sim_gpu_options.hpp"
#include "tessera/backends/sim/gpu/sm_set.hpp"
#include "tessera/core/error.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::sim {

class SimGpu final : public device::GpuDevice {
 public:
  // An invalid spec or options (see validate_model) gives a device whose every call returns the
  // validation error; create() returns that error up front instead.
  SimGpu(Engine& engine, hw::GpuSpec spec, SimGpuOptions options = {});
  static core::Result<std::unique_ptr<SimGpu>> create(Engine& engine, hw::GpuSpec spec,
                                                      SimGpuOptions options = {});
  ~SimGpu() override;
  SimGpu(const SimGpu&) = delete;
  SimGpu& operator=(const SimGpu&) = delete;

  const hw::GpuSpec& spec() const override { return spec_; }
  device::Capabilities capabilities() const override;
  device::Executor& executor() override { return engine_; }

  core::Result<device::DomainId> create_bandwidth_domain(double share) override;
  core::Result<device::StreamId> create_stream(const device::StreamConfig& config) override;
  core::Status configure_stream(device::StreamId stream,
                                const device::StreamConfig& config) override;
  core::Status submit(device::StreamId stream, workload::KernelSequencePtr sequence,
                      std::uint64_t tag, device::DoneCallback done) override;
  core::Status submit_range(device::StreamId stream, workload::KernelSequencePtr sequence,
                            device::BlockRange range, std::uint64_t tag,
                            device::DoneCallback done) override;
  core::Status submit_span(device::StreamId stream, workload::KernelSequencePtr sequence,
                           device::KernelSpan span, std::uint64_t tag,
                           device::DoneCallback done) override;
  core::Status end_after_head(device::StreamId stream) override;
  core::Status request_yield(device::StreamId stream) override;

  core::Status suspend_context(device::ContextId context) override;
  core::Status resume_context(device::ContextId context) override;

  core::Status set_clock_mhz(double mhz) override;
  double clock_mhz() const override { return clock_mhz_; }

  void add_observer(device::DeviceObserver* observer) override;
  device::DeviceStats stats() const override;

 private:
  // A position in a kernel sequence: group, repetition of the group, kernel within it.
  using Cursor = workload::SequenceCursor;

  // Kernels of a submission that runs its sequence to the end.
  static constexpr std::int64_t kToTheEnd = INT64_MAX;

  struct Submission {
    workload::KernelSequencePtr sequence;
    device::BlockRange range{};  // of its only kernel (submit_range); empty: whole kernels
    Cursor from{};               // its first kernel, when count is not kToTheEnd (submit_span)
    std::int64_t count = kToTheEnd;
    std::uint64_t tag = 0;
    device::DoneCallback done;
    core::Nanos submitted = 0;
    core::Nanos started = -1;
  };

  enum class Phase : std::uint8_t {
    kIdle,       // no kernel
    kLaunching,  // the host has not launched it yet (SimGpuOptions::host_launch, graph_launch)
    kWaiting,    // ready, in waiting_, holds no SM
    kRunning,    // holds SMs, has a completion event
    kSuspended,  // its context is suspended; holds no SM, keeps its progress
    kBatched,    // the stream runs a batch of kernels timed in one go (batch.cpp)
    kSaving,     // stopped at a checkpoint, holds its SMs while it saves its state (yield)
  };

  // A stream's current kernel (a stream runs one kernel at a time).
  struct Launch {
    const workload::Kernel* kernel = nullptr;
    Phase phase = Phase::kIdle;
    bool launched = false;  // has held SMs; from then on its configuration is fixed
    // Fixed at launch, from the stream's configuration then.
    SmSet allowed;
    int cap = 0;
    device::DomainId domain = 0;
    std::uint32_t context = 0;  // index into contexts_
    KernelShape shape;
    core::Nanos start = 0;
    int sms_at_start = 0;
    std::uint64_t order = 0;  // launch order: growth priority
    int priority = 0;         // the stream's dispatch priority
    std::uint64_t ready_seq = 0;
    // Placement and progress.
    SmSet held;
    Plan plan;
    PlanRates rates;
    double share = 1;       // fraction of its bandwidth demand granted
    double left = 1;        // fraction of the plan not yet done
    core::Nanos since = 0;  // progress and energy are accounted up to here
    device::TimerId timer = 0;
    bool reschedule = false;
    // A pending yield: the kernel stops when its unfinished blocks fall to this (< 0: none).
    double yield_blocks = -1;
    int yield_checkpoint = 0;
    // Co-residency (SimGpuOptions::co_residency).
    int resident = 0;       // its blocks resident on each SM it holds
    int held_sms = 0;       // held.count()
    double pipe_ratio = 1;  // granted over demanded on its pipe, averaged over its SMs
    double sm_weight = 1;   // share of its SMs' time counted as its own (for SM-busy)
    bool shared = false;    // another kernel has blocks on one of its SMs
    double tail_left = -1;  // fraction of the plan left when its last wave starts; < 0: none
    int tail_sms = 0;       // SMs its last wave fills
    bool in_tail = false;
    device::TimerId tail_timer = 0;
  };

  // Where a plan starts its last wave, when that wave leaves SMs idle: the fraction of the plan
  // left then and the SMs the wave fills (left < 0: none).
  struct Tail {
    double left = -1;
    int sms = 0;
  };

  // What the scheduler knows of one distinct kernel of a stream's current submission: its shape,
  // and the last fresh plan drawn for it with the inputs that fix it (SMs, domain bandwidth,
  // clock). Repeated layers and resubmitted iterations launch the same kernel on the same inputs
  // again and again; the plan is then reused, bit for bit the one a new computation would give.
  struct KernelInfo {
    KernelShape shape;
    double blocks = 0;       // blocks a launch runs: the grid, or the submitted range
    double overhead_ns = 0;  // per launch
    int sms_wanted = 0;      // for those blocks
    int occupancy = 0;       // blocks per SM on an empty SM
    int plan_sms = 0;        // 0: no plan yet
    double plan_capacity = 0;
    double plan_clock_ratio = 0;
    Plan plan;
    PlanRates rates;
    core::Nanos duration = 0;  // uncontended, whole nanoseconds
    Tail tail;                 // of the plan
    core::Nanos to_tail = -1;  // uncontended, from launch to the last wave (< 0: none)
  };

  // One kernel of a batch, timed when the batch was made.
  struct BatchItem {
    const workload::Kernel* kernel;
    Cursor cursor;
    core::Nanos start;
    core::Nanos end;
    int sms;
    double compute_share;
    double demand;
    core::Nanos tail = -1;  // when its last wave leaves SMs idle (< 0: never)
    int tail_sms = 0;       // SMs it holds from then on
    core::Nanos launched;   // when the host had launched it
    std::int64_t left;      // Stream::left while it is the stream's kernel
  };

  struct Stream {
    device::StreamConfig config;
    SmSet allowed;              // config.sms, or every SM when it is empty
    std::uint32_t context = 0;  // index into contexts_
    std::deque<Submission> queue;
    Cursor cursor;  // the current kernel within queue.front()
    // Kernels of queue.front() from the cursor's on, and those it has run to their end.
    std::int64_t left = 0;
    std::int64_t ran = 0;
    // queue.front()'s distinct kernels, group after group (repeats share an entry).
    std::vector<KernelInfo> kernels;
    std::vector<std::uint32_t> group_first;  // index in kernels of each group's first kernel
    // Sequences are immutable, and tenants resubmit the same one (a training iteration): the
    // last sequence checked, and the one `kernels` describes, are remembered (and kept alive, so
    // their addresses cannot be reused) to skip redoing either.
    workload::KernelSequencePtr validated;
    workload::KernelSequencePtr described;
    device::BlockRange described_range;
    Launch cur;
    // The host thread launching the stream's kernels: when the current submission's launches
    // began, the CPU time of each, and when it has launched the last kernel so far.
    core::Nanos host_start = 0;
    core::Nanos host_step = 0;
    core::Nanos host_free = 0;
    // Checkpoints the current kernel has stopped at (yields): after j of c, its next launch runs
    // the same grid with (c + 1 - j) / (c + 1) of each block's work left.
    int checkpoints_passed = 0;
    std::vector<BatchItem> batch;
    Cursor batch_next;  // where the stream continues after the batch
    // Kernels the next batch may time: doubles after a batch that ran to its end, drops back
    // after a split, so batches that are split at once waste little work.
    int batch_limit = 0;
    bool batch_ends_submission = false;
    device::TimerId batch_timer = 0;
  };

  struct BandwidthDomain {
    double share = 0;                    // of the device's bandwidth
    double capacity = 0;                 // bytes per ns
    std::vector<std::uint32_t> members;  // streams with a running kernel in the domain
    bool dirty = false;
  };

  struct Context {
    device::ContextId id;
    bool suspended = false;
  };

  // Integrals over time behind stats(); energy is derived from them.
  struct Integrals {
    double sm_ns = 0;    // SM-ns held
    double compute = 0;  // SM-ns held x compute share x granted share x (f / f_boost)^3
    double bytes = 0;    // DRAM bytes moved
    std::int64_t kernels = 0;
  };

  // Callbacks owed to the outside, delivered in order at the end of the current operation:
  // kernel events (events_) and submission ends, each after the events queued before it.
  struct DoneNotice {
    device::SubmissionDone done;
    device::DoneCallback callback;
    workload::KernelSequencePtr keep_alive;  // the kernels the events before it point into
    std::size_t events_before = 0;           // events_.size() when it was queued
  };

  // --- Structure (sim_gpu.cpp) ---
  core::Status usable() const;
  core::Status check_stream(device::StreamId stream) const;
  core::Status enqueue(device::StreamId stream, Submission submission);
  core::Result<SmSet> resolve_sms(const device::StreamConfig& config) const;
  core::Status check_config(const device::StreamConfig& config) const;
  std::uint32_t context_index(device::ContextId id);
  std::optional<std::uint32_t> find_context(device::ContextId id) const;

  // --- Operations: every entry point brackets its work with these ---
  void begin_op() { ++depth_; }
  void end_op();
  void settle();
  void flush();

  // --- The block scheduler (scheduler.cpp) ---
  // (Inline: these run for every kernel, from both the scheduler and the batcher.)
  static Cursor first_cursor(const workload::KernelSequence& seq) { return Cursor::first(seq); }
  static bool advance(const workload::KernelSequence& seq, Cursor& c) { return c.advance(seq); }
  static const workload::Kernel& kernel_at(const workload::KernelSequence& seq, const Cursor& c) {
    return c.kernel(seq);
  }
  // The stream's current kernel ran to its end: the cursor moves to its next one. False when the
  // submission has no kernel left.
  static bool next_kernel(Stream& st) {
    ++st.ran;
    return --st.left > 0 && advance(*st.queue.front().sequence, st.cursor);
  }
  static KernelInfo& info_at(Stream& st, const Cursor& c) {
    return st.kernels[st.group_first[c.group] + c.index];
  }
  // `info`'s fresh plan on `sms` SMs in the current domain and clock, made or reused.
  const KernelInfo& fresh_plan(KernelInfo& info, int sms, double capacity) {
    if (info.plan_sms != sms || info.plan_capacity != capacity ||
        info.plan_clock_ratio != clock_ratio_) {
      redraw_fresh_plan(info, sms, capacity);
    }
    return info;
  }
  void redraw_fresh_plan(KernelInfo& info, int sms, double capacity);
  void begin_submission(std::uint32_t s);
  // The stream's kernel at its cursor, fresh, becomes ready once the host has launched it (a
  // `relaunch`, the rest of a yielded kernel, is launched from now on).
  void make_ready(std::uint32_t s, bool relaunch = false);
  // It joins the waiting kernels (or the suspended ones).
  void enter_ready(std::uint32_t s);
  void on_launched(std::uint32_t s);
  void continue_stream(std::uint32_t s, bool submission_ended);
  void dispatch();
  // One pass of dispatch() over the kernels of `level` only (all of them when none): growth of
  // running kernels, then waiting kernels. False once no SM can take another block.
  bool dispatch_level(std::optional<int> level);
  // Dispatch priorities of the running and waiting kernels, highest first (priority_scratch_).
  void priority_levels();
  // A waiting kernel's priority: the one it launched with, else its stream's now.
  static int waiting_priority(const Stream& st) {
    return st.cur.launched ? st.cur.priority : st.config.priority;
  }
  bool launch(std::uint32_t s, const SmSet& allowed);
  void grow(std::uint32_t s);
  // Brings a kernel's progress and the integrals up to now. (Inline: several times per kernel,
  // most of them finding the kernel already up to date.)
  void sync(Launch& launch) {
    if (launch.since < engine_.now()) sync_until(launch, engine_.now());
  }
  void sync_until(Launch& launch, core::Nanos t);
  void retire(std::uint32_t s);
  void add_running(std::uint32_t s);
  void mark_dirty(device::DomainId d);
  void flag_reschedule(std::uint32_t s);
  void reschedule(std::uint32_t s);
  void on_kernel_done(std::uint32_t s);
  // (Inline: runs for every kernel; the event itself is built only when someone observes.)
  void push_kernel_event(std::uint32_t s, const workload::Kernel* kernel, core::Nanos start,
                         core::Nanos end, int sms, bool yielded = false) {
    // A yielded launch is part of a kernel, which counts once, when it completes.
    if (!yielded) ++integrals_.kernels;
    if (!observers_.empty()) queue_kernel_event(s, kernel, start, end, sms, yielded);
  }
  void queue_kernel_event(std::uint32_t s, const workload::Kernel* kernel, core::Nanos start,
                          core::Nanos end, int sms, bool yielded);
  void leave_running(std::uint32_t s);
  void start_yield(std::uint32_t s);
  void on_checkpoint(std::uint32_t s);
  void on_saved(std::uint32_t s);
  double fraction_left_now(const Launch& launch) const;

  // --- Co-residency (residency.cpp) ---
  // Up to `n` SMs of `allowed` with room for a block of stream `s`'s current kernel: free SMs
  // first, lowest-numbered; with co-residency, then SMs holding other kernels' blocks. `fit`
  // becomes the fewest of its blocks one of them takes.
  // Running kernels hold SMs, and so does one saving its state at a checkpoint.
  static bool holds_sms(Phase p) { return p == Phase::kRunning || p == Phase::kSaving; }
  SmSet take_room(std::uint32_t s, const SmSet& allowed, int n, int& fit);
  // Splits `within` into parts whose SMs hold blocks of the same other kernels (part_scratch_),
  // and lists the streams other than `skip` with blocks there (holder_scratch_).
  // With `in_sm_order`, parts come lowest-numbered first.
  static constexpr std::uint32_t kNoStream = ~std::uint32_t{0};
  void partition(const SmSet& within, std::uint32_t skip, bool in_sm_order);
  SmSet held_by_others(std::uint32_t s) const;
  // Gives back SMs stream `s` no longer holds; those no other kernel holds become free.
  void release(std::uint32_t s, const SmSet& sms);
  // Recomputes every running kernel's pipe grant and SM weight (settle(), when pipes_dirty_).
  void share_pipes();
  // Adds to granted_scratch_ and own_scratch_ what the kernels of `on_part` get on `part`, SMs
  // that hold blocks of exactly those kernels.
  void share_part(const SmSet& part, std::span<const std::uint32_t> on_part);
  // share_pipes() when exactly two kernels hold SMs: the SMs they share are `both`.
  void share_pair(const std::array<std::uint32_t, 2>& pair, const SmSet& both);
  // A running kernel's pipe grant and SM weight; a change is synced and its domain re-shared.
  void set_pipe_share(Launch& l, bool shared, double ratio, double weight);
  Tail tail_of(const Plan& plan) const;
  void set_tail(Launch& l, const Tail& tail) const;
  void set_tail(Launch& l) const { set_tail(l, tail_of(l.plan)); }
  void cancel_tail(Launch& l);
  void on_tail(std::uint32_t s);
  // Drops the SMs stream `s`'s kernel leaves idle in its last wave (progress synced to then).
  void enter_tail(std::uint32_t s);

  // --- Exact batching of an isolated stream's kernels (batch.cpp) ---
  // The batch item in flight at `now`: the first that ends at or after it (kernels that ended
  // before are done).
  static std::size_t in_flight(const Stream& st, core::Nanos now) {
    std::size_t j = 0;
    while (j + 1 < st.batch.size() && st.batch[j].end < now) ++j;
    return j;
  }
  bool conflicts(std::uint32_t a, std::uint32_t b) const;
  bool isolated(std::uint32_t s) const;
  void start_batch(std::uint32_t s);
  void split_batch(std::uint32_t s);
  void split_conflicting(std::uint32_t s);
  void on_batch_done(std::uint32_t s);
  // SM-nanoseconds an item has kept busy by `until`.
  static double busy_sm_ns(const BatchItem& item, core::Nanos until);
  // Adds a run of batched kernels that ended to the integrals and the events owed to observers.
  void account_items(std::uint32_t s, std::span<const BatchItem> items);

  Engine& engine_;
  hw::GpuSpec spec_;
  SimGpuOptions options_;
  std::optional<core::Error> invalid_;
  TimingModel timing_;
  core::Nanos created_;

  double clock_mhz_;
  double clock_ratio_ = 1;  // clock / boost clock
  double clock_cube_ = 1;

  std::vector<Stream> streams_;
  std::vector<BandwidthDomain> domains_;
  std::vector<Context> contexts_;
  std::vector<device::DeviceObserver*> observers_;

  SmSet free_;
  std::vector<std::uint32_t> running_;  // streams with a running kernel, in launch order
  std::vector<std::uint32_t> waiting_;  // streams with a waiting kernel, in ready order
  std::vector<std::uint32_t> batched_;  // streams running a batch
  std::vector<device::DomainId> dirty_domains_;
  std::vector<std::uint32_t> to_reschedule_;
  std::uint64_t next_order_ = 1;
  std::uint64_t next_ready_ = 1;
  bool dispatch_needed_ = false;
  bool priorities_used_ = false;  // a stream was ever given a priority other than 0
  bool pipes_dirty_ = false;

  Integrals integrals_;
  std::vector<device::KernelEvent> events_;
  std::vector<DoneNotice> done_notices_;
  // What flush() is delivering; callbacks meanwhile queue into events_ and done_notices_.
  std::vector<device::KernelEvent> delivering_events_;
  std::vector<DoneNotice> delivering_done_;
  int depth_ = 0;
  bool flushing_ = false;

  // Scratch reused by settle() and resume_context().
  std::vector<double> demand_scratch_;
  std::vector<double> share_scratch_;
  std::vector<std::uint32_t> stream_scratch_;
  std::vector<SmSet> part_scratch_;
  std::vector<std::uint32_t> holder_scratch_;
  std::vector<std::uint32_t> on_part_scratch_;
  std::vector<std::uint32_t> pipe_user_scratch_;
  std::vector<double> pipe_demand_scratch_;
  std::vector<double> pipe_share_scratch_;
  std::vector<double> granted_scratch_;
  std::vector<double> own_scratch_;
  std::vector<int> priority_scratch_;
};

}  // namespace tessera::sim
