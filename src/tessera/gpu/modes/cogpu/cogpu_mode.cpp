#include "tessera/gpu/modes/cogpu/cogpu_mode.hpp"

#include <algorithm>
#include <utility>

#include "tessera/core/try.hpp"
#include "tessera/device/occupancy.hpp"
#include "tessera/gpu/policy/initial_split.hpp"

namespace tessera::gpu {

using core::Code;
using core::Domain;

CoGpuMode::CoGpuMode(const CoGpuOptions& options, std::unique_ptr<RemapPolicy> policy)
    : options_(options), policy_(std::move(policy)) {}

// The executor outlives the device (SharingMode's lifetime contract), which may be gone already.
CoGpuMode::~CoGpuMode() {
  if (executor_ == nullptr) return;
  for (auto& c : contexts_) {
    if (c.remap_timer) executor_->cancel(*c.remap_timer);
  }
  if (residency_timer_) executor_->cancel(*residency_timer_);
  if (boundary_timer_) executor_->cancel(*boundary_timer_);
}

core::Status CoGpuMode::attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) {
  if (device_ != nullptr) return std::unexpected(already_attached(name()));
  if (!device.capabilities().sm_partitions) {
    return core::failf(Domain::kGpu, Code::kUnsupported,
                       "{} maps virtual contexts onto SM partitions, but {} cannot confine a "
                       "stream to an SM set; choose mps or time-slicing on this device",
                       name(), device.spec().name);
  }
  TESSERA_ASSIGN_OR_RETURN(auto table, TenantTable::make(name(), tenants));
  TESSERA_ASSIGN_OR_RETURN(const auto grid,
                           core::with_context(PartitionGrid::of(device.spec()), name()));
  const int n = static_cast<int>(tenants.size());
  if (n * grid.min_sms > grid.usable_sms) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "{}: {} tenants need a partition of at least {} SMs each, but {} has {} "
                       "usable SMs (room for {}); attach fewer tenants to this GPU",
                       name(), n, grid.min_sms, device.spec().name, grid.usable_sms,
                       grid.usable_sms / grid.min_sms);
  }
  // Until the first decision, the tenants split the GPU evenly.
  const InitialSplit split = initial_split(grid, tenants);
  const std::vector<std::size_t>& order = split.order;
  TESSERA_ASSIGN_OR_RETURN(const auto layout, plan_physical_contexts(grid, split.sms));

  const core::Nanos now = device.executor().now();
  std::vector<Context> contexts(tenants.size());
  device_ = &device;
  executor_ = &device.executor();
  runs_ = device.capabilities().early_end;
  grid_ = grid;
  layout_order_ = order;
  for (std::size_t k = 0; k < order.size(); ++k) {
    auto& c = contexts[order[k]];
    c.mask = c.target = c.owned = layout.partitions[k];
    c.sm_since = c.last_change = now;
  }
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    auto stream = device.create_stream(config_for(i, contexts[i].mask));
    if (!stream) {
      device_ = nullptr;
      executor_ = nullptr;
      return std::unexpected(stream.error().with_context(
          fmt::format("{}: stream for tenant '{}'", name(), tenants[i].name)));
    }
    contexts[i].stream = *stream;
    contexts[i].vc = VirtualContext(*stream);
  }
  tenants_ = std::move(table);
  contexts_ = std::move(contexts);
  attached_at_ = now;
  device.add_observer(this);
  return {};
}

device::StreamConfig CoGpuMode::config_for(std::size_t i, const device::SmMask& sms) const {
  return device::StreamConfig{.context = context_for(i),
                              .sms = sms,
                              .max_sms = 0,
                              .bandwidth_domain = device::kWholeDevice,
                              .priority = 0};
}

core::Status CoGpuMode::submit(TenantId tenant, workload::KernelSequencePtr sequence,
                               std::uint64_t tag, device::DoneCallback done) {
  TESSERA_ASSIGN_OR_RETURN(const auto i, tenants_.index_of(name(), tenant));
  if (failure_) return std::unexpected(*failure_);
  // Kernels are launched later from completions, where a rejected launch could not be reported
  // to the tenant: every launch rule is checked here, up front.
  if (sequence) {
    TESSERA_TRY(core::with_context(
        device::validate_sequence(device_->spec(), *sequence),
        fmt::format("{}: submission {} of tenant '{}'", name(), tag, tenants_.info(i).name)));
  }
  const auto phase = sequence ? sequence->phase : workload::Phase::kUnspecified;
  auto observe = [this, i, phase, done = std::move(done)](const device::SubmissionDone& d) {
    auto& ctx = contexts_[i];
    PhaseObservation seen{.latency = d.finished - d.started, .sms = ctx.mask.count()};
    if (phase == workload::Phase::kPrefill) ctx.prefill = seen;
    if (phase == workload::Phase::kDecode) {
      // What a running request sees between two of its tokens: the time since the previous
      // decode step ended, prefills and remap waits in between included.
      if (ctx.last_decode_end >= 0) seen.latency = d.finished - ctx.last_decode_end;
      ctx.last_decode_end = d.finished;
      ctx.decode = seen;
    }
    if (done) done(d);
  };
  auto& c = contexts_[i];
  // Whether requests are mid-generation is the step's to say: the serving engine's CPU time
  // between steps leaves the tenant without work while its requests still wait for tokens.
  if (phase == workload::Phase::kPrefill || phase == workload::Phase::kDecode) {
    c.decoding = phase == workload::Phase::kDecode || sequence->mid_generation;
    if (!c.decoding) c.last_decode_end = -1;
  }
  TESSERA_TRY(c.vc.push(std::move(sequence), tag, std::move(observe), executor_->now()));
  if (busy_ == 0) pump();
  if (failure_) return std::unexpected(*failure_);
  return {};
}

const RemapSnapshot& CoGpuMode::snapshot() {
  // Filled in place: the tenants' vector keeps its capacity from one decision to the next.
  RemapSnapshot& s = snapshot_;
  s.now = executor_->now();
  s.grid = grid_;
  s.min_residency = options_.remap_min_residency;
  s.tenants.clear();
  for (std::size_t i = 0; i < contexts_.size(); ++i) {
    const auto& c = contexts_[i];
    const auto& info = tenants_.info(i);
    s.tenants.push_back(TenantSnapshot{
        .id = info.id,
        .priority = info.priority,
        .latency_critical = info.latency_critical,
        .ttft_slo = info.ttft_slo,
        .tpot_slo = info.tpot_slo,
        .has_work = !c.vc.idle(),
        .next_phase = c.vc.has_next() ? c.vc.next_phase() : workload::Phase::kUnspecified,
        .decoding = c.decoding,
        .prefill = c.prefill,
        .decode = c.decode,
        .sms = c.target.count(),
        .last_change = c.last_change});
  }
  return s;
}

void CoGpuMode::decide() {
  const auto targets = policy_->decide(snapshot());
  if (targets.sms.size() != contexts_.size()) {
    return fail(core::Error(Domain::kGpu, Code::kInternal,
                            fmt::format("remap policy '{}' returned {} targets for {} tenants",
                                        policy_->name(), targets.sms.size(), contexts_.size())));
  }
  revisit_at_ = targets.revisit_at;
  // Most completions change nothing: then the partitions stand as they are.
  if (targets.sms == last_targets_) return schedule_residency_check();
  last_targets_ = targets.sms;
  std::vector<int> ordered;
  for (const auto i : layout_order_) ordered.push_back(targets.sms[i]);
  auto layout = plan_physical_contexts(grid_, ordered);
  if (!layout) {
    return fail(layout.error().with_context(fmt::format("remap policy '{}'", policy_->name())));
  }
  for (std::size_t k = 0; k < layout_order_.size(); ++k) {
    retarget(layout_order_[k], layout->partitions[k]);
  }
  schedule_residency_check();
}

void CoGpuMode::retarget(std::size_t i, const device::SmMask& target) {
  auto& c = contexts_[i];
  if (c.target == target) return;
  const core::Nanos now = executor_->now();
  c.target = target;
  c.last_change = now;
  switch (c.state) {
    case State::kRunning:
      c.state = State::kDraining;
      end_run(i);
      break;
    case State::kDraining:
      if (target == c.mask && !c.yield_requested) c.state = State::kRunning;
      break;
    case State::kWaiting: break;
    case State::kRemapping:
      executor_->cancel(*c.remap_timer);
      c.remap_timer.reset();
      set_owned(c, {});
      c.state = State::kWaiting;
      break;
  }
}

bool CoGpuMode::free_for(std::size_t i, const device::SmMask& sms) const {
  for (std::size_t j = 0; j < contexts_.size(); ++j) {
    if (j != i && contexts_[j].owned.overlaps(sms)) return false;
  }
  return true;
}

void CoGpuMode::set_owned(Context& c, const device::SmMask& sms) {
  const core::Nanos now = executor_->now();
  c.sm_ns += static_cast<double>(c.owned.count()) * static_cast<double>(now - c.sm_since);
  c.sm_since = now;
  c.owned = sms;
}

void CoGpuMode::pump() {
  if (device_ == nullptr || failure_) return;
  decide();
  // A context releasing SMs can let another take them, so sweep until nothing moves.
  for (bool moved = true; moved && !failure_;) {
    moved = false;
    for (std::size_t i = 0; i < contexts_.size() && !failure_; ++i) moved = step(i) || moved;
  }
  // Fed kernel by kernel, the policy would see that change at the next kernel boundary of any
  // context: every run ends there.
  if (std::exchange(inputs_changed_, false)) end_runs();
  const core::Nanos now = executor_->now();
  for (auto& c : contexts_) {
    const bool blocked = c.state != State::kRunning && !c.in_flight && c.vc.has_next();
    if (blocked && c.blocked_since < 0) c.blocked_since = now;
    if (!blocked && c.blocked_since >= 0) {
      remap_wait_ += now - c.blocked_since;
      c.blocked_since = -1;
    }
  }
}

bool CoGpuMode::step(std::size_t i) {
  auto& c = contexts_[i];
  switch (c.state) {
    case State::kRunning:
      if (!c.in_flight && c.vc.has_next()) {
        launch(i);
        return true;
      }
      return false;
    case State::kDraining:
      if (c.in_flight) {
        try_yield(i);
        return false;
      }
      set_owned(c, {});
      c.state = State::kWaiting;
      return true;
    case State::kWaiting:
      if (c.target.empty() || !free_for(i, c.target)) return false;
      set_owned(c, c.target);
      if (c.target == c.mask) {  // back where it was: nothing to move
        c.state = State::kRunning;
        return true;
      }
      c.state = State::kRemapping;
      c.remap_timer =
          executor_->schedule_after(options_.remap_cost, [this, i] { finish_remap(i); });
      return true;
    case State::kRemapping: return false;
  }
  return false;
}

void CoGpuMode::finish_remap(std::size_t i) {
  auto& c = contexts_[i];
  c.remap_timer.reset();
  if (auto st = device_->configure_stream(c.stream, config_for(i, c.target)); !st) {
    return fail(st.error().with_context(name()));
  }
  moved(c, c.target);
  c.state = State::kRunning;
  pump();
}

// The stream now runs on `to`: one remap done.
void CoGpuMode::moved(Context& c, const device::SmMask& to) {
  c.mask = to;
  ++remaps_;
}

void CoGpuMode::launch(std::size_t i) {
  auto& c = contexts_[i];
  const workload::Kernel& k = c.vc.next();
  const std::uint64_t tag = c.vc.next_tag();
  const core::Nanos now = executor_->now();
  auto done = [this, i](const device::SubmissionDone& d) { on_piece_done(i, d); };
  // From a nanosecond before a residency ends until the policy has seen it end, kernels go alone.
  const bool at_boundary = boundary_at_ != core::kNever && now >= boundary_at_ - 1;
  const std::int64_t run = runs_ && !at_boundary
                               ? c.vc.kernels_before_checkpointed(c.vc.kernels_left() - 1)
                               : std::int64_t{0};
  core::Status st;
  if (run > 0) {
    const device::KernelSpan span{.from = c.vc.next_position(), .count = run};
    auto sequence = c.vc.next_sequence();
    if (auto r = c.vc.launch_run(run, now); !r) return fail(r.error().with_context(name()));
    c.in_flight = true;
    c.in_run = true;
    c.in_flight_checkpoints = 0;
    st = device_->submit_span(c.stream, std::move(sequence), span, tag, std::move(done));
  } else {
    const int checkpoints = k.checkpoints;
    const device::KernelSpan span{.from = c.vc.next_position(), .count = 1};
    auto sequence = runs_ ? c.vc.next_sequence() : workload::single_kernel(k, c.vc.next_phase());
    const auto phase = c.vc.next_phase();
    if (auto r = c.vc.launch_blocks(k.blocks, now); !r) {
      return fail(r.error().with_context(name()));
    }
    // The submission's last kernel: what the policy sees of the context's next kernel changes.
    const auto next = c.vc.has_next() ? c.vc.next_phase() : workload::Phase::kUnspecified;
    if (next != phase) inputs_changed_ = true;
    c.in_flight = true;
    c.in_flight_checkpoints = checkpoints;
    st = runs_ ? device_->submit_span(c.stream, std::move(sequence), span, tag, std::move(done))
               : device_->submit(c.stream, std::move(sequence), tag, std::move(done));
  }
  if (!st)
    fail(st.error().with_context(fmt::format("{}: tenant '{}'", name(), tenants_.info(i).name)));
}

void CoGpuMode::end_run(std::size_t i) {
  auto& c = contexts_[i];
  if (!c.in_run || c.run_ended) return;
  c.run_ended = true;
  if (auto st = device_->end_after_head(c.stream); !st) fail(st.error().with_context(name()));
}

void CoGpuMode::end_runs() {
  for (std::size_t i = 0; i < contexts_.size(); ++i) end_run(i);
}

void CoGpuMode::try_yield(std::size_t i) {
  auto& c = contexts_[i];
  if (c.yield_requested || c.in_flight_checkpoints <= 0 ||
      !device_->capabilities().kernel_preemption) {
    return;
  }
  // The rest of the kernel starts on the stream's configuration when it yields, so it may only
  // yield into a partition no other context holds.
  const device::SmMask to = c.target;
  if (to.empty() || !free_for(i, to)) return;
  if (auto st = device_->configure_stream(c.stream, config_for(i, to)); !st) {
    return fail(st.error().with_context(name()));
  }
  set_owned(c, c.owned | to);
  c.yield_requested = true;
  c.yield_to = to;
  if (auto st = device_->request_yield(c.stream); !st) {
    return fail(st.error().with_context(name()));
  }
}

void CoGpuMode::on_kernel_complete(const device::KernelEvent& event) {
  if (!event.yielded) return;
  for (std::size_t i = 0; i < contexts_.size(); ++i) {
    auto& c = contexts_[i];
    if (c.stream != event.stream || !c.yield_requested) continue;
    c.yield_requested = false;
    ++preemptions_;
    set_owned(c, c.yield_to);
    moved(c, c.yield_to);
    c.state = c.mask == c.target ? State::kRunning : State::kDraining;
    if (busy_ == 0) pump();
    return;
  }
}

void CoGpuMode::on_piece_done(std::size_t i, const device::SubmissionDone& done) {
  auto& c = contexts_[i];
  c.in_flight = false;
  const bool run = std::exchange(c.in_run, false);
  c.run_ended = false;
  if (c.yield_requested) {  // it ran past its last checkpoint before the flag was seen
    c.yield_requested = false;
    set_owned(c, c.yield_to);
    moved(c, c.yield_to);
    c.state = c.mask == c.target ? State::kRunning : State::kDraining;
  }
  ++busy_;
  auto st =
      run ? c.vc.run_finished(done.kernels, done.finished) : c.vc.piece_finished(done.finished);
  --busy_;
  if (!st) return fail(st.error().with_context(name()));
  if (busy_ == 0) pump();
}

void CoGpuMode::schedule_residency_check() {
  if (runs_) schedule_boundary();
  // A partition held for its residency may shrink when it ends, and a policy deciding by time
  // may change its answer, with no event to say so.
  const core::Nanos now = executor_->now();
  core::Nanos at = revisit_at_ > now ? revisit_at_ : core::kNever;
  for (std::size_t i = 0; i < contexts_.size(); ++i) {
    const auto& c = contexts_[i];
    const core::Nanos until = c.last_change + options_.remap_min_residency;
    if (tenants_.info(i).latency_critical && c.vc.idle() && !c.target.empty() && until > now) {
      at = std::min(at, until);
    }
  }
  if (at == residency_check_at_) return;
  if (residency_timer_) executor_->cancel(*residency_timer_);
  residency_timer_.reset();
  residency_check_at_ = at;
  if (at == core::kNever) return;
  residency_timer_ = executor_->schedule_at(at, [this] {
    residency_timer_.reset();
    residency_check_at_ = core::kNever;
    pump();
  });
}

void CoGpuMode::schedule_boundary() {
  // Fed kernel by kernel, the policy would see a busy tenant's residency end at the first kernel
  // boundary after it; runs end a nanosecond before, so that boundary ends a piece.
  const core::Nanos now = executor_->now();
  core::Nanos at = core::kNever;
  for (std::size_t i = 0; i < contexts_.size(); ++i) {
    const auto& c = contexts_[i];
    const core::Nanos until = c.last_change + options_.remap_min_residency;
    if (tenants_.info(i).latency_critical && !c.vc.idle() && until > now) at = std::min(at, until);
  }
  if (at == boundary_at_) return;
  if (boundary_timer_) executor_->cancel(*boundary_timer_);
  boundary_timer_.reset();
  boundary_at_ = at;
  if (at == core::kNever) return;
  boundary_timer_ = executor_->schedule_at(std::max(now, at - 1), [this] {
    boundary_timer_.reset();
    end_runs();
  });
}

void CoGpuMode::fail(core::Error error) {
  if (!failure_) failure_ = std::move(error);
}

std::vector<PartitionInfo> CoGpuMode::partitions() const {
  if (device_ == nullptr) return {};
  return {PartitionInfo{.name = "remapped",
                        .sms = device::SmMask::first(device_->spec().sms),
                        .bandwidth_domain = device::kWholeDevice,
                        .tenants = tenants_.ids()}};
}

std::vector<ModeCounter> CoGpuMode::counters() const {
  std::vector<ModeCounter> out = {
      {"remaps", static_cast<double>(remaps_)},
      {"preemptions", static_cast<double>(preemptions_)},
      {"remap_wait_ms", core::to_millis(remap_wait_)},
  };
  if (device_ == nullptr) return out;
  const core::Nanos now = executor_->now();
  core::Nanos wait = remap_wait_;
  for (const auto& c : contexts_) {
    if (c.blocked_since >= 0) wait += now - c.blocked_since;
  }
  out[2].value = core::to_millis(wait);
  for (std::size_t i = 0; i < contexts_.size(); ++i) {
    const auto& c = contexts_[i];
    const double sm_ns =
        c.sm_ns + static_cast<double>(c.owned.count()) * static_cast<double>(now - c.sm_since);
    const core::Nanos span = now - attached_at_;
    out.push_back({fmt::format("mean_partition_sms[{}]", tenants_.info(i).name),
                   span > 0 ? sm_ns / static_cast<double>(span) : c.owned.count()});
  }
  return out;
}

}  // namespace tessera::gpu
