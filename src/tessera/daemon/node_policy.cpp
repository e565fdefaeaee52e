#include "tessera/daemon/node_policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "tessera/gpu/policy/cogpu_policy.hpp"
#include "tessera/gpu/policy/fill_policy.hpp"
#include "tessera/gpu/policy/physical_contexts.hpp"
#include "tessera/gpu/policy/tpot_first_policy.hpp"

namespace tessera::daemon {
namespace {

using daemon_abi::Assignment;

// An SM set as an assignment: empty is `empty_is` (a hold or the whole GPU); otherwise the range
// from its lowest to its highest SM (the policies here only make contiguous sets).
Assignment assignment_of(const device::SmMask& mask, std::uint32_t empty_is, int priority) {
  const auto p = static_cast<std::uint32_t>(priority);
  const int count = mask.count();
  if (count == 0) return {.first_sm = 0, .sms = empty_is, .sequence = 0, .priority = p};
  const int first = mask.first_from(0);
  return {.first_sm = static_cast<std::uint32_t>(first),
          .sms = static_cast<std::uint32_t>(count),
          .sequence = 0,
          .priority = p};
}

// A remap policy's sizes laid out as disjoint ranges, every stream at the least priority.
class RemapLayout final : public NodePolicy {
 public:
  explicit RemapLayout(std::unique_ptr<gpu::RemapPolicy> policy) : policy_(std::move(policy)) {}
  std::string_view name() const override { return policy_->name(); }

  std::optional<std::vector<Assignment>> decide(const gpu::RemapSnapshot& snapshot,
                                                const PolicyInputs& inputs) const override {
    const gpu::RemapTargets targets = policy_->decide(snapshot);
    auto layout = gpu::plan_physical_contexts(snapshot.grid, targets.sms, inputs.names);
    // A policy's targets always fit the grid (RemapTargets' contract); if one did not, the
    // tenants keep their assignments rather than get overlapping SMs.
    if (!layout) return std::nullopt;
    std::vector<Assignment> out;
    out.reserve(layout->partitions.size());
    for (const device::SmMask& mask : layout->partitions) {
      out.push_back(assignment_of(mask, daemon_abi::kHoldSms, 0));
    }
    return out;
  }

 private:
  std::unique_ptr<gpu::RemapPolicy> policy_;
};

class PriorityFill final : public NodePolicy {
 public:
  explicit PriorityFill(double best_effort_share) : share_(best_effort_share) {}
  std::string_view name() const override { return "priority-fill"; }
  std::string note(bool latency_critical, bool has_target) const override {
    if (!latency_critical || has_target) return {};
    return "latency-critical without a TPOT or TTFT target: priority-fill serves it as "
           "best-effort (set TESSERA_TPOT_SLO_MS or TESSERA_TTFT_SLO_MS)";
  }

  std::optional<std::vector<Assignment>> decide(const gpu::RemapSnapshot& snapshot,
                                                const PolicyInputs& inputs) const override {
    std::vector<gpu::FillTenant> tenants;
    tenants.reserve(snapshot.tenants.size());
    for (const gpu::TenantSnapshot& t : snapshot.tenants) {
      tenants.push_back(gpu::FillTenant{
          .latency_critical = gpu::served_first(t.latency_critical, t.ttft_slo, t.tpot_slo),
          .priority = t.priority,
          .busy = t.has_work});
    }
    const auto priorities = gpu::fill_stream_priorities(tenants);
    const int reserve =
        inputs.reserve_sms > 0 ? inputs.reserve_sms : gpu::reserve_sms(snapshot.grid, share_);
    const auto sets = gpu::fill_sm_sets(snapshot.grid, reserve, tenants);
    std::vector<Assignment> out;
    out.reserve(sets.size());
    for (std::size_t i = 0; i < sets.size(); ++i) {
      out.push_back(assignment_of(sets[i], daemon_abi::kWholeGpuSms, priorities[i]));
    }
    return out;
  }

 private:
  double share_;
};

// Fixed slices, whatever the tenants do: each its SM share of the usable SMs (rounded down to the
// grid, at least its minimum), those without one an even split of what the shares leave, laid out
// disjoint in registration order. A tenant that no longer fits (more tenants than minimum
// partitions) is held. Like the simulator's static-partitions mode, or MIG slices without memory.
class StaticPartitions final : public NodePolicy {
 public:
  std::string_view name() const override { return "static-partitions"; }

  std::optional<std::vector<Assignment>> decide(const gpu::RemapSnapshot& snapshot,
                                                const PolicyInputs&) const override {
    const gpu::PartitionGrid& grid = snapshot.grid;
    double explicit_sum = 0;
    int even = 0;
    for (const gpu::TenantSnapshot& t : snapshot.tenants) {
      explicit_sum += t.sm_share;
      if (t.sm_share == 0) ++even;
    }
    const double even_share = even > 0 ? std::max(0.0, 1 - explicit_sum) / even : 0;
    std::vector<Assignment> out;
    out.reserve(snapshot.tenants.size());
    int next = 0;
    for (const gpu::TenantSnapshot& t : snapshot.tenants) {
      const double share = t.sm_share > 0 ? t.sm_share : even_share;
      const auto wanted = static_cast<int>(share * grid.usable_sms + 1e-9);
      int sms = grid.round(std::max(1, wanted));
      if (next + sms > grid.usable_sms) sms = grid.round(grid.usable_sms - next);
      if (sms < grid.min_sms || next + sms > grid.usable_sms) sms = 0;
      out.push_back(sms == 0 ? Assignment{.first_sm = 0, .sms = daemon_abi::kHoldSms}
                             : Assignment{.first_sm = static_cast<std::uint32_t>(next),
                                          .sms = static_cast<std::uint32_t>(sms)});
      next += sms;
    }
    return out;
  }
};

struct PolicyEntry {
  std::string_view name;
  std::unique_ptr<NodePolicy> (*make)(const NodePolicyOptions&);
};
template <class P>
std::unique_ptr<NodePolicy> remap(const NodePolicyOptions&) {
  return std::make_unique<RemapLayout>(std::make_unique<P>());
}
std::unique_ptr<NodePolicy> fill(const NodePolicyOptions& o) {
  return std::make_unique<PriorityFill>(o.best_effort_share);
}
std::unique_ptr<NodePolicy> fixed(const NodePolicyOptions&) {
  return std::make_unique<StaticPartitions>();
}
constexpr PolicyEntry kPolicies[] = {
    {"priority-fill", &fill},
    {"cogpu", &remap<gpu::CoGpuPolicy>},
    {"tpot-first", &remap<gpu::TpotFirstPolicy>},
    {"static-partitions", &fixed},
};

}  // namespace

core::Result<std::unique_ptr<NodePolicy>> make_node_policy(std::string_view name,
                                                           const NodePolicyOptions& options) {
  if (!(options.best_effort_share > 0 && options.best_effort_share <= 1)) {
    return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                       "best-effort share {}: must be in (0, 1]", options.best_effort_share);
  }
  for (const PolicyEntry& p : kPolicies) {
    if (p.name == name) return p.make(options);
  }
  return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                     "unknown policy '{}' (known: {})", name.substr(0, 80), node_policy_names());
}

std::string node_policy_names() {
  std::string names;
  for (const PolicyEntry& p : kPolicies) {
    names += fmt::format("{}{}", names.empty() ? "" : ", ", p.name);
  }
  return names;
}

}  // namespace tessera::daemon
