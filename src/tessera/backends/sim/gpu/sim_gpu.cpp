#include "tessera/backends/sim/gpu/sim_gpu.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>

#include "tessera/backends/sim/gpu/bandwidth.hpp"
#include "tessera/device/argument_checks.hpp"
#include "tessera/device/occupancy.hpp"

namespace tessera::sim {

using core::Code;
using core::Domain;

namespace {

// Bandwidth shares are user input in decimal: 0.1 + 0.2 + 0.7 must fit in 1.
constexpr double kShareSlack = 1e-9;

}  // namespace

SimGpu::SimGpu(Engine& engine, hw::GpuSpec spec, SimGpuOptions options)
    : engine_(engine),
      spec_(std::move(spec)),
      options_(options),
      timing_(spec_, options_),
      created_(engine.now()),
      clock_mhz_(spec_.boost_clock_mhz) {
  if (auto st = validate_model(spec_, options_); !st) invalid_ = st.error();
  if (!invalid_) free_ = SmSet::first(spec_.sms);
  domains_.push_back(BandwidthDomain{
      .share = 1, .capacity = timing_.device_bandwidth(), .members = {}, .dirty = false});
}

core::Result<std::unique_ptr<SimGpu>> SimGpu::create(Engine& engine, hw::GpuSpec spec,
                                                     SimGpuOptions options) {
  if (auto st = validate_model(spec, options); !st) return std::unexpected(st.error());
  return std::make_unique<SimGpu>(engine, std::move(spec), options);
}

SimGpu::~SimGpu() {
  // Pending events capture `this`; the engine may outlive the device.
  for (auto& st : streams_) {
    if (st.cur.timer != 0) engine_.cancel(st.cur.timer);
    if (st.cur.tail_timer != 0) engine_.cancel(st.cur.tail_timer);
    if (st.batch_timer != 0) engine_.cancel(st.batch_timer);
  }
}

device::Capabilities SimGpu::capabilities() const {
  return device::Capabilities{.sm_partitions = true,
                              .sm_limit = true,
                              .bandwidth_partitions = true,
                              .context_preemption = true,
                              .clock_control = true,
                              .block_ranges = true,
                              .kernel_preemption = true,
                              .stream_priorities = true,
                              .early_end = true};
}

core::Status SimGpu::usable() const {
  if (invalid_) return std::unexpected(*invalid_);
  return {};
}

core::Status SimGpu::check_stream(device::StreamId stream) const {
  return device::check_stream_id(stream, streams_.size());
}

core::Result<SmSet> SimGpu::resolve_sms(const device::StreamConfig& config) const {
  if (auto st = device::check_sm_mask(spec_, config.sms); !st) return std::unexpected(st.error());
  return config.sms.empty() ? SmSet::first(spec_.sms) : SmSet::from_mask(config.sms);
}

core::Status SimGpu::check_config(const device::StreamConfig& config) const {
  if (config.max_sms < 0) {
    return core::failf(Domain::kDevice, Code::kInvalidArgument,
                       "the stream's SM cap is {}; use 0 for no cap or a positive count",
                       config.max_sms);
  }
  if (config.bandwidth_domain >= domains_.size()) {
    return core::failf(Domain::kDevice, Code::kNotFound,
                       "bandwidth domain {} does not exist ({} domains: 0 is the whole device); "
                       "use an id returned by create_bandwidth_domain",
                       config.bandwidth_domain, domains_.size());
  }
  if (domains_[config.bandwidth_domain].capacity <= 0) {
    return core::failf(Domain::kDevice, Code::kFailedPrecondition,
                       "bandwidth domain {} has no bandwidth left (all of it was carved into "
                       "other domains); put the stream in a carved domain",
                       config.bandwidth_domain);
  }
  return {};
}

std::optional<std::uint32_t> SimGpu::find_context(device::ContextId id) const {
  for (std::uint32_t i = 0; i < contexts_.size(); ++i) {
    if (contexts_[i].id == id) return i;
  }
  return std::nullopt;
}

std::uint32_t SimGpu::context_index(device::ContextId id) {
  if (auto i = find_context(id)) return *i;
  contexts_.push_back(Context{.id = id});
  return static_cast<std::uint32_t>(contexts_.size() - 1);
}

core::Result<device::DomainId> SimGpu::create_bandwidth_domain(double share) {
  if (auto st = usable(); !st) return std::unexpected(st.error());
  if (!(share > 0 && share <= 1)) {
    return core::failf(Domain::kDevice, Code::kInvalidArgument,
                       "a bandwidth domain's share is a fraction in (0, 1] of the device's "
                       "bandwidth; got {}",
                       share);
  }
  const double left = domains_[0].share;
  if (share > left + kShareSlack) {
    return core::failf(Domain::kDevice, Code::kResourceExhausted,
                       "cannot carve {} of {}'s bandwidth: only {} is left outside the {} domains "
                       "already carved; ask for at most that",
                       share, spec_.name, left, domains_.size() - 1);
  }
  const double remains = std::max(0.0, left - share);
  if (remains <= kShareSlack) {
    for (std::uint32_t s = 0; s < streams_.size(); ++s) {
      const auto& st = streams_[s];
      const bool uses = st.config.bandwidth_domain == device::kWholeDevice ||
                        (st.cur.launched && st.cur.domain == device::kWholeDevice);
      if (uses) {
        return core::failf(Domain::kDevice, Code::kFailedPrecondition,
                           "carving {} would leave the whole-device bandwidth domain with nothing, "
                           "but stream {} still uses it; move that stream to a carved domain "
                           "first or carve less",
                           share, s);
      }
    }
  }
  begin_op();
  // Domain 0 shrinks: its kernels' memory terms change. Batches there are split first so the
  // change lands on per-kernel progress.
  for (std::size_t i = 0; i < batched_.size();) {
    if (streams_[batched_[i]].cur.domain == device::kWholeDevice) {
      split_batch(batched_[i]);
    } else {
      ++i;
    }
  }
  for (auto& st : streams_) {
    if (st.cur.phase == Phase::kRunning && st.cur.domain == device::kWholeDevice) sync(st.cur);
  }
  BandwidthDomain& whole = domains_[0];
  whole.share = remains <= kShareSlack ? 0 : remains;
  whole.capacity = whole.share * timing_.device_bandwidth();
  for (std::uint32_t s = 0; s < streams_.size(); ++s) {
    Launch& l = streams_[s].cur;
    if (!l.launched || l.domain != device::kWholeDevice) continue;
    if (l.phase != Phase::kRunning && l.phase != Phase::kSuspended) continue;
    l.plan.memory_ns = timing_.memory_ns(l.plan, whole.capacity);
    l.rates = TimingModel::rates(l.plan, clock_ratio_);
    if (l.phase == Phase::kRunning) flag_reschedule(s);
  }
  mark_dirty(device::kWholeDevice);
  if (options_.co_residency) pipes_dirty_ = true;
  domains_.push_back(BandwidthDomain{.share = share,
                                     .capacity = share * timing_.device_bandwidth(),
                                     .members = {},
                                     .dirty = false});
  const auto id = static_cast<device::DomainId>(domains_.size() - 1);
  end_op();
  return id;
}

core::Result<device::StreamId> SimGpu::create_stream(const device::StreamConfig& config) {
  if (auto st = usable(); !st) return std::unexpected(st.error());
  if (auto st = check_config(config); !st) return std::unexpected(st.error());
  auto sms = resolve_sms(config);
  if (!sms) return std::unexpected(sms.error());
  Stream st;
  st.config = config;
  st.allowed = *sms;
  st.context = context_index(config.context);
  if (config.priority != 0) priorities_used_ = true;
  st.batch.reserve(static_cast<std::size_t>(options_.max_batch_kernels));
  streams_.push_back(std::move(st));
  return static_cast<device::StreamId>(streams_.size() - 1);
}

core::Status SimGpu::configure_stream(device::StreamId stream, const device::StreamConfig& config) {
  if (auto st = usable(); !st) return st;
  if (auto st = check_stream(stream); !st) return st;
  if (auto st = check_config(config); !st) return st;
  auto sms = resolve_sms(config);
  if (!sms) return std::unexpected(sms.error());
  begin_op();
  Stream& st = streams_[stream];
  // A batch has already timed the stream's next kernels under the old configuration.
  if (st.cur.phase == Phase::kBatched) split_batch(stream);
  st.config = config;
  st.allowed = *sms;
  st.context = context_index(config.context);
  if (config.priority != 0) priorities_used_ = true;
  Launch& l = st.cur;
  if (!l.launched) {
    const bool suspended = contexts_[st.context].suspended;
    if (l.phase == Phase::kWaiting && suspended) {
      std::erase(waiting_, stream);
      l.phase = Phase::kSuspended;
    } else if (l.phase == Phase::kSuspended && !suspended) {
      l.phase = Phase::kWaiting;
      l.ready_seq = next_ready_++;
      waiting_.push_back(stream);
    }
    if (l.phase == Phase::kWaiting) {
      split_conflicting(stream);
      dispatch_needed_ = true;
    }
  }
  end_op();
  return {};
}

core::Status SimGpu::submit(device::StreamId stream, workload::KernelSequencePtr sequence,
                            std::uint64_t tag, device::DoneCallback done) {
  if (auto st = usable(); !st) return st;
  if (auto st = check_stream(stream); !st) return st;
  if (auto st = device::check_submitted_sequence(stream, sequence); !st) return st;
  return enqueue(stream,
                 Submission{.sequence = std::move(sequence), .tag = tag, .done = std::move(done)});
}

core::Status SimGpu::submit_span(device::StreamId stream, workload::KernelSequencePtr sequence,
                                 device::KernelSpan span, std::uint64_t tag,
                                 device::DoneCallback done) {
  if (auto st = usable(); !st) return st;
  if (auto st = check_stream(stream); !st) return st;
  if (auto st = device::check_span(stream, sequence, span); !st) return st;
  return enqueue(stream, Submission{.sequence = std::move(sequence),
                                    .from = span.from,
                                    .count = span.count,
                                    .tag = tag,
                                    .done = std::move(done)});
}

core::Status SimGpu::end_after_head(device::StreamId stream) {
  if (auto st = usable(); !st) return st;
  if (auto st = check_stream(stream); !st) return st;
  Stream& st = streams_[stream];
  if (st.queue.empty()) return {};
  begin_op();
  // A batch's kernel in flight becomes the stream's running kernel; the ones after it never run.
  if (st.cur.phase == Phase::kBatched) split_batch(stream);
  st.left = 1;
  end_op();
  return {};
}

core::Status SimGpu::submit_range(device::StreamId stream, workload::KernelSequencePtr sequence,
                                  device::BlockRange range, std::uint64_t tag,
                                  device::DoneCallback done) {
  if (auto st = usable(); !st) return st;
  if (auto st = check_stream(stream); !st) return st;
  if (auto k = device::validate_range_submission(stream, sequence, range.begin, range.end); !k) {
    return std::unexpected(k.error());
  }
  return enqueue(
      stream,
      Submission{
          .sequence = std::move(sequence), .range = range, .tag = tag, .done = std::move(done)});
}

core::Status SimGpu::enqueue(device::StreamId stream, Submission submission) {
  Stream& st = streams_[stream];
  if (submission.sequence != st.validated) {
    if (auto v = device::validate_stream_sequence(spec_, stream, *submission.sequence); !v) {
      return v;
    }
    st.validated = submission.sequence;
  }
  begin_op();
  submission.submitted = engine_.now();
  st.queue.push_back(std::move(submission));
  if (st.queue.size() == 1 && st.cur.phase == Phase::kIdle) {
    begin_submission(stream);
    make_ready(stream);
  }
  end_op();
  return {};
}

core::Status SimGpu::request_yield(device::StreamId stream) {
  if (auto st = usable(); !st) return st;
  if (auto st = check_stream(stream); !st) return st;
  Stream& st = streams_[stream];
  Launch& l = st.cur;
  if (l.phase == Phase::kBatched) {
    // Only a kernel that can stop splits the batch; any other runs to its end as timed.
    if (st.batch[in_flight(st, engine_.now())].kernel->checkpoints <= 0) return {};
    begin_op();
    split_batch(stream);
    start_yield(stream);
    end_op();
    return {};
  }
  // A kernel that has not launched yet, or is already saving, is left alone; one that has launched
  // but is suspended or waiting for SMs stops at its next checkpoint once it runs again.
  const bool launched_and_stopped_or_running =
      l.launched &&
      (l.phase == Phase::kRunning || l.phase == Phase::kWaiting || l.phase == Phase::kSuspended);
  if (!launched_and_stopped_or_running || l.kernel->checkpoints <= 0 || l.yield_blocks >= 0) {
    return {};
  }
  begin_op();
  start_yield(stream);
  end_op();
  return {};
}

core::Status SimGpu::suspend_context(device::ContextId context) {
  if (auto st = usable(); !st) return st;
  const auto ci = find_context(context);
  if (!ci) {
    return core::failf(Domain::kDevice, Code::kNotFound,
                       "cannot suspend context {}: no stream belongs to it; name it in a "
                       "StreamConfig first",
                       context);
  }
  if (contexts_[*ci].suspended) {
    return core::failf(Domain::kDevice, Code::kFailedPrecondition,
                       "context {} is already suspended; resume it before suspending it again",
                       context);
  }
  begin_op();
  contexts_[*ci].suspended = true;
  for (std::uint32_t s = 0; s < streams_.size(); ++s) {
    Stream& st = streams_[s];
    Launch& l = st.cur;
    if ((l.launched ? l.context : st.context) != *ci) continue;
    if (l.phase == Phase::kBatched) split_batch(s);
    if (l.phase == Phase::kRunning) {
      sync(l);
      engine_.cancel(l.timer);
      l.timer = 0;
      retire(s);
      l.phase = Phase::kSuspended;
      dispatch_needed_ = true;
    } else if (l.phase == Phase::kWaiting) {
      std::erase(waiting_, s);
      l.phase = Phase::kSuspended;
    }
  }
  end_op();
  return {};
}

core::Status SimGpu::resume_context(device::ContextId context) {
  if (auto st = usable(); !st) return st;
  const auto ci = find_context(context);
  if (!ci) {
    return core::failf(Domain::kDevice, Code::kNotFound,
                       "cannot resume context {}: no stream belongs to it", context);
  }
  if (!contexts_[*ci].suspended) {
    return core::failf(Domain::kDevice, Code::kFailedPrecondition,
                       "context {} is not suspended; only a suspended context can be resumed",
                       context);
  }
  begin_op();
  contexts_[*ci].suspended = false;
  // Its kernels become ready now, in the order they first became ready.
  stream_scratch_.clear();
  for (std::uint32_t s = 0; s < streams_.size(); ++s) {
    const Stream& st = streams_[s];
    const Launch& l = st.cur;
    if (l.phase == Phase::kSuspended && (l.launched ? l.context : st.context) == *ci) {
      stream_scratch_.push_back(s);
    }
  }
  std::sort(stream_scratch_.begin(), stream_scratch_.end(), [this](auto a, auto b) {
    return streams_[a].cur.ready_seq < streams_[b].cur.ready_seq;
  });
  for (const auto s : stream_scratch_) {
    Launch& l = streams_[s].cur;
    l.phase = Phase::kWaiting;
    l.ready_seq = next_ready_++;
    waiting_.push_back(s);
    split_conflicting(s);
  }
  dispatch_needed_ = true;
  end_op();
  return {};
}

core::Status SimGpu::set_clock_mhz(double mhz) {
  if (auto st = usable(); !st) return st;
  if (auto st = device::check_clock_mhz(spec_, mhz); !st) return st;
  begin_op();
  while (!batched_.empty()) split_batch(batched_.back());
  for (const auto s : running_) sync(streams_[s].cur);
  clock_mhz_ = mhz;
  clock_ratio_ = mhz / spec_.boost_clock_mhz;
  clock_cube_ = clock_ratio_ * clock_ratio_ * clock_ratio_;
  for (const auto s : running_) {
    Launch& l = streams_[s].cur;
    l.rates = TimingModel::rates(l.plan, clock_ratio_);
    flag_reschedule(s);
    mark_dirty(l.domain);
  }
  // Compute stretches with the clock and memory does not: co-resident kernels' demands move.
  if (options_.co_residency) pipes_dirty_ = true;
  end_op();
  return {};
}

void SimGpu::add_observer(device::DeviceObserver* observer) {
  if (observer != nullptr) observers_.push_back(observer);
}

device::DeviceStats SimGpu::stats() const {
  const core::Nanos now = engine_.now();
  Integrals in = integrals_;
  // Add what the open segments have accrued since they were last accounted.
  for (const auto s : running_) {
    const Launch& l = streams_[s].cur;
    const auto dt = static_cast<double>(now - l.since);
    in.sm_ns += l.held_sms * l.sm_weight * dt;
    in.compute += l.plan.sms * l.share * l.rates.compute_share * clock_cube_ * dt;
    in.bytes += l.share * l.rates.demand * dt;
  }
  for (const auto& st : streams_) {
    if (st.cur.phase == Phase::kSaving) {
      in.sm_ns += st.cur.held_sms * st.cur.sm_weight * static_cast<double>(now - st.cur.since);
    }
  }
  for (const auto s : batched_) {
    for (const auto& item : streams_[s].batch) {
      if (item.start >= now) break;
      const auto dt = static_cast<double>(std::min(item.end, now) - item.start);
      in.sm_ns += busy_sm_ns(item, now);
      in.compute += item.sms * item.compute_share * clock_cube_ * dt;
      in.bytes += item.demand * dt;
      if (item.end <= now) ++in.kernels;
    }
  }
  device::DeviceStats out;
  out.elapsed = now - created_;
  out.kernels_completed = in.kernels;
  if (out.elapsed <= 0) return out;
  const auto elapsed = static_cast<double>(out.elapsed);
  out.sm_busy_fraction = in.sm_ns / (spec_.sms * elapsed);
  const double w = options_.compute_power_weight;
  const double active_ns =
      w * in.compute / spec_.sms + (1 - w) * in.bytes / timing_.device_bandwidth();
  out.energy_joules =
      (spec_.idle_watts * elapsed + (spec_.tdp_watts - spec_.idle_watts) * active_ns) * 1e-9;
  out.average_power_watts = out.energy_joules / (elapsed * 1e-9);
  return out;
}

void SimGpu::end_op() {
  if (--depth_ > 0) return;
  settle();
  flush();
}

void SimGpu::settle() {
  if (dispatch_needed_) dispatch();
  if (pipes_dirty_) share_pipes();
  for (const auto d : dirty_domains_) {
    BandwidthDomain& dom = domains_[d];
    dom.dirty = false;
    const std::size_t n = dom.members.size();
    if (demand_scratch_.size() < n) {
      demand_scratch_.resize(n);
      share_scratch_.resize(n);
    }
    for (std::size_t i = 0; i < n; ++i) {
      Launch& l = streams_[dom.members[i]].cur;
      sync(l);
      demand_scratch_[i] = l.rates.demand;
    }
    water_fill(std::span(demand_scratch_).first(n), dom.capacity,
               std::span(share_scratch_).first(n));
    for (std::size_t i = 0; i < n; ++i) {
      Launch& l = streams_[dom.members[i]].cur;
      // A kernel progresses at the smaller of its DRAM and pipe grants.
      const double share = std::min(share_scratch_[i], l.pipe_ratio);
      if (share != l.share) {
        l.share = share;
        flag_reschedule(dom.members[i]);
      }
    }
  }
  dirty_domains_.clear();
  for (const auto s : to_reschedule_) reschedule(s);
  to_reschedule_.clear();
}

void SimGpu::flush() {
  if (flushing_) return;
  flushing_ = true;
  // Callbacks and observers may queue more (and add observers): what they queue is delivered in
  // a later round, after everything queued before it, and observers are indexed, not iterated.
  while (!events_.empty() || !done_notices_.empty()) {
    delivering_events_.swap(events_);
    delivering_done_.swap(done_notices_);
    const auto deliver = [this](std::size_t from, std::size_t to) {
      if (from == to) return;
      const std::span<const device::KernelEvent> run(delivering_events_.data() + from, to - from);
      for (std::size_t o = 0; o < observers_.size(); ++o) observers_[o]->on_kernels_complete(run);
    };
    std::size_t delivered = 0;
    for (auto& notice : delivering_done_) {
      deliver(delivered, notice.events_before);
      delivered = notice.events_before;
      const device::DoneCallback callback = std::move(notice.callback);
      const workload::KernelSequencePtr keep = std::move(notice.keep_alive);
      if (callback) callback(notice.done);
    }
    deliver(delivered, delivering_events_.size());
    delivering_events_.clear();
    delivering_done_.clear();
  }
  flushing_ = false;
}

}  // namespace tessera::sim
