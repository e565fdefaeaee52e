#include "tessera/gpu/modes/mig/mig_mode.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tessera/core/try.hpp"
#include "tessera/gpu/policy/tpc_shares.hpp"
#include "tessera/hw/mig_profiles.hpp"

namespace tessera::gpu {

using core::Code;
using core::Domain;

namespace {

// Per compute-slice count, the profile with the fewest memory slices: it has the most
// placements, so the most tenants fit. Media-extension profiles are left to users who ask.
std::vector<const hw::MigProfile*> profiles_by_slices(const hw::MigGeometry& g) {
  std::vector<const hw::MigProfile*> out;
  for (const auto& p : g.profiles) {
    if (p.media_extensions) continue;
    const bool seen = std::ranges::any_of(
        out, [&](const hw::MigProfile* q) { return q->compute_slices == p.compute_slices; });
    if (!seen) out.push_back(&p);  // profiles are ascending by (compute, memory) slices
  }
  return out;
}

std::string layout_text(const std::vector<const hw::MigProfile*>& chosen,
                        std::span<const TenantInfo> tenants) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    parts.push_back(fmt::format("'{}' {}", tenants[i].name, chosen[i]->name));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// Places order[k..] at free memory slices; true when all fit (slots then holds them).
bool place(const std::vector<const hw::MigProfile*>& chosen, const std::vector<std::size_t>& order,
           std::size_t k, std::vector<bool> used, std::vector<hw::MigSlot>& slots) {
  if (k == order.size()) return true;
  const std::size_t i = order[k];
  const auto* p = chosen[i];
  for (const int start : p->placement_starts) {
    const auto first = used.begin() + start;
    if (std::any_of(first, first + p->memory_slices, [](bool u) { return u; })) continue;
    std::vector<bool> next = used;
    std::fill(next.begin() + start, next.begin() + start + p->memory_slices, true);
    slots[i] = hw::MigSlot{.profile_id = p->id, .start = start};
    if (place(chosen, order, k + 1, std::move(next), slots)) return true;
  }
  return false;
}

}  // namespace

core::Result<std::vector<PartitionPlan>> plan_mig_instances(const hw::GpuSpec& spec,
                                                            std::span<const TenantInfo> tenants) {
  auto geometry = hw::find_mig_geometry(spec.name);
  if (!geometry) return std::unexpected(geometry.error().with_context("mig"));
  const auto profiles = profiles_by_slices(*geometry);
  std::vector<const hw::MigProfile*> chosen(tenants.size(), nullptr);
  int explicit_slices = 0;
  std::size_t even = 0;
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    const auto& t = tenants[i];
    TESSERA_TRY(check_sm_share("mig", t, "an even split of the compute slices the others leave"));
    if (t.sm_share == 0) {
      ++even;
      continue;
    }
    const double wanted = t.sm_share * hw::kMigComputeSlices - kShareTolerance;
    const auto it = std::ranges::find_if(
        profiles, [&](const hw::MigProfile* p) { return p->compute_slices >= wanted; });
    chosen[i] = *it;  // the 7-slice profile holds any share up to 1
    explicit_slices += chosen[i]->compute_slices;
  }
  if (even > 0) {
    const int each = (hw::kMigComputeSlices - explicit_slices) / static_cast<int>(even);
    const hw::MigProfile* fit = nullptr;
    for (const auto* p : profiles) {
      if (p->compute_slices <= each) fit = p;
    }
    if (fit == nullptr) {
      return core::failf(Domain::kGpu, Code::kInvalidArgument,
                         "mig: {} tenants without an sm_share split the {} compute slices the "
                         "others leave on {}, less than a 1-slice instance each; lower the "
                         "others' shares or run fewer tenants",
                         even, std::max(hw::kMigComputeSlices - explicit_slices, 0), spec.name);
    }
    for (auto& c : chosen) {
      if (c == nullptr) c = fit;
    }
  }

  // Each instance at a placement clear of the others: the larger and the more constrained
  // first, backtracking when one has no free placement.
  std::vector<std::size_t> order(tenants.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::ranges::stable_sort(order, [&](std::size_t a, std::size_t b) {
    if (chosen[a]->memory_slices != chosen[b]->memory_slices) {
      return chosen[a]->memory_slices > chosen[b]->memory_slices;
    }
    return chosen[a]->placement_starts.size() < chosen[b]->placement_starts.size();
  });
  std::vector<hw::MigSlot> slots(tenants.size());
  if (!place(chosen, order, 0, std::vector<bool>(hw::kMigMemorySlices, false), slots)) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "mig: the instances {} do not fit on {}'s {} memory slices; lower the "
                       "sm_shares or run fewer tenants",
                       layout_text(chosen, tenants), spec.name, hw::kMigMemorySlices);
  }
  if (auto ok = hw::check_mig_layout(*geometry, slots); !ok) {
    return std::unexpected(
        ok.error().with_context(fmt::format("mig: the layout {}", layout_text(chosen, tenants))));
  }

  // SMs in memory-slice order, the way instances sit on the GPU's GPCs.
  std::vector<std::size_t> by_start(tenants.size());
  std::iota(by_start.begin(), by_start.end(), std::size_t{0});
  std::ranges::stable_sort(
      by_start, [&](std::size_t a, std::size_t b) { return slots[a].start < slots[b].start; });
  std::vector<PartitionPlan> plans(tenants.size());
  int next_sm = 0;
  for (const std::size_t i : by_start) {
    const auto* p = chosen[i];
    plans[i] = PartitionPlan{
        .first_sm = next_sm,
        .sms = p->sms,
        .bandwidth_share = static_cast<double>(p->memory_slices) / hw::kMigMemorySlices,
        .memory_bytes = p->memory_bytes,
        .label = p->name};
    next_sm += p->sms;
  }
  if (next_sm > spec.sms) {
    return core::failf(Domain::kGpu, Code::kInternal, "mig: the instances' {} SMs exceed {}'s {}",
                       next_sm, spec.name, spec.sms);
  }
  return plans;
}

}  // namespace tessera::gpu
