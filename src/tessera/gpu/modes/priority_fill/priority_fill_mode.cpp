#include "tessera/gpu/modes/priority_fill/priority_fill_mode.hpp"

#include <algorithm>

#include "tessera/core/try.hpp"
#include "tessera/gpu/policy/remap_policy.hpp"

namespace tessera::gpu {

using core::Code;
using core::Domain;

namespace {

// Tenant `index`'s stream: its context, the SM set the policy gives it and its priority.
device::StreamConfig stream_config(std::size_t index, const device::SmMask& sms, int priority) {
  return device::StreamConfig{.context = context_for(index),
                              .sms = sms,
                              .max_sms = 0,
                              .bandwidth_domain = device::kWholeDevice,
                              .priority = priority};
}

}  // namespace

core::Status PriorityFillMode::attach(device::GpuDevice& device,
                                      std::span<const TenantInfo> tenants) {
  if (device_ != nullptr) return std::unexpected(already_attached(name()));
  const auto caps = device.capabilities();
  if (!caps.sm_partitions) {
    return core::failf(Domain::kGpu, Code::kUnsupported,
                       "priority-fill confines best-effort work to an SM set, and {} has no SM "
                       "partitions; use mps on it",
                       device.spec().name);
  }
  TESSERA_ASSIGN_OR_RETURN(auto grid, PartitionGrid::of(device.spec()));
  TESSERA_ASSIGN_OR_RETURN(auto table, TenantTable::make(name(), tenants));
  std::vector<FillTenant> state;
  for (std::size_t i = 0; i < table.size(); ++i) {
    const TenantInfo& info = table.info(i);
    state.push_back(FillTenant{
        .latency_critical = served_first(info.latency_critical, info.ttft_slo, info.tpot_slo),
        .priority = info.priority});
  }
  // Without stream priorities, the reserve alone protects latency-critical work.
  auto priorities =
      caps.stream_priorities ? fill_stream_priorities(state) : std::vector<int>(state.size(), 0);
  const int floor = reserve_sms(grid, options_.best_effort_share);
  auto sets = fill_sm_sets(grid, floor, state);
  std::vector<device::StreamId> streams;
  for (std::size_t i = 0; i < table.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(const auto stream,
                             device.create_stream(stream_config(i, sets[i], priorities[i])));
    streams.push_back(stream);
  }
  tenants_ = std::move(table);
  grid_ = grid;
  in_flight_.assign(state.size(), 0);
  state_ = std::move(state);
  streams_ = std::move(streams);
  priorities_ = std::move(priorities);
  sets_ = std::move(sets);
  floor_ = floor;
  reserve_ = floor;
  device_ = &device;
  attached_at_ = device.executor().now();
  accounted_to_ = attached_at_;
  return {};
}

core::Status PriorityFillMode::submit(TenantId tenant, workload::KernelSequencePtr sequence,
                                      std::uint64_t tag, device::DoneCallback done) {
  TESSERA_ASSIGN_OR_RETURN(const auto index, tenants_.index_of(name(), tenant));
  if (failure_) return std::unexpected(*failure_);
  if (count(index, +1)) resize();
  const workload::Phase phase = sequence ? sequence->phase : workload::Phase::kUnspecified;
  auto status =
      device_->submit(streams_[index], std::move(sequence), tag,
                      [this, index, phase, done = std::move(done)](
                          const device::SubmissionDone& d) { on_done(index, phase, d, done); });
  if (!status && count(index, -1)) resize();
  return status;
}

bool PriorityFillMode::count(std::size_t index, int delta) {
  FillTenant& t = state_[index];
  const bool was_busy = t.busy;
  in_flight_[index] += delta;
  t.busy = in_flight_[index] > 0;
  return t.latency_critical && t.busy != was_busy;
}

void PriorityFillMode::on_done(std::size_t index, workload::Phase phase,
                               const device::SubmissionDone& done,
                               const device::DoneCallback& callback) {
  const bool resized = options_.slo_guided && follow_slack(index, phase, done);
  const bool changed = count(index, -1) || resized;
  // The tenant's next submission, if its callback makes one at once, keeps the reserve in place:
  // the sets are recomputed only after it.
  if (callback) callback(done);
  if (changed) resize();
}

bool PriorityFillMode::follow_slack(std::size_t index, workload::Phase phase,
                                    const device::SubmissionDone& done) {
  if (!state_[index].latency_critical) return false;
  const TenantInfo& info = tenants_.info(index);
  const core::Nanos target = phase == workload::Phase::kDecode    ? info.tpot_slo
                             : phase == workload::Phase::kPrefill ? info.ttft_slo
                                                                  : 0;
  const auto budget = static_cast<core::Nanos>(kSloStepBudget * static_cast<double>(target));
  const int next = next_reserve(grid_, floor_, reserve_, done.finished - done.submitted, budget);
  if (next == reserve_) return false;
  account_reserve(device_->executor().now());
  reserve_ = next;
  return true;
}

void PriorityFillMode::account_reserve(core::Nanos now) {
  if (reserve_since_ >= 0) {
    reserve_sm_ns_ += static_cast<double>(reserve_) * static_cast<double>(now - accounted_to_);
  }
  accounted_to_ = now;
}

void PriorityFillMode::resize() {
  auto sets = fill_sm_sets(grid_, reserve_, state_);
  if (sets == sets_) return;
  const core::Nanos now = device_->executor().now();
  account_reserve(now);
  const bool reserved =
      std::any_of(sets.begin(), sets.end(), [](const device::SmMask& m) { return !m.empty(); });
  if (reserved && reserve_since_ < 0) {
    reserve_since_ = now;
  } else if (!reserved && reserve_since_ >= 0) {
    reserve_time_ += now - reserve_since_;
    reserve_since_ = -1;
  }
  for (std::size_t i = 0; i < sets.size(); ++i) {
    if (sets[i] == sets_[i]) continue;
    const auto status =
        device_->configure_stream(streams_[i], stream_config(i, sets[i], priorities_[i]));
    if (!status) {
      if (!failure_) failure_ = status.error();
      continue;
    }
    sets_[i] = sets[i];
  }
  ++resizes_;
}

std::vector<PartitionInfo> PriorityFillMode::partitions() const {
  if (device_ == nullptr) return {};
  return {PartitionInfo{.name = "shared",
                        .sms = device::SmMask::first(device_->spec().sms),
                        .bandwidth_domain = device::kWholeDevice,
                        .tenants = tenants_.ids()}};
}

std::vector<ModeCounter> PriorityFillMode::counters() const {
  if (device_ == nullptr) return {};
  const core::Nanos now = device_->executor().now();
  const core::Nanos held = reserve_time_ + (reserve_since_ >= 0 ? now - reserve_since_ : 0);
  const auto elapsed = static_cast<double>(std::max<core::Nanos>(1, now - attached_at_));
  std::vector<ModeCounter> out = {{"reserve_time_fraction", static_cast<double>(held) / elapsed},
                                  {"resizes", static_cast<double>(resizes_)}};
  if (options_.slo_guided) {
    const double sm_ns =
        reserve_sm_ns_ + (reserve_since_ >= 0 ? static_cast<double>(reserve_) *
                                                    static_cast<double>(now - accounted_to_)
                                              : 0.0);
    out.push_back({"mean_reserve_sms", held > 0 ? sm_ns / static_cast<double>(held) : 0.0});
  }
  return out;
}

}  // namespace tessera::gpu
