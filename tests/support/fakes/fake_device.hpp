#pragma once
// A small device::GpuDevice for testing sharing modes and tenants without the simulator.
//
// Timing model (deliberately trivial, so tests can compute expected times by hand): every kernel
// runs for ceil(total FLOPs / flops_per_ns) nanoseconds, at least 1, whatever SMs or bandwidth it
// is given, and streams never slow each other down; a block range (submit_range) runs for
// ceil(range size x flops_per_block / flops_per_ns). What it does model exactly is order and
// control: kernels of a stream run one at a time in submission order; a suspended context's
// running kernel stops where it is and continues from there after resume, and its queued kernels
// wait; configuration changes apply from the next kernel. A launch of duration D whose kernel has
// c checkpoints, asked to yield, stops at the next checkpoint j, after floor(j x D / (c + 1)) ns
// of its work (no save cost), and the rest runs as a new launch under the stream's configuration
// then. It records every call and every stretch of kernel execution so tests can assert what a
// mode asked for and what ran when, and reports every launch to observers as a KernelEvent.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "support/test_gpu.hpp"
#include "tessera/core/error.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::test {

// A GPU of `sms` SMs in TPCs of `sms_per_tpc`; the fake's timing uses none of its other fields.
inline hw::GpuSpec fake_spec(int sms = 16, int sms_per_tpc = 2) {
  return TestGpu().name("fake-gpu").sms(sms).sms_per_tpc(sms_per_tpc).build();
}

inline device::Capabilities all_capabilities() {
  return {.sm_partitions = true,
          .sm_limit = true,
          .bandwidth_partitions = true,
          .context_preemption = true,
          .clock_control = true,
          .block_ranges = true,
          .kernel_preemption = true,
          .stream_priorities = false};
}

// One group of single-block kernels with the given FLOPs each, repeated `repeat` times.
inline workload::KernelSequencePtr sequence_of(std::initializer_list<double> flops,
                                               int repeat = 1) {
  workload::KernelSequence seq;
  workload::KernelGroup group;
  group.repeat = repeat;
  for (double f : flops) {
    workload::Kernel k;
    k.name = "fake";
    k.blocks = 1;
    k.flops_per_block = f;
    group.kernels.push_back(k);
  }
  seq.groups.push_back(std::move(group));
  return std::make_shared<const workload::KernelSequence>(std::move(seq));
}

enum class CallKind {
  kCreateDomain,
  kCreateStream,
  kConfigure,
  kSubmit,
  kSubmitRange,
  kRequestYield,
  kSuspend,
  kResume,
  kSetClock
};

struct FakeCall {
  CallKind kind;
  core::Nanos at;
  device::StreamId stream = 0;
  device::ContextId context = 0;
  device::StreamConfig config{};
  double value = 0;  // bandwidth share or clock
  std::uint64_t tag = 0;
  device::BlockRange range{};  // submit_range
};

// One uninterrupted stretch of one kernel; a suspended or yielded kernel leaves one run per
// stretch.
struct KernelRun {
  device::StreamId stream;
  device::ContextId context;
  device::StreamConfig config;  // as it was when the launch started
  std::uint64_t tag;
  core::Nanos start;
  core::Nanos end;
  bool completed;  // the kernel's last stretch
  bool yielded;    // the stretch ended at a checkpoint on request
  device::BlockRange blocks;
};

class FakeDevice final : public device::GpuDevice {
 public:
  FakeDevice(device::Executor& executor, hw::GpuSpec spec,
             device::Capabilities caps = all_capabilities(), double flops_per_ns = 1.0)
      : executor_(executor),
        spec_(std::move(spec)),
        caps_(caps),
        flops_per_ns_(flops_per_ns),
        clock_mhz_(spec_.boost_clock_mhz) {}
  FakeDevice(const FakeDevice&) = delete;
  FakeDevice& operator=(const FakeDevice&) = delete;
  ~FakeDevice() override {
    for (auto& s : streams_) {
      if (s.timer) executor_.cancel(*s.timer);
    }
  }

  core::Nanos kernel_duration(const workload::Kernel& k) const {
    return range_duration(k, {.begin = 0, .end = k.blocks});
  }
  core::Nanos range_duration(const workload::Kernel& k, device::BlockRange range) const {
    const double ns =
        std::ceil(static_cast<double>(range.size()) * k.flops_per_block / flops_per_ns_);
    return std::max<core::Nanos>(1, static_cast<core::Nanos>(ns));
  }
  core::Nanos sequence_duration(const workload::KernelSequence& seq) const {
    core::Nanos total = 0;
    for (const auto& g : seq.groups) {
      for (const auto& k : g.kernels) total += kernel_duration(k) * g.repeat;
    }
    return total;
  }

  const std::vector<FakeCall>& calls() const { return calls_; }
  std::vector<FakeCall> calls_of(CallKind kind) const {
    std::vector<FakeCall> out;
    for (const auto& c : calls_) {
      if (c.kind == kind) out.push_back(c);
    }
    return out;
  }
  const std::vector<KernelRun>& runs() const { return runs_; }
  const device::StreamConfig& stream_config(device::StreamId id) const {
    return streams_[id].config;
  }
  std::size_t stream_count() const { return streams_.size(); }
  const std::vector<double>& domain_shares() const { return domain_shares_; }
  bool suspended(device::ContextId c) const { return suspended_.contains(c); }

  // device::GpuDevice
  const hw::GpuSpec& spec() const override { return spec_; }
  device::Capabilities capabilities() const override { return caps_; }
  device::Executor& executor() override { return executor_; }

  core::Result<device::DomainId> create_bandwidth_domain(double share) override {
    if (!caps_.bandwidth_partitions) return unsupported("bandwidth domains");
    double used = 0;
    for (double s : domain_shares_) used += s;
    if (!(share > 0 && share <= 1) || used + share > 1 + 1e-9) {
      return core::failf(core::Domain::kDevice, core::Code::kResourceExhausted,
                         "fake device: bandwidth share {} does not fit ({} already used)", share,
                         used);
    }
    domain_shares_.push_back(share);
    calls_.push_back({.kind = CallKind::kCreateDomain, .at = executor_.now(), .value = share});
    return static_cast<device::DomainId>(domain_shares_.size());
  }

  core::Result<device::StreamId> create_stream(const device::StreamConfig& config) override {
    if (auto ok = check(config); !ok) return std::unexpected(ok.error());
    const auto id = static_cast<device::StreamId>(streams_.size());
    streams_.push_back(Stream{.config = config});
    calls_.push_back({.kind = CallKind::kCreateStream,
                      .at = executor_.now(),
                      .stream = id,
                      .context = config.context,
                      .config = config});
    return id;
  }

  core::Status configure_stream(device::StreamId stream,
                                const device::StreamConfig& config) override {
    if (stream >= streams_.size()) return unknown_stream(stream);
    if (auto ok = check(config); !ok) return ok;
    streams_[stream].config = config;
    calls_.push_back({.kind = CallKind::kConfigure,
                      .at = executor_.now(),
                      .stream = stream,
                      .context = config.context,
                      .config = config});
    return {};
  }

  core::Status submit(device::StreamId stream, workload::KernelSequencePtr sequence,
                      std::uint64_t tag, device::DoneCallback done) override {
    if (stream >= streams_.size()) return unknown_stream(stream);
    bool any = false;
    if (sequence) {
      for (const auto& g : sequence->groups) any = any || (g.repeat > 0 && !g.kernels.empty());
    }
    if (!any) {
      return core::fail(core::Domain::kDevice, core::Code::kInvalidArgument,
                        "fake device: a submission needs at least one kernel");
    }
    calls_.push_back({.kind = CallKind::kSubmit,
                      .at = executor_.now(),
                      .stream = stream,
                      .context = streams_[stream].config.context,
                      .tag = tag});
    streams_[stream].queue.push_back(Submission{.sequence = std::move(sequence),
                                                .range = {},
                                                .tag = tag,
                                                .done = std::move(done),
                                                .submitted = executor_.now()});
    start_next(stream);
    return {};
  }

  core::Status submit_range(device::StreamId stream, workload::KernelSequencePtr sequence,
                            device::BlockRange range, std::uint64_t tag,
                            device::DoneCallback done) override {
    if (!caps_.block_ranges) return unsupported("block-range launches");
    if (stream >= streams_.size()) return unknown_stream(stream);
    if (!sequence || sequence->groups.size() != 1 || sequence->groups[0].kernels.size() != 1 ||
        sequence->groups[0].repeat != 1) {
      return core::fail(core::Domain::kDevice, core::Code::kInvalidArgument,
                        "fake device: submit_range needs a sequence of exactly one kernel");
    }
    const workload::Kernel& k = sequence->groups[0].kernels[0];
    if (!k.block_independent) {
      return core::failf(core::Domain::kDevice, core::Code::kInvalidArgument,
                         "fake device: kernel '{}' synchronises across blocks and must run whole",
                         k.name);
    }
    if (range.size() <= 0 || range.begin < 0 || range.end > k.blocks) {
      return core::failf(core::Domain::kDevice, core::Code::kInvalidArgument,
                         "fake device: block range [{}, {}) is empty or outside the grid [0, {})",
                         range.begin, range.end, k.blocks);
    }
    calls_.push_back({.kind = CallKind::kSubmitRange,
                      .at = executor_.now(),
                      .stream = stream,
                      .context = streams_[stream].config.context,
                      .tag = tag,
                      .range = range});
    streams_[stream].queue.push_back(Submission{.sequence = std::move(sequence),
                                                .range = range,
                                                .tag = tag,
                                                .done = std::move(done),
                                                .submitted = executor_.now()});
    start_next(stream);
    return {};
  }

  core::Status request_yield(device::StreamId stream) override {
    if (!caps_.kernel_preemption) return unsupported("kernel preemption");
    if (stream >= streams_.size()) return unknown_stream(stream);
    auto& s = streams_[stream];
    calls_.push_back({.kind = CallKind::kRequestYield,
                      .at = executor_.now(),
                      .stream = stream,
                      .context = s.running ? s.running_config.context : s.config.context});
    if (!s.running || s.yield_left >= 0) return {};
    auto& sub = s.queue.front();
    const int c = current_kernel(sub)->checkpoints;
    if (c <= 0) return {};
    const core::Nanos total = launch_duration(sub);
    const core::Nanos left_now =
        s.paused ? s.remaining : s.remaining - (executor_.now() - s.segment_start);
    // The next checkpoint at or after the work done, past those already stopped at.
    for (int j = s.checkpoints_passed + 1; j <= c; ++j) {
      const core::Nanos at = j * total / (c + 1);
      if (at < total - left_now) continue;
      s.yield_left = total - at;
      s.yield_checkpoint = j;
      if (!s.paused) {
        executor_.cancel(*s.timer);
        s.timer =
            executor_.schedule_after(left_now - s.yield_left, [this, stream] { on_timer(stream); });
      }
      break;
    }
    return {};
  }

  core::Status suspend_context(device::ContextId context) override {
    if (!caps_.context_preemption) return unsupported("context preemption");
    calls_.push_back({.kind = CallKind::kSuspend, .at = executor_.now(), .context = context});
    if (!suspended_.insert(context).second) return {};
    for (device::StreamId id = 0; id < streams_.size(); ++id) {
      auto& s = streams_[id];
      if (!s.running || s.paused || s.running_config.context != context) continue;
      executor_.cancel(*s.timer);
      s.timer.reset();
      record_run(id, false, false);
      s.remaining -= executor_.now() - s.segment_start;
      s.paused = true;
    }
    return {};
  }

  core::Status resume_context(device::ContextId context) override {
    if (!caps_.context_preemption) return unsupported("context preemption");
    calls_.push_back({.kind = CallKind::kResume, .at = executor_.now(), .context = context});
    if (suspended_.erase(context) == 0) return {};
    for (device::StreamId id = 0; id < streams_.size(); ++id) {
      auto& s = streams_[id];
      if (s.paused && s.running_config.context == context) {
        s.paused = false;
        s.segment_start = executor_.now();
        arm(id);
      } else if (!s.running) {
        start_next(id);
      }
    }
    return {};
  }

  core::Status set_clock_mhz(double mhz) override {
    if (!caps_.clock_control) return unsupported("clock control");
    calls_.push_back({.kind = CallKind::kSetClock, .at = executor_.now(), .value = mhz});
    clock_mhz_ = mhz;
    return {};
  }
  double clock_mhz() const override { return clock_mhz_; }

  void add_observer(device::DeviceObserver* observer) override { observers_.push_back(observer); }

  device::DeviceStats stats() const override {
    device::DeviceStats st;
    st.elapsed = executor_.now();
    st.kernels_completed = kernels_completed_;
    if (st.elapsed > 0) {
      st.sm_busy_fraction =
          sm_time_ / (static_cast<double>(spec_.sms) * static_cast<double>(st.elapsed));
    }
    return st;  // the fake has no power model: energy and power stay 0
  }

 private:
  struct Submission {
    workload::KernelSequencePtr sequence;
    device::BlockRange range;  // of its only kernel; empty: whole kernels
    std::uint64_t tag;
    device::DoneCallback done;
    core::Nanos submitted;
    core::Nanos started = -1;
    std::size_t group = 0;
    int repeat = 0;
    std::size_t kernel = 0;
  };
  struct Stream {
    device::StreamConfig config;
    std::deque<Submission> queue{};
    bool running = false;  // a kernel has started and not finished
    bool paused = false;   // ...and its context is suspended
    device::StreamConfig running_config{};
    core::Nanos kernel_start = 0;
    core::Nanos segment_start = 0;
    core::Nanos remaining = 0;  // of the kernel's work, as of segment_start
    std::optional<device::TimerId> timer{};
    // A pending yield stops the kernel when `remaining` falls to yield_left (< 0: none).
    core::Nanos yield_left = -1;
    int yield_checkpoint = 0;
    int checkpoints_passed = 0;  // by the current kernel; > 0: the next launch runs its rest
  };

  static std::unexpected<core::Error> unsupported(std::string_view what) {
    return core::failf(core::Domain::kDevice, core::Code::kUnsupported,
                       "fake device: {} not enabled in its capabilities", what);
  }
  static std::unexpected<core::Error> unknown_stream(device::StreamId id) {
    return core::failf(core::Domain::kDevice, core::Code::kNotFound, "fake device: no stream {}",
                       id);
  }

  core::Status check(const device::StreamConfig& c) const {
    if (!c.sms.empty() && !caps_.sm_partitions) return unsupported("SM partitions");
    if (c.max_sms > 0 && !caps_.sm_limit) return unsupported("SM limits");
    if ((c.sms & device::SmMask::first(spec_.sms)) != c.sms || c.max_sms < 0 ||
        c.max_sms > spec_.sms || c.bandwidth_domain > domain_shares_.size()) {
      return core::fail(core::Domain::kDevice, core::Code::kInvalidArgument,
                        "fake device: stream config outside the device");
    }
    return {};
  }

  int held_sms(const device::StreamConfig& c) const {
    const int n = c.sms.empty() ? spec_.sms : c.sms.count();
    return c.max_sms > 0 ? std::min(n, c.max_sms) : n;
  }

  static const workload::Kernel* current_kernel(Submission& sub) {
    const auto& groups = sub.sequence->groups;
    while (sub.group < groups.size()) {
      const auto& g = groups[sub.group];
      if (sub.repeat < g.repeat && sub.kernel < g.kernels.size()) return &g.kernels[sub.kernel];
      ++sub.group;
      sub.repeat = 0;
      sub.kernel = 0;
    }
    return nullptr;
  }

  static void advance(Submission& sub) {
    const auto& g = sub.sequence->groups[sub.group];
    if (++sub.kernel == g.kernels.size()) {
      sub.kernel = 0;
      ++sub.repeat;
    }
  }

  // The blocks the current launch of `sub` runs, and its duration whole.
  static device::BlockRange launch_blocks(Submission& sub) {
    if (sub.range.size() > 0) return sub.range;
    return {.begin = 0, .end = current_kernel(sub)->blocks};
  }
  core::Nanos launch_duration(Submission& sub) const {
    return range_duration(*current_kernel(sub), launch_blocks(sub));
  }

  void start_next(device::StreamId id) {
    auto& s = streams_[id];
    if (s.running || s.queue.empty() || suspended_.contains(s.config.context)) return;
    auto& sub = s.queue.front();
    if (sub.started < 0) sub.started = executor_.now();
    s.running = true;
    s.running_config = s.config;
    s.kernel_start = s.segment_start = executor_.now();
    // After a yield, `remaining` already holds the rest of the kernel's work.
    if (s.checkpoints_passed == 0) s.remaining = launch_duration(sub);
    arm(id);
  }

  // The running launch's next timer: its checkpoint if a yield is pending, else its end.
  void arm(device::StreamId id) {
    auto& s = streams_[id];
    const core::Nanos delay = s.yield_left >= 0 ? s.remaining - s.yield_left : s.remaining;
    s.timer = executor_.schedule_after(delay, [this, id] { on_timer(id); });
  }

  void on_timer(device::StreamId id) {
    if (streams_[id].yield_left >= 0) {
      stop_at_checkpoint(id);
    } else {
      finish_kernel(id);
    }
  }

  void record_run(device::StreamId id, bool completed, bool yielded) {
    auto& s = streams_[id];
    auto& sub = s.queue.front();
    runs_.push_back(KernelRun{.stream = id,
                              .context = s.running_config.context,
                              .config = s.running_config,
                              .tag = sub.tag,
                              .start = s.segment_start,
                              .end = executor_.now(),
                              .completed = completed,
                              .yielded = yielded,
                              .blocks = launch_blocks(sub)});
  }

  // Ends the running launch: its last run, SM time, and its event to observers.
  void end_launch(device::StreamId id, bool yielded) {
    auto& s = streams_[id];
    s.timer.reset();
    record_run(id, !yielded, yielded);
    auto& sub = s.queue.front();
    const int sms = held_sms(s.running_config);
    sm_time_ += static_cast<double>(sms) * static_cast<double>(executor_.now() - s.kernel_start);
    const device::KernelEvent event{.stream = id,
                                    .context = s.running_config.context,
                                    .bandwidth_domain = s.running_config.bandwidth_domain,
                                    .kernel = current_kernel(sub),
                                    .submission_tag = sub.tag,
                                    .start = s.kernel_start,
                                    .end = executor_.now(),
                                    .sms = sms,
                                    .blocks = launch_blocks(sub),
                                    .yielded = yielded};
    for (auto* o : observers_) o->on_kernel_complete(event);
    s.running = false;
  }

  void stop_at_checkpoint(device::StreamId id) {
    auto& s = streams_[id];
    end_launch(id, /*yielded=*/true);
    s.remaining = s.yield_left;
    s.yield_left = -1;
    s.checkpoints_passed = s.yield_checkpoint;
    start_next(id);
  }

  void finish_kernel(device::StreamId id) {
    auto& s = streams_[id];
    end_launch(id, /*yielded=*/false);
    ++kernels_completed_;
    s.checkpoints_passed = 0;
    auto& sub = s.queue.front();
    advance(sub);
    if (current_kernel(sub) == nullptr) {
      Submission finished = std::move(s.queue.front());
      s.queue.pop_front();
      if (finished.done) {
        finished.done(device::SubmissionDone{.stream = id,
                                             .tag = finished.tag,
                                             .submitted = finished.submitted,
                                             .started = finished.started,
                                             .finished = executor_.now()});
      }
    }
    start_next(id);
  }

  device::Executor& executor_;
  hw::GpuSpec spec_;
  device::Capabilities caps_;
  double flops_per_ns_;
  double clock_mhz_;
  std::vector<Stream> streams_;        // indexed by StreamId
  std::vector<double> domain_shares_;  // domain i + 1
  std::set<device::ContextId> suspended_;
  std::vector<FakeCall> calls_;
  std::vector<KernelRun> runs_;
  std::vector<device::DeviceObserver*> observers_;
  double sm_time_ = 0;
  std::int64_t kernels_completed_ = 0;
};

}  // namespace tessera::test
