#include "tessera/gpu/modes/lithos/lithos_mode.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "tessera/core/try.hpp"
#include "tessera/device/occupancy.hpp"
#include "tessera/gpu/policy/right_sizer.hpp"

namespace tessera::gpu {

using core::Code;
using core::Domain;

namespace {

// Single-kernel sequences kept per tenant so relaunching a kernel (decoder layers repeat, training
// iterations resubmit) does not allocate one per piece.
constexpr std::size_t kSequenceCacheSize = 256;

bool same_launch(const workload::Kernel& a, const workload::Kernel& b) {
  // The name last: comparing it costs a memcmp, the rest a word each.
  return a.kind == b.kind && a.pipe == b.pipe && a.blocks == b.blocks &&
         a.block.threads == b.block.threads &&
         a.block.registers_per_thread == b.block.registers_per_thread &&
         a.block.shared_memory_bytes == b.block.shared_memory_bytes &&
         a.flops_per_block == b.flops_per_block && a.bytes_per_block == b.bytes_per_block &&
         a.block_independent == b.block_independent && a.checkpoints == b.checkpoints &&
         a.name == b.name;
}

}  // namespace

struct LithosMode::Slot {
  device::StreamId stream = 0;
  VirtualContext context;
  TpcSet configured;  // the TPCs the stream was last confined to
  // The piece in flight, if any.
  bool busy = false;
  const workload::Kernel* kernel = nullptr;
  device::BlockRange range;
  int tpc_count = 0;
  int borrowed = 0;
  int saved_tpcs = 0;  // TPCs right-sizing gave up for it
  core::Nanos launched = 0;
  double clock_mhz = 0;
  // Tenants whose launches took back TPCs this piece still runs on: they wait for it to end.
  std::vector<std::size_t> blocking;
  int waiting_on = 0;  // this tenant's launch waits for that many borrowers' pieces
  core::Nanos wait_since = 0;
  struct Cached {
    workload::Kernel kernel;
    workload::Phase phase;
    workload::KernelSequencePtr sequence;
  };
  std::vector<Cached> cache;
  std::size_t cache_next = 0;  // the entry to replace next
  std::size_t cache_hit = 0;   // the entry found last
};

// KernelProfiles' boost-clock predictions, stretched to the current clock by the governor's
// learned sensitivity of the kernel (unknown sensitivity: compute-bound, the slowest case).
class LithosMode::Predictor final : public LatencyPredictor {
 public:
  Predictor(const hw::GpuSpec& spec, const KernelProfiles& profiles,
            const std::optional<DvfsGovernor>& governor)
      : spec_(spec), profiles_(profiles), governor_(governor) {}
  void set_clock(double mhz) { clock_mhz_ = mhz; }
  // Looks up the profiles of the kernels a decision is about to size, once each: the scheduler
  // predicts several piece sizes of each. Kernels are known by address, so forget() them when
  // the decision is made.
  void prepare(std::span<const TenantState> tenants) {
    found_.clear();
    for (const auto& t : tenants) {
      if (t.ready != nullptr) found_.emplace_back(t.ready, profiles_.lookup(spec_, *t.ready));
    }
  }

  void forget() { found_.clear(); }

  std::optional<core::Nanos> predict(const workload::Kernel& kernel, std::int64_t blocks,
                                     int tpcs) const override {
    const auto it = std::find_if(found_.begin(), found_.end(),
                                 [&](const auto& f) { return f.first == &kernel; });
    auto at_boost = it != found_.end() ? profiles_.predict(spec_, it->second, blocks, tpcs)
                                       : profiles_.predict(spec_, kernel, blocks, tpcs);
    if (!at_boost || !governor_ || !(clock_mhz_ > 0)) return at_boost;
    const double f_max = governor_->max_clock_mhz();
    if (clock_mhz_ >= f_max) return at_boost;
    const double s = governor_->sensitivity(kernel);
    return core::round_to_nanos(static_cast<double>(*at_boost) *
                                (1 + s * (f_max / clock_mhz_ - 1)));
  }

 private:
  const hw::GpuSpec& spec_;
  const KernelProfiles& profiles_;
  const std::optional<DvfsGovernor>& governor_;
  double clock_mhz_ = 0;
  std::vector<std::pair<const workload::Kernel*, KernelProfiles::Lookup>> found_;
};

LithosMode::LithosMode(const LithosOptions& options) : options_(options) {}
LithosMode::~LithosMode() = default;

core::Status LithosMode::attach(device::GpuDevice& device, std::span<const TenantInfo> tenants) {
  if (device_ != nullptr) return std::unexpected(already_attached(name()));
  const auto caps = device.capabilities();
  if (!caps.sm_partitions || !caps.block_ranges) {
    const std::string_view missing = caps.sm_partitions  ? "block-range launches"
                                     : caps.block_ranges ? "SM partitions"
                                                         : "SM partitions and block-range launches";
    return core::failf(Domain::kGpu, Code::kUnsupported,
                       "lithos confines each launch to a TPC set and splits kernels into "
                       "block-range atoms; {} lacks {}; choose mps or time-slicing on this device",
                       device.spec().name, missing);
  }
  if (options_.dvfs && !caps.clock_control) {
    return core::failf(Domain::kGpu, Code::kUnsupported,
                       "lithos: dvfs sets the graphics clock and {} cannot; turn dvfs off on "
                       "this device",
                       device.spec().name);
  }
  TESSERA_ASSIGN_OR_RETURN(auto table, TenantTable::make(name(), tenants));
  TESSERA_ASSIGN_OR_RETURN(auto scheduler,
                           TpcScheduler::make(device.spec(), tenants, options_.atom_duration));
  std::optional<DvfsGovernor> governor;
  if (options_.dvfs) {
    TESSERA_ASSIGN_OR_RETURN(
        auto g, DvfsGovernor::make(candidate_clocks(device.spec()), options_.latency_slip));
    governor.emplace(std::move(g));
  }
  std::vector<Slot> slots(table.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    const auto sms = sms_of(device.spec(), scheduler.owned(i));
    const device::StreamConfig config{.context = context_for(i),
                                      .sms = sms,
                                      .max_sms = 0,
                                      .bandwidth_domain = device::kWholeDevice,
                                      .priority = 0};
    TESSERA_ASSIGN_OR_RETURN(const auto stream, device.create_stream(config));
    slots[i].stream = stream;
    slots[i].context = VirtualContext(stream);
    slots[i].configured = scheduler.owned(i);
    slots[i].blocking.reserve(table.size());
    slots[i].cache.reserve(kSequenceCacheSize);
  }
  board_ = TpcBoard(scheduler.tpcs(), table.size());
  states_.assign(table.size(), TenantState{});
  launches_.reserve(table.size());
  tenants_ = std::move(table);
  scheduler_.emplace(std::move(scheduler));
  slots_ = std::move(slots);
  governor_ = std::move(governor);
  predictor_ = std::make_unique<Predictor>(device.spec(), profiles_, governor_);
  device_ = &device;
  return {};
}

core::Status LithosMode::submit(TenantId tenant, workload::KernelSequencePtr sequence,
                                std::uint64_t tag, device::DoneCallback done) {
  if (device_ == nullptr) {
    return core::fail(Domain::kGpu, Code::kFailedPrecondition,
                      "lithos: submit before attach; attach the mode to a device first");
  }
  TESSERA_ASSIGN_OR_RETURN(const auto index, tenants_.index_of(name(), tenant));
  if (deferred_error_) {
    return std::unexpected(deferred_error_->with_context("lithos: an earlier launch failed"));
  }
  // Pieces are launched later, from completion callbacks, where an error has nowhere to go: a
  // kernel the device would reject is refused here, with the whole submission.
  if (sequence) {
    TESSERA_TRY(core::with_context(
        device::validate_sequence(device_->spec(), *sequence),
        fmt::format("lithos: tenant '{}' submission {}", tenants_.info(index).name, tag)));
  }
  TESSERA_TRY(slots_[index].context.push(std::move(sequence), tag, std::move(done),
                                         device_->executor().now()));
  schedule();
  // A launch this submission led to may have failed: report it now, not only on a later submit
  // that may never come.
  if (deferred_error_)
    return std::unexpected(deferred_error_->with_context("lithos: a launch failed"));
  return {};
}

int LithosMode::usable_tpcs(const workload::Kernel& kernel) const {
  const auto& spec = device_->spec();
  // A grid spreads one block per SM before stacking blocks, so TPCs past its block count would
  // idle; they stay free to lend.
  const std::int64_t grid_tpcs =
      (kernel.blocks + spec.sms_per_tpc - 1) / std::max(1, spec.sms_per_tpc);
  return static_cast<int>(std::min<std::int64_t>(grid_tpcs, spec.tpcs));
}

int LithosMode::tpc_need(const workload::Kernel& kernel) const {
  const int max = usable_tpcs(kernel);
  if (!options_.right_sizing) return max;
  return right_sized_tpcs(profiles_.samples(kernel), profiles_.fit(kernel), max,
                          options_.latency_slip);
}

void LithosMode::schedule() {
  if (scheduling_) {
    again_ = true;
    return;
  }
  scheduling_ = true;
  do {
    again_ = false;
    const core::Nanos now = device_->executor().now();
    for (std::size_t t = 0; t < slots_.size(); ++t) {
      const Slot& s = slots_[t];
      TenantState& st = states_[t];
      st.has_work = !s.context.idle();
      st.ready = !s.busy && s.context.has_next() ? &s.context.next() : nullptr;
      st.next_block = st.ready != nullptr ? s.context.next_block() : 0;
      st.tpc_need = st.ready != nullptr ? tpc_need(*st.ready) : 0;
    }
    predictor_->set_clock(device_->clock_mhz());
    predictor_->prepare(states_);
    scheduler_->decide(board_, states_, now, *predictor_, launches_);
    predictor_->forget();
    for (const auto& l : launches_) {
      if (auto ok = launch(l); !ok && !deferred_error_) deferred_error_ = ok.error();
    }
  } while (again_);
  scheduling_ = false;
}

workload::KernelSequencePtr LithosMode::sequence_for(Slot& slot, const workload::Kernel& kernel,
                                                     workload::Phase phase) {
  // Kernels come back in the order they last came (decoder layers, training iterations): start
  // after the last hit.
  const std::size_t n = slot.cache.size();
  const std::size_t start = n == 0 ? 0 : (slot.cache_hit + 1) % n;
  for (const auto& [from, to] : {std::pair{start, n}, std::pair{std::size_t{0}, start}}) {
    for (std::size_t at = from; at < to; ++at) {
      const auto& c = slot.cache[at];
      if (c.phase == phase && same_launch(c.kernel, kernel)) {
        slot.cache_hit = at;
        return c.sequence;
      }
    }
  }
  Slot::Cached entry{
      .kernel = kernel, .phase = phase, .sequence = workload::single_kernel(kernel, phase)};
  if (slot.cache.size() < kSequenceCacheSize) {
    slot.cache.push_back(std::move(entry));
    return slot.cache.back().sequence;
  }
  auto& victim = slot.cache[slot.cache_next];
  slot.cache_next = (slot.cache_next + 1) % kSequenceCacheSize;
  victim = std::move(entry);
  return victim.sequence;
}

core::Status LithosMode::launch(const TpcLaunch& l) {
  const std::size_t t = l.tenant;
  Slot& s = slots_[t];
  const core::Nanos now = device_->executor().now();
  const workload::Kernel& kernel = s.context.next();
  const auto phase = s.context.next_phase();
  const auto tag = s.context.next_tag();
  const bool whole = l.atom.range.begin == 0 && l.atom.range.end == kernel.blocks;
  auto sequence = sequence_for(s, kernel, phase);

  // Bookkeeping first, so a completion delivered from inside the device call finds it done.
  const core::Nanos until = l.atom.predicted ? now + *l.atom.predicted : kUnknownEnd;
  const bool was_waiting = s.waiting_on > 0;
  for (std::size_t r = 0; r < slots_.size(); ++r) {
    if (r == t || (board_.running(r) & l.tpcs).none()) continue;
    auto& blocking = slots_[r].blocking;
    if (std::find(blocking.begin(), blocking.end(), t) == blocking.end()) {
      blocking.push_back(t);
      ++s.waiting_on;
    }
  }
  board_.launch(t, l.tpcs, until);
  if (!was_waiting && s.waiting_on > 0) s.wait_since = now;
  s.busy = true;
  s.kernel = &kernel;
  s.range = l.atom.range;
  s.tpc_count = l.tpc_count;
  s.borrowed = l.borrowed;
  s.saved_tpcs =
      options_.right_sizing && l.borrowed == 0 ? std::max(0, usable_tpcs(kernel) - l.tpc_count) : 0;
  s.launched = now;
  s.clock_mhz = device_->clock_mhz();
  TESSERA_TRY(s.context.launch_blocks(l.atom.range.end, now));

  ++counters_.pieces;
  counters_.tpcs_allocated += l.tpc_count;
  counters_.tpc_lendings += l.borrowed;
  if (whole) {
    ++counters_.kernels_whole;
  } else {
    ++counters_.atoms;
  }
  if (l.borrowed > 0 && l.atom.reason == AtomReason::kNotSplittable) {
    ++counters_.kernels_not_splittable;
  }

  if (l.tpcs != s.configured) {
    const device::StreamConfig config{.context = context_for(t),
                                      .sms = sms_of(device_->spec(), l.tpcs),
                                      .max_sms = 0,
                                      .bandwidth_domain = device::kWholeDevice,
                                      .priority = 0};
    TESSERA_TRY(device_->configure_stream(s.stream, config));
    s.configured = l.tpcs;
  }
  auto done = [this, t](const device::SubmissionDone& d) { piece_done(t, d); };
  if (whole) return device_->submit(s.stream, std::move(sequence), tag, std::move(done));
  return device_->submit_range(s.stream, std::move(sequence), l.atom.range, tag, std::move(done));
}

void LithosMode::piece_done(std::size_t t, const device::SubmissionDone& d) {
  Slot& s = slots_[t];
  const core::Nanos now = device_->executor().now();
  const core::Nanos latency = d.finished - d.started;
  profiles_.record(device_->spec(), *s.kernel, s.range.size(), s.tpc_count, s.clock_mhz, latency);

  const double held_s = core::to_seconds(now - s.launched);
  counters_.tpc_seconds_lent += s.borrowed * held_s;
  counters_.tpc_seconds_saved += s.saved_tpcs * held_s;
  board_.finish(t);
  for (const std::size_t w : s.blocking) {
    Slot& owner = slots_[w];
    if (--owner.waiting_on == 0) {
      ++counters_.hp_waits;
      counters_.hp_wait_total += now - owner.wait_since;
    }
  }
  s.blocking.clear();
  s.busy = false;
  if (governor_) tune_clock(s, latency);

  if (auto ok = s.context.piece_finished(now); !ok && !deferred_error_) {
    deferred_error_ = ok.error();
  }
  schedule();
}

void LithosMode::tune_clock(const Slot& s, core::Nanos latency) {
  const auto& spec = device_->spec();
  const workload::Kernel& k = *s.kernel;
  // The governor compares latencies of one kernel across clocks: pieces differ in blocks and
  // TPCs, so each is scaled to the whole grid on every TPC by the profile's curve (learned at the
  // boost clock; its shape is assumed not to change with the clock).
  const auto piece = profiles_.predict(spec, k, s.range.size(), s.tpc_count);
  const auto full = profiles_.predict(spec, k, k.blocks, spec.tpcs);
  if (piece && full && *piece > 0) {
    const double scale = static_cast<double>(*full) / static_cast<double>(*piece);
    governor_->observe(key_of(k), s.clock_mhz,
                       core::round_to_nanos(static_cast<double>(latency) * scale));
  }
  const double target = governor_->probe_clock_mhz().value_or(governor_->choose_clock_mhz());
  if (target > 0 && target != device_->clock_mhz()) {
    if (auto ok = device_->set_clock_mhz(target); !ok) {
      if (!deferred_error_) deferred_error_ = ok.error();
      return;
    }
    ++counters_.clock_changes;
  }
}

std::vector<PartitionInfo> LithosMode::partitions() const {
  std::vector<PartitionInfo> out;
  if (device_ == nullptr) return out;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (scheduler_->owned_count(i) == 0) continue;
    out.push_back(PartitionInfo{.name = tenants_.info(i).name,
                                .sms = sms_of(device_->spec(), scheduler_->owned(i)),
                                .bandwidth_domain = device::kWholeDevice,
                                .tenants = {tenants_.info(i).id}});
  }
  return out;
}

std::vector<ModeCounter> LithosMode::counters() const {
  const auto& c = counters_;
  const auto n = [](std::int64_t v) { return static_cast<double>(v); };
  return {
      {"atoms", n(c.atoms)},
      {"kernels_whole", n(c.kernels_whole)},
      {"kernels_not_splittable", n(c.kernels_not_splittable)},
      {"tpc_lendings", n(c.tpc_lendings)},
      {"tpc_seconds_lent", c.tpc_seconds_lent},
      {"hp_waits", n(c.hp_waits)},
      {"mean_hp_wait_us", c.hp_waits > 0 ? core::to_micros(c.hp_wait_total) / n(c.hp_waits) : 0.0},
      {"mean_tpcs_allocated", c.pieces > 0 ? n(c.tpcs_allocated) / n(c.pieces) : 0.0},
      {"tpc_seconds_saved", c.tpc_seconds_saved},
      {"clock_changes", n(c.clock_changes)},
  };
}

}  // namespace tessera::gpu
