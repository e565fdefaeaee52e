// Exact batching. While a stream has its SM set and bandwidth domain to itself, nothing can change
// the rate of its kernels, so each kernel of its current submission runs on
// min(SMs to host its blocks, SMs in the set, cap) SMs at its uncontended rate, back to back.
// The batch times them all at once with one completion event instead of one per kernel. The
// moment another kernel could share the set or the domain (it becomes ready, is resumed, or its
// stream is moved), the clock changes, the stream is reconfigured or its context suspended, the
// batch is split: kernels that have ended are accounted, and the one in flight becomes an ordinary
// running kernel in exactly the state the per-kernel path would have it in.
//
// A tie (a batched kernel ending at the very nanosecond something splits the batch) is resolved
// as if the split came first: the kernel ending then stays running and ends in its own event.

#include <algorithm>

#include "tessera/backends/sim/gpu/rounding.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"

namespace tessera::sim {

namespace {

// Length of a stream's first batch, and of the first after a split.
constexpr int kFirstBatch = 8;

}  // namespace

bool SimGpu::conflicts(std::uint32_t a, std::uint32_t b) const {
  const Stream& sa = streams_[a];
  const Stream& sb = streams_[b];
  // A launched kernel keeps the place it launched with; a waiting one takes its stream's.
  const device::DomainId da = sa.cur.launched ? sa.cur.domain : sa.config.bandwidth_domain;
  const device::DomainId db = sb.cur.launched ? sb.cur.domain : sb.config.bandwidth_domain;
  if (da == db) return true;
  const SmSet& ma = sa.cur.launched ? sa.cur.allowed : sa.allowed;
  const SmSet& mb = sb.cur.launched ? sb.cur.allowed : sb.allowed;
  return ma.overlaps(mb);
}

bool SimGpu::isolated(std::uint32_t s) const {
  if (!options_.batch_isolated_kernels) return false;
  if (!free_.contains(streams_[s].allowed)) return false;
  for (std::uint32_t t = 0; t < streams_.size(); ++t) {
    if (t == s) continue;
    const Phase p = streams_[t].cur.phase;
    const bool active = p == Phase::kWaiting || p == Phase::kRunning || p == Phase::kBatched;
    if (active && conflicts(s, t)) return false;
  }
  return true;
}

void SimGpu::start_batch(std::uint32_t s) {
  Stream& st = streams_[s];
  Launch& l = st.cur;
  const core::Nanos now = engine_.now();
  l.launched = true;
  l.allowed = st.allowed;
  l.cap = st.config.max_sms;
  l.domain = st.config.bandwidth_domain;
  l.priority = st.config.priority;
  l.context = st.context;
  l.phase = Phase::kBatched;
  Submission& sub = st.queue.front();
  if (sub.started < 0) sub.started = now;

  // The same arithmetic, in the same order, as launch() on a set that is all free and a domain
  // with one member.
  const workload::KernelSequence& seq = *sub.sequence;
  const int in_set = st.allowed.count();
  const int limit = l.cap > 0 ? std::min(l.cap, in_set) : in_set;
  const double capacity = domains_[l.domain].capacity;
  if (st.batch_limit == 0) st.batch_limit = std::min(kFirstBatch, options_.max_batch_kernels);
  const auto max_items = static_cast<std::size_t>(st.batch_limit);
  st.batch.clear();
  Cursor c = st.cursor;
  std::int64_t left = st.left;
  core::Nanos t = now;
  core::Nanos host = st.host_free;  // the first kernel is launched: it is ready
  int most = 1;
  for (;;) {
    const workload::Kernel& k = kernel_at(seq, c);
    KernelInfo& info = info_at(st, c);
    const int n = std::max(std::min(info.sms_wanted, limit), 1);
    const KernelInfo& planned = fresh_plan(info, n, capacity);
    const core::Nanos end = t + planned.duration;
    st.batch.push_back(BatchItem{.kernel = &k,
                                 .cursor = c,
                                 .start = t,
                                 .end = end,
                                 .sms = n,
                                 .compute_share = planned.rates.compute_share,
                                 .demand = planned.rates.demand,
                                 .tail = planned.to_tail < 0 ? -1 : t + planned.to_tail,
                                 .tail_sms = planned.tail.sms,
                                 .launched = host,
                                 .left = left});
    most = std::max(most, n);
    t = end;
    Cursor next = c;
    if (--left == 0 || !advance(seq, next)) {
      st.batch_ends_submission = true;
      st.batch_next = next;
      break;
    }
    c = next;
    // The batch also stops at a kernel the host has not launched by the time it could start.
    const core::Nanos launched = std::max(host, st.host_start) + st.host_step;
    if (st.batch.size() >= max_items || launched > t) {
      st.batch_ends_submission = false;
      st.batch_next = c;
      break;
    }
    host = launched;
  }
  // Nothing else may use the set while the batch runs (any contender splits it first), so which
  // of its SMs count as held in between is not observable; the batch holds as many as its
  // widest kernel.
  l.held = st.allowed.lowest(most);
  free_ &= ~l.held;
  batched_.push_back(s);
  st.batch_timer = engine_.schedule_at(t, [this, s] { on_batch_done(s); });
}

double SimGpu::busy_sm_ns(const BatchItem& item, core::Nanos until) {
  const core::Nanos end = std::min(item.end, until);
  if (item.tail < 0 || item.tail >= end) return item.sms * static_cast<double>(end - item.start);
  return item.sms * static_cast<double>(item.tail - item.start) +
         item.tail_sms * static_cast<double>(end - item.tail);
}

void SimGpu::account_items(std::uint32_t s, std::span<const BatchItem> items) {
  for (const auto& item : items) {
    const auto dt = static_cast<double>(item.end - item.start);
    integrals_.sm_ns += busy_sm_ns(item, item.end);
    integrals_.compute += item.sms * item.compute_share * clock_cube_ * dt;
    integrals_.bytes += item.demand * dt;
  }
  integrals_.kernels += static_cast<std::int64_t>(items.size());
  if (observers_.empty()) return;
  // What every event of the run shares is looked up once. Each event is built whole in place:
  // patching a copy field by field and copying it stalls the loads on the fresh stores.
  const Stream& st = streams_[s];
  const Submission& sub = st.queue.front();
  const device::ContextId context = contexts_[st.cur.context].id;
  const device::DomainId domain = st.cur.domain;
  const std::uint64_t tag = sub.tag;
  const device::BlockRange range = sub.range;
  const bool whole = range.size() <= 0;
  for (const auto& item : items) {
    events_.push_back(device::KernelEvent{
        .stream = s,
        .context = context,
        .bandwidth_domain = domain,
        .kernel = item.kernel,
        .submission_tag = tag,
        .start = item.start,
        .end = item.end,
        .sms = item.sms,
        .blocks = whole ? device::BlockRange{.begin = 0, .end = item.kernel->blocks} : range,
        .yielded = false});
  }
}

void SimGpu::on_batch_done(std::uint32_t s) {
  begin_op();
  Stream& st = streams_[s];
  Launch& l = st.cur;
  st.batch_timer = 0;
  st.batch_limit = std::min(2 * st.batch_limit, options_.max_batch_kernels);
  st.host_free = st.batch.back().launched;
  st.ran += static_cast<std::int64_t>(st.batch.size());
  st.left = st.batch.back().left - 1;
  account_items(s, st.batch);
  st.batch.clear();
  free_ |= l.held;
  l.held = SmSet{};
  std::erase(batched_, s);
  dispatch_needed_ = true;
  st.cursor = st.batch_next;
  continue_stream(s, st.batch_ends_submission);
  end_op();
}

void SimGpu::split_batch(std::uint32_t s) {
  Stream& st = streams_[s];
  Launch& l = st.cur;
  const core::Nanos now = engine_.now();
  engine_.cancel(st.batch_timer);
  st.batch_timer = 0;
  st.batch_limit = std::min(kFirstBatch, options_.max_batch_kernels);
  std::erase(batched_, s);
  const std::size_t j = in_flight(st, now);
  account_items(s, std::span(st.batch).first(j));
  const BatchItem item = st.batch[j];
  st.host_free = item.launched;
  st.batch.clear();
  st.cursor = item.cursor;
  st.left = item.left;
  st.ran += static_cast<std::int64_t>(j);

  free_ |= l.held;
  l.kernel = item.kernel;
  KernelInfo& info = info_at(st, item.cursor);
  l.shape = info.shape;
  l.start = item.start;
  l.sms_at_start = item.sms;
  l.order = next_order_++;
  l.held = l.allowed.lowest(item.sms);
  l.held_sms = item.sms;
  free_ &= ~l.held;
  const KernelInfo& planned = fresh_plan(info, item.sms, domains_[l.domain].capacity);
  l.plan = planned.plan;
  l.rates = planned.rates;
  l.resident =
      std::min(info.occupancy, static_cast<int>(ceil_non_negative(info.blocks / item.sms)));
  set_tail(l, planned.tail);
  l.share = 1;
  l.left = 1;
  l.since = item.start;
  l.phase = Phase::kRunning;
  add_running(s);
  domains_[l.domain].members.push_back(s);
  // Its end and the start of its last wave stand as the batch computed them until something
  // changes its rate; a last wave already under way has given back its idle SMs.
  l.timer = engine_.schedule_at(item.end, [this, s] { on_kernel_done(s); });
  if (item.tail >= 0 && item.tail < now) {
    sync_until(l, item.tail);
    enter_tail(s);
  } else if (item.tail >= 0) {
    l.tail_timer = engine_.schedule_at(item.tail, [this, s] { on_tail(s); });
  }
}

void SimGpu::split_conflicting(std::uint32_t s) {
  for (std::size_t i = 0; i < batched_.size();) {
    const auto b = batched_[i];
    if (b != s && conflicts(s, b)) {
      split_batch(b);  // removes b from batched_
    } else {
      ++i;
    }
  }
}

}  // namespace tessera::sim
