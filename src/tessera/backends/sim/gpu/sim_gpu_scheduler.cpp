// The block scheduler of SimGpu and its per-kernel path: readiness, SM allocation and growth,
// fluid progress, completion.

#include <algorithm>
#include <functional>
#include <optional>

#include "tessera/backends/sim/gpu/rounding.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/device/occupancy.hpp"

namespace tessera::sim {

void SimGpu::begin_submission(std::uint32_t s) {
  Stream& st = streams_[s];
  const Submission& sub = st.queue.front();
  const workload::KernelSequence& seq = *sub.sequence;
  st.cursor = sub.count == kToTheEnd ? first_cursor(seq) : sub.from;
  st.left = sub.count;
  st.ran = 0;
  // The host starts launching it once it has launched everything before it; a graph launches in
  // one call (a range of one kernel cannot be a graph's).
  st.host_start = std::max(sub.submitted, st.host_free);
  if (seq.graph && sub.range.size() == 0) {
    st.host_step = 0;
    st.host_free = st.host_start + options_.graph_launch;
  } else {
    st.host_step = options_.host_launch;
  }
  if (st.described == sub.sequence && st.described_range == sub.range) return;
  st.described = sub.sequence;
  st.described_range = sub.range;
  st.kernels.clear();
  st.group_first.clear();
  // A range launch keeps the kernel's grid and per-block cost; it runs only the range's blocks
  // and pays the atom's prelude on top of the launch.
  const bool ranged = sub.range.size() > 0;
  const double overhead = timing_.launch_overhead_ns() +
                          (ranged ? static_cast<double>(options_.atom_launch_overhead) : 0.0);
  for (const auto& group : seq.groups) {
    st.group_first.push_back(static_cast<std::uint32_t>(st.kernels.size()));
    for (const auto& k : group.kernels) {
      KernelInfo info;
      info.shape = timing_.shape(k);
      info.blocks = static_cast<double>(ranged ? sub.range.size() : k.blocks);
      info.overhead_ns = overhead + info.shape.fixed_ns;
      info.sms_wanted = TimingModel::sms_wanted(info.blocks);
      info.occupancy = device::blocks_per_sm(spec_.sm, k.block);
      st.kernels.push_back(info);
    }
  }
}

void SimGpu::redraw_fresh_plan(KernelInfo& info, int sms, double capacity) {
  info.plan_sms = sms;
  info.plan_capacity = capacity;
  info.plan_clock_ratio = clock_ratio_;
  info.plan = timing_.plan(info.shape, info.blocks, sms, capacity, info.overhead_ns);
  info.rates = TimingModel::rates(info.plan, clock_ratio_);
  info.duration = remaining_ns(1.0, info.rates.duration_ns, 1.0);
  // Timed as reschedule() times the tail of a kernel launched alone.
  info.tail = tail_of(info.plan);
  info.to_tail = info.tail.left < 0
                     ? -1
                     : remaining_ns(std::max(0.0, 1 - info.tail.left), info.rates.duration_ns, 1.0);
}

void SimGpu::make_ready(std::uint32_t s, bool relaunch) {
  Stream& st = streams_[s];
  Launch& l = st.cur;
  // A fresh kernel; launch() or start_batch() fill in the rest.
  l.kernel = &kernel_at(*st.queue.front().sequence, st.cursor);
  l.launched = false;
  l.held = SmSet{};
  l.share = 1;
  l.left = 1;
  l.timer = 0;
  l.reschedule = false;
  l.yield_blocks = -1;
  l.resident = 0;
  l.held_sms = 0;
  l.pipe_ratio = 1;
  l.sm_weight = 1;
  l.shared = false;
  l.tail_left = -1;
  l.in_tail = false;
  l.tail_timer = 0;
  const core::Nanos now = engine_.now();
  st.host_free = std::max(st.host_free, relaunch ? now : st.host_start) +
                 (relaunch ? options_.host_launch : st.host_step);
  if (st.host_free > now) {
    l.phase = Phase::kLaunching;
    engine_.schedule_at(st.host_free, [this, s] { on_launched(s); });
    return;
  }
  enter_ready(s);
}

void SimGpu::on_launched(std::uint32_t s) {
  begin_op();
  enter_ready(s);
  end_op();
}

void SimGpu::enter_ready(std::uint32_t s) {
  Stream& st = streams_[s];
  Launch& l = st.cur;
  l.ready_seq = next_ready_++;
  if (contexts_[st.context].suspended) {
    l.phase = Phase::kSuspended;
    return;
  }
  l.phase = Phase::kWaiting;
  waiting_.push_back(s);
  split_conflicting(s);
  dispatch_needed_ = true;
}

void SimGpu::continue_stream(std::uint32_t s, bool submission_ended) {
  Stream& st = streams_[s];
  st.cur.phase = Phase::kIdle;
  if (!submission_ended) {
    make_ready(s);
    return;
  }
  Submission& sub = st.queue.front();
  done_notices_.push_back(DoneNotice{.done = device::SubmissionDone{.stream = s,
                                                                    .tag = sub.tag,
                                                                    .submitted = sub.submitted,
                                                                    .started = sub.started,
                                                                    .finished = engine_.now(),
                                                                    .kernels = st.ran},
                                     .callback = std::move(sub.done),
                                     .keep_alive = std::move(sub.sequence),
                                     .events_before = events_.size()});
  st.queue.pop_front();
  if (st.queue.empty()) {
    st.cur = Launch{};
    return;
  }
  begin_submission(s);
  make_ready(s);
}

double SimGpu::fraction_left_now(const Launch& l) const {
  if (!(l.rates.duration_ns > 0)) return 0;
  const auto dt = static_cast<double>(engine_.now() - l.since);
  return std::max(0.0, l.left - dt * l.share / l.rates.duration_ns);
}

void SimGpu::dispatch() {
  dispatch_needed_ = false;
  // Without co-residency only free SMs take blocks.
  if (free_.none() && !options_.co_residency) return;
  if (!priorities_used_) {
    dispatch_level(std::nullopt);
    return;
  }
  priority_levels();
  for (const int level : priority_scratch_) {
    if (!dispatch_level(level)) return;
  }
}

void SimGpu::priority_levels() {
  // A handful of streams on two or three levels: inserting each level into the short sorted
  // list costs a few compares, where sorting and deduplicating cost a library call per dispatch.
  priority_scratch_.clear();
  const auto add = [this](int level) {
    auto at = priority_scratch_.begin();
    while (at != priority_scratch_.end() && *at > level) ++at;
    if (at == priority_scratch_.end() || *at != level) priority_scratch_.insert(at, level);
  };
  for (const auto s : running_) add(streams_[s].cur.priority);
  for (const auto s : waiting_) add(waiting_priority(streams_[s]));
}

bool SimGpu::dispatch_level(std::optional<int> level) {
  const bool share = options_.co_residency;
  // Running kernels that could use more SMs grow first, earliest launched first.
  for (const auto s : running_) {
    const Launch& l = streams_[s].cur;
    if (level && l.priority != *level) continue;
    if (l.in_tail || (l.cap > 0 && l.plan.sms >= l.cap)) continue;
    // (Checked first, being cheap and common: a kernel with every SM it may use cannot grow.)
    if (l.held.contains(l.allowed)) continue;
    // A kernel can use more SMs only while its unfinished blocks overflow the ones it holds.
    if (fraction_left_now(l) * l.plan.blocks <= l.plan.sms) continue;
    if (share || free_.overlaps(l.allowed)) grow(s);
    if (free_.none() && !share) return false;
  }
  // Then waiting kernels, in the order they became ready.
  std::size_t keep = 0;
  for (std::size_t i = 0; i < waiting_.size(); ++i) {
    const auto s = waiting_[i];
    const Stream& st = streams_[s];
    const SmSet& allowed = st.cur.launched ? st.cur.allowed : st.allowed;
    bool started = false;
    if ((!level || waiting_priority(st) == *level) && (share || free_.overlaps(allowed))) {
      // The rest of a yielded kernel is not a whole kernel: it runs on the per-kernel path.
      if (!st.cur.launched && st.checkpoints_passed == 0 && isolated(s)) {
        start_batch(s);
        started = true;
      } else {
        started = launch(s, allowed);
      }
    }
    if (!started) waiting_[keep++] = s;
  }
  waiting_.resize(keep);
  return share || !free_.none();
}

bool SimGpu::launch(std::uint32_t s, const SmSet& allowed) {
  Stream& st = streams_[s];
  Launch& l = st.cur;
  const core::Nanos now = engine_.now();
  // SMs first, so that a kernel that finds no room is left as it was.
  const int cap = l.launched ? l.cap : st.config.max_sms;
  const double blocks_left = l.launched ? l.left * l.plan.blocks : info_at(st, st.cursor).blocks;
  int n = TimingModel::sms_wanted(blocks_left);
  if (cap > 0) n = std::min(n, cap);
  int fit = 0;
  const SmSet room = take_room(s, allowed, std::max(n, 1), fit);
  if (room.none()) return false;
  const bool onto_others = !free_.contains(room);
  l.held = room;
  n = room.count();
  l.held_sms = n;
  l.resident = std::min(fit, static_cast<int>(ceil_non_negative(blocks_left / n)));
  l.pipe_ratio = 1;
  l.sm_weight = 1;
  l.shared = false;
  if (onto_others) pipes_dirty_ = true;
  std::optional<Tail> fresh_tail;
  if (!l.launched) {
    KernelInfo& info = info_at(st, st.cursor);
    l.launched = true;
    l.allowed = st.allowed;
    l.cap = st.config.max_sms;
    l.domain = st.config.bandwidth_domain;
    l.priority = st.config.priority;
    l.context = st.context;
    l.shape = info.shape;
    l.start = now;
    l.order = next_order_++;
    Submission& sub = st.queue.front();
    if (sub.started < 0) sub.started = now;
    l.sms_at_start = n;
    if (const int passed = st.checkpoints_passed; passed > 0) {
      // After a yield the same grid runs again, every block from the checkpoint it saved.
      const int c = l.kernel->checkpoints;
      const double rest = static_cast<double>(c + 1 - passed) / static_cast<double>(c + 1);
      l.shape.block_ns_at_boost *= rest;
      l.shape.bytes_per_block *= rest;
      l.shape.link_ns_per_block *= rest;
      l.shape.work_scale *= rest;
      l.plan = timing_.plan(l.shape, info.blocks, n, domains_[l.domain].capacity, info.overhead_ns);
      l.rates = TimingModel::rates(l.plan, clock_ratio_);
    } else {
      const KernelInfo& planned = fresh_plan(info, n, domains_[l.domain].capacity);
      l.plan = planned.plan;
      l.rates = planned.rates;
      fresh_tail = planned.tail;
    }
    l.left = 1;
  } else {
    // Resumed: re-plan what is left if it lands on a different number of SMs.
    if (n != l.plan.sms) {
      l.plan = timing_.plan(l.shape, blocks_left, n, domains_[l.domain].capacity,
                            l.left * l.plan.overhead_ns);
      l.left = 1;
    }
    l.rates = TimingModel::rates(l.plan, clock_ratio_);
  }
  // A resumed kernel's tail is worked out again from what it has left.
  if (fresh_tail) {
    set_tail(l, *fresh_tail);
  } else if (l.left == 1) {
    set_tail(l);
  } else {
    l.tail_left = -1;
    l.in_tail = false;
  }
  free_ &= ~l.held;
  l.share = 1;
  l.since = now;
  l.phase = Phase::kRunning;
  add_running(s);
  domains_[l.domain].members.push_back(s);
  mark_dirty(l.domain);
  flag_reschedule(s);
  return true;
}

void SimGpu::grow(std::uint32_t s) {
  Launch& l = streams_[s].cur;
  // Decide before touching the kernel's progress: a kernel that does not grow is left exactly as
  // it was (its progress is only rewritten when its plan changes).
  int n = TimingModel::sms_wanted(fraction_left_now(l) * l.plan.blocks);
  if (l.cap > 0) n = std::min(n, l.cap);
  if (n <= l.plan.sms) return;
  int fit = 0;
  const SmSet more = take_room(s, l.allowed & ~l.held, n - l.plan.sms, fit);
  if (more.none()) return;
  // Its plan, and so its demand on its SMs' pipes, changes too.
  if (l.shared || !free_.contains(more)) pipes_dirty_ = true;
  n = l.plan.sms + more.count();
  sync(l);
  const double blocks = l.left * l.plan.blocks;
  l.held |= more;
  l.held_sms = n;
  l.resident = std::max(1, std::min(l.resident, fit));
  free_ &= ~more;
  l.plan =
      timing_.plan(l.shape, blocks, n, domains_[l.domain].capacity, l.left * l.plan.overhead_ns);
  l.left = 1;
  l.rates = TimingModel::rates(l.plan, clock_ratio_);
  set_tail(l);
  mark_dirty(l.domain);
  flag_reschedule(s);
}

void SimGpu::sync_until(Launch& l, core::Nanos now) {
  if (l.since >= now) return;
  const auto dt = static_cast<double>(now - l.since);
  if (l.rates.duration_ns > 0) l.left = std::max(0.0, l.left - dt * l.share / l.rates.duration_ns);
  integrals_.sm_ns += l.held_sms * l.sm_weight * dt;
  integrals_.compute += l.plan.sms * l.share * l.rates.compute_share * clock_cube_ * dt;
  integrals_.bytes += l.share * l.rates.demand * dt;
  l.since = now;
}

void SimGpu::add_running(std::uint32_t s) {
  // Launch order; a resumed kernel keeps its original place.
  const auto order = streams_[s].cur.order;
  auto it = running_.end();
  while (it != running_.begin() && streams_[*(it - 1)].cur.order > order) --it;
  running_.insert(it, s);
}

void SimGpu::leave_running(std::uint32_t s) {
  Launch& l = streams_[s].cur;
  running_.erase(std::find(running_.begin(), running_.end(), s));
  auto& members = domains_[l.domain].members;
  const auto it = std::find(members.begin(), members.end(), s);
  *it = members.back();
  members.pop_back();
  mark_dirty(l.domain);
}

void SimGpu::retire(std::uint32_t s) {
  Launch& l = streams_[s].cur;
  leave_running(s);
  cancel_tail(l);
  const SmSet held = l.held;
  l.held = SmSet{};
  l.held_sms = 0;
  release(s, held);
  dispatch_needed_ = true;
}

void SimGpu::mark_dirty(device::DomainId d) {
  if (domains_[d].dirty) return;
  domains_[d].dirty = true;
  dirty_domains_.push_back(d);
}

void SimGpu::flag_reschedule(std::uint32_t s) {
  Launch& l = streams_[s].cur;
  if (l.reschedule) return;
  l.reschedule = true;
  to_reschedule_.push_back(s);
}

void SimGpu::reschedule(std::uint32_t s) {
  Launch& l = streams_[s].cur;
  if (!l.reschedule) return;
  l.reschedule = false;
  if (l.phase != Phase::kRunning) return;
  // With a yield pending the kernel's next event is its checkpoint, not its end.
  const double left =
      l.yield_blocks < 0 ? l.left : std::max(0.0, l.left - l.yield_blocks / l.plan.blocks);
  const core::Nanos when = engine_.now() + remaining_ns(left, l.rates.duration_ns, l.share);
  if (l.timer != 0) l.timer = engine_.reschedule(l.timer, when);
  if (l.timer == 0) l.timer = engine_.schedule_at(when, [this, s] { on_kernel_done(s); });
  if (l.tail_left < 0 || l.in_tail) return;
  const double to_tail = std::max(0.0, l.left - l.tail_left);
  const core::Nanos tail = engine_.now() + remaining_ns(to_tail, l.rates.duration_ns, l.share);
  if (l.tail_timer != 0) l.tail_timer = engine_.reschedule(l.tail_timer, tail);
  if (l.tail_timer == 0) l.tail_timer = engine_.schedule_at(tail, [this, s] { on_tail(s); });
}

void SimGpu::queue_kernel_event(std::uint32_t s, const workload::Kernel* kernel, core::Nanos start,
                                core::Nanos end, int sms, bool yielded) {
  const Stream& st = streams_[s];
  const Submission& sub = st.queue.front();
  const device::BlockRange blocks =
      sub.range.size() > 0 ? sub.range : device::BlockRange{.begin = 0, .end = kernel->blocks};
  events_.push_back(device::KernelEvent{.stream = s,
                                        .context = contexts_[st.cur.context].id,
                                        .bandwidth_domain = st.cur.domain,
                                        .kernel = kernel,
                                        .submission_tag = sub.tag,
                                        .start = start,
                                        .end = end,
                                        .sms = sms,
                                        .blocks = blocks,
                                        .yielded = yielded});
}

void SimGpu::on_kernel_done(std::uint32_t s) {
  Stream& st = streams_[s];
  Launch& l = st.cur;
  if (l.yield_blocks >= 0) {
    on_checkpoint(s);
    return;
  }
  begin_op();
  l.timer = 0;
  sync(l);
  retire(s);
  push_kernel_event(s, l.kernel, l.start, engine_.now(), l.sms_at_start);
  st.checkpoints_passed = 0;
  const bool more = next_kernel(st);
  continue_stream(s, !more);
  end_op();
}

}  // namespace tessera::sim
