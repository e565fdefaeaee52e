#include "tessera/gpu/policy/tpc_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "tessera/core/try.hpp"
#include "tessera/gpu/policy/tpc_shares.hpp"

namespace tessera::gpu {

using core::Code;
using core::Domain;

namespace {

core::Result<std::vector<int>> allocate_by_share(const hw::GpuSpec& spec,
                                                 std::span<const TenantInfo> tenants) {
  std::vector<int> owner(static_cast<std::size_t>(spec.tpcs), kNoTenant);
  double sum = 0;
  int next = 0;
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    const auto& t = tenants[i];
    TESSERA_TRY(check_sm_share("lithos", t, "a tenant that owns no TPCs and only borrows"));
    if (t.sm_share == 0) continue;
    sum += t.sm_share;
    if (sum > 1 + kShareTolerance) {
      return core::failf(Domain::kGpu, Code::kInvalidArgument,
                         "lithos: tenant '{}' over-subscribes the GPU: SM shares add up to {}, "
                         "more than 1; lower the shares",
                         t.name, sum);
    }
    const int n = static_cast<int>(std::floor(t.sm_share * spec.tpcs + kShareTolerance));
    if (n < 1) {
      return core::failf(Domain::kGpu, Code::kInvalidArgument,
                         "lithos: tenant '{}' would own less than one of {}'s {} TPCs with SM "
                         "share {}; give it a share of at least {:.4f}, or 0 to only borrow",
                         t.name, spec.name, spec.tpcs, t.sm_share, 1.0 / spec.tpcs);
    }
    for (int k = 0; k < n && next < spec.tpcs; ++k)
      owner[static_cast<std::size_t>(next++)] = static_cast<int>(i);
  }
  return owner;
}

}  // namespace

device::SmMask sms_of(const hw::GpuSpec& spec, const TpcSet& tpcs) {
  // Run by run of consecutive TPCs: a partition is one or a few runs.
  const TpcSet gaps = ~tpcs;
  device::SmMask mask;
  for (int t = first_tpc(tpcs); t < spec.tpcs && t < kMaxTpcs;) {
    const int end = std::min(next_tpc(gaps, t), spec.tpcs);
    mask = mask | device::SmMask::range(t * spec.sms_per_tpc, end * spec.sms_per_tpc);
    t = end < kMaxTpcs ? next_tpc(tpcs, end) : kMaxTpcs;
  }
  return mask;
}

core::Result<std::vector<int>> allocate_tpcs(const hw::GpuSpec& spec,
                                             std::span<const TenantInfo> tenants) {
  TESSERA_TRY(check_tpc_spec("lithos", spec));
  if (tenants.empty()) {
    return core::fail(Domain::kGpu, Code::kInvalidArgument,
                      "lithos: no tenants to allocate TPCs to; attach at least one tenant");
  }
  const bool shares = std::any_of(tenants.begin(), tenants.end(),
                                  [](const TenantInfo& t) { return t.sm_share != 0; });
  if (shares) return allocate_by_share(spec, tenants);

  const bool any_critical = std::any_of(tenants.begin(), tenants.end(),
                                        [](const TenantInfo& t) { return t.latency_critical; });
  int top = tenants.front().priority;
  for (const auto& t : tenants) top = std::max(top, t.priority);
  std::vector<std::size_t> owners;
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    const bool owns = any_critical ? tenants[i].latency_critical : tenants[i].priority == top;
    if (owns) owners.push_back(i);
  }
  const int n = static_cast<int>(owners.size());
  if (n > spec.tpcs) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "lithos: {} {} tenants cannot each own one of {}'s {} TPCs; give some of "
                       "them sm_share 0 and the others explicit shares",
                       n, any_critical ? "latency-critical" : "top-priority", spec.name, spec.tpcs);
  }
  std::vector<int> owner(static_cast<std::size_t>(spec.tpcs), kNoTenant);
  int next = 0;
  for (int k = 0; k < n; ++k) {
    const int count = spec.tpcs / n + (k < spec.tpcs % n ? 1 : 0);
    for (int j = 0; j < count; ++j) {
      owner[static_cast<std::size_t>(next++)] =
          static_cast<int>(owners[static_cast<std::size_t>(k)]);
    }
  }
  return owner;
}

core::Result<TpcScheduler> TpcScheduler::make(const hw::GpuSpec& spec,
                                              std::span<const TenantInfo> tenants,
                                              core::Nanos atom_target) {
  if (atom_target <= 0) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "lithos: atom duration must be positive, got {} ns; set atom_duration to "
                       "the longest a high-priority kernel may wait for a borrowed TPC",
                       atom_target);
  }
  auto owner = allocate_tpcs(spec, tenants);
  if (!owner) return std::unexpected(owner.error());
  TpcScheduler s;
  s.spec_ = spec;
  s.atom_target_ = atom_target;
  s.owner_ = std::move(*owner);
  s.owned_.assign(tenants.size(), TpcSet{});
  s.owned_count_.assign(tenants.size(), 0);
  for (std::size_t j = 0; j < s.owner_.size(); ++j) {
    s.all_.set(j);
    if (s.owner_[j] == kNoTenant) {
      s.unowned_.set(j);
      continue;
    }
    const auto t = static_cast<std::size_t>(s.owner_[j]);
    s.owned_[t].set(j);
    ++s.owned_count_[t];
  }
  for (std::size_t i = 0; i < tenants.size(); ++i) s.order_.push_back(i);
  std::stable_sort(s.order_.begin(), s.order_.end(), [&](std::size_t a, std::size_t b) {
    if (tenants[a].priority != tenants[b].priority) {
      return tenants[a].priority > tenants[b].priority;
    }
    return tenants[a].latency_critical && !tenants[b].latency_critical;
  });
  for (const auto& t : tenants) {
    s.importance_.push_back(2 * std::int64_t{t.priority} + (t.latency_critical ? 1 : 0));
  }
  s.plans_.resize(tenants.size());
  s.need_at_.resize(tenants.size());
  s.finite_.reserve(s.owner_.size());
  s.reclaim_.reserve(s.owner_.size());
  s.finite_all_.reserve(s.owner_.size());
  return s;
}

void TpcScheduler::take_own(std::size_t t, const TpcBoard& board, int want) {
  Plan& plan = plans_[t];
  const int take = std::min(want, owned_count_[t]);
  plan.want_more = want - take;
  if (take == 0) return;
  // Free TPCs first, lowest first.
  const TpcSet free_own = owned_[t] & board.free();
  plan.own = lowest_tpcs(free_own, take);
  plan.own_count = std::min(take, static_cast<int>(free_own.count()));
  free_left_ -= plan.own_count;
  const auto missing = static_cast<std::size_t>(take - plan.own_count);
  if (missing == 0) return;
  // Take back the TPCs whose borrowed atoms are predicted to end first (unknown ends last), the
  // lowest first among equal ends: a whole borrower's set at a time while it fits.
  TpcSet left = owned_[t] & board.busy();
  int need = static_cast<int>(missing);
  const auto end_of = [&](std::size_t r) {
    const core::Nanos e = board.until(r);
    return e == kUnknownEnd ? core::kNever : e;
  };
  while (need > 0 && left.any()) {
    core::Nanos first = core::kNever;
    for (std::size_t r = 0; r < board.tenants(); ++r) {
      if ((board.running(r) & left).any()) first = std::min(first, end_of(r));
    }
    TpcSet group;
    for (std::size_t r = 0; r < board.tenants(); ++r) {
      if (end_of(r) == first) group |= board.running(r) & left;
    }
    const int count = static_cast<int>(group.count());
    if (count > need) group = lowest_tpcs(group, need);
    const int took = std::min(count, need);
    plan.own |= group;
    plan.own_count += took;
    plan.reclaimed += took;
    left &= ~group;
    need -= took;
  }
}

Atom TpcScheduler::plan_atom(const TenantState& state, int tpc_count, bool borrowing,
                             const LatencyPredictor& predictor, core::Nanos target) const {
  const workload::Kernel& k = *state.ready;
  if (!borrowing) {
    const device::BlockRange rest{.begin = state.next_block, .end = k.blocks};
    return Atom{.range = rest,
                .reason = AtomReason::kOwnTpcs,
                .predicted = predictor.predict(k, rest.size(), tpc_count)};
  }
  Atom atom =
      next_atom(spec_, AtomRequest{.kernel = &k,
                                   .next_block = state.next_block,
                                   .tpcs = tpc_count,
                                   .whole_latency = predictor.predict(k, k.blocks, tpc_count),
                                   .target = target});
  if (atom.reason == AtomReason::kNotSplittable) {
    atom.predicted = predictor.predict(k, atom.range.size(), tpc_count);
  }
  return atom;
}

void TpcScheduler::decide(const TpcBoard& board, std::span<const TenantState> tenants,
                          core::Nanos now, const LatencyPredictor& predictor,
                          std::vector<TpcLaunch>& out) {
  out.clear();
  const int total = static_cast<int>(owner_.size());
  if (board.tpcs() != total || board.tenants() != plans_.size() ||
      tenants.size() != plans_.size()) {
    return;
  }
  // Per tenant: when it needs its own TPCs back. No work: never; ready: now (it takes them in
  // pass 1); a piece in flight: its predicted end (unknown, or no TPC left running it: now, so
  // nothing it owns is lent).
  for (std::size_t t = 0; t < tenants.size(); ++t) {
    plans_[t] = Plan{};
    const TenantState& st = tenants[t];
    need_at_[t] = !st.has_work ? core::kNever : now;
    if (st.has_work && st.ready == nullptr && board.running(t).any() &&
        board.until(t) != kUnknownEnd) {
      need_at_[t] = board.until(t);
    }
  }
  const TpcSet& free = board.free();
  free_left_ = static_cast<int>(free.count());
  unowned_busy_ = static_cast<int>((unowned_ & board.busy()).count());

  // Pass 1: every ready tenant takes its own TPCs (up to its right-sized need).
  taken_.reset();
  for (std::size_t t : order_) {
    const TenantState& st = tenants[t];
    if (st.ready == nullptr) continue;
    const int want = st.tpc_need > 0 ? std::min(st.tpc_need, total) : total;
    take_own(t, board, want);
    Plan& plan = plans_[t];
    taken_ |= plan.own;
    if (plan.want_more == 0 && plan.own_count > 0) {
      plan.atom = plan_atom(st, plan.own_count, false, predictor, atom_target_);
      plan.launch = true;
      // Right-sizing left some of its TPCs unused: they may be lent until this piece ends.
      need_at_[t] = plan.atom.predicted ? now + *plan.atom.predicted : now;
    }
  }

  // Pass 2: tenants that would use more borrow idle TPCs, most important first. Unowned TPCs go
  // by priority: a tenant may take one back from a less important tenant's launch (waiting for
  // at most that atom), as an owner does with its own.
  for (std::size_t t : order_) {
    const TenantState& st = tenants[t];
    Plan& plan = plans_[t];
    if (st.ready == nullptr || plan.launch) continue;
    if (free_left_ == 0 && unowned_busy_ == 0 && plan.own_count == 0) continue;
    finite_.clear();
    reclaim_.clear();
    // Free TPCs are walked lowest first until `want_more` of them have no deadline (unowned, or
    // their owner has no work): those are chosen; free TPCs whose owner needs them back later
    // than now, and unowned ones a less important tenant's launch holds (to take back), are
    // candidates if the walk reached them.
    TpcSet chosen;
    int chosen_count = 0;
    if (free_left_ > 0 || unowned_busy_ > 0) {
      TpcSet reclaimable;
      TpcSet never = unowned_;
      for (std::size_t r = 0; r < tenants.size(); ++r) {
        if (importance_[r] < importance_[t]) reclaimable |= board.running(r);
        if (need_at_[r] == core::kNever) never |= owned_[r];
      }
      const TpcSet open = all_ & ~taken_;
      chosen = open & free & never;
      chosen_count = static_cast<int>(chosen.count());
      TpcSet reached = all_;
      if (chosen_count >= plan.want_more) {
        int last = -1;
        chosen = lowest_tpcs(chosen, plan.want_more, last);
        reached = last >= 0 ? ~TpcSet{} >> (kMaxTpcs - 1 - last) : TpcSet{};
        chosen_count = std::max(plan.want_more, 0);
      }
      for (std::size_t o = 0; o < tenants.size(); ++o) {
        if (need_at_[o] <= now || need_at_[o] == core::kNever) continue;
        const TpcSet lend = open & free & owned_[o] & reached;
        if (lend.any()) {
          finite_.push_back(Lendable{
              .tpcs = lend, .count = static_cast<int>(lend.count()), .deadline = need_at_[o]});
        }
      }
      const TpcSet back = open & reclaimable & unowned_ & reached;
      for (int j = first_tpc(back); j < kMaxTpcs; j = next_tpc(back, j)) reclaim_.push_back(j);
    }
    const auto count_of = [](const std::vector<Lendable>& list) {
      int n = 0;
      for (const auto& l : list) n += l.count;
      return n;
    };
    // Free TPCs before taken-back ones, which make the launch wait.
    int taken_back = 0;
    const int finite_count = count_of(finite_);
    for (int j : reclaim_) {
      if (chosen_count + finite_count >= plan.want_more) break;
      chosen.set(static_cast<std::size_t>(j));
      ++chosen_count;
      ++taken_back;
    }
    // TPCs of idle owners (chosen) first, then those whose owners need them back latest (the
    // lowest first among equal deadlines).
    int need = plan.want_more - chosen_count;
    if (finite_count > need) {
      std::sort(finite_.begin(), finite_.end(),
                [](const Lendable& a, const Lendable& b) { return a.deadline > b.deadline; });
      std::size_t kept = 0;
      for (std::size_t i = 0; i < finite_.size() && need > 0;) {
        Lendable group = finite_[i];
        for (++i; i < finite_.size() && finite_[i].deadline == group.deadline; ++i) {
          group.tpcs |= finite_[i].tpcs;
          group.count += finite_[i].count;
        }
        if (group.count > need) {
          group.tpcs = lowest_tpcs(group.tpcs, need);
          group.count = need;
        }
        need -= group.count;
        finite_[kept++] = group;
      }
      finite_.resize(kept);
    }
    // The atom's length depends on how many TPCs it gets. Either drop TPCs needed back before
    // it would end until it fits every deadline left (each round drops at least one TPC, and
    // TPCs of idle owners are never dropped), or keep them all and cut the atom to end before
    // the first deadline (at least one wave must fit): whichever hands out more blocks.
    finite_all_.assign(finite_.begin(), finite_.end());
    while (chosen_count > 0 || !finite_.empty()) {
      const int count = plan.own_count + chosen_count + count_of(finite_);
      plan.atom = plan_atom(st, count, true, predictor, atom_target_);
      const core::Nanos end = plan.atom.predicted ? now + *plan.atom.predicted : core::kNever;
      if (std::erase_if(finite_, [end](const Lendable& l) { return l.deadline < end; }) == 0) {
        break;
      }
    }
    if (finite_.size() < finite_all_.size()) {
      core::Nanos first = core::kNever;
      for (const auto& l : finite_all_) first = std::min(first, l.deadline);
      const int count = plan.own_count + chosen_count + count_of(finite_all_);
      const Atom cut = plan_atom(st, count, true, predictor, std::min(atom_target_, first - now));
      const bool fits = cut.predicted && now + *cut.predicted <= first;
      const bool a_empty = chosen_count == 0 && finite_.empty();
      if (fits && (a_empty || cut.range.size() > plan.atom.range.size())) {
        finite_.assign(finite_all_.begin(), finite_all_.end());
        plan.atom = cut;
      }
    }
    const int borrowed = chosen_count + count_of(finite_);
    if (borrowed == 0) {
      if (plan.own_count == 0) continue;
      plan.atom = plan_atom(st, plan.own_count, false, predictor, atom_target_);
    }
    plan.own |= chosen;
    taken_ |= chosen;
    for (const auto& l : finite_) {
      plan.own |= l.tpcs;
      taken_ |= l.tpcs;
    }
    free_left_ -= borrowed - taken_back;
    unowned_busy_ -= taken_back;
    plan.borrowed = borrowed;
    plan.reclaimed += taken_back;
    plan.launch = true;
    need_at_[t] = plan.atom.predicted ? now + *plan.atom.predicted : now;
  }

  for (std::size_t t : order_) {
    const Plan& plan = plans_[t];
    if (!plan.launch) continue;
    out.push_back(TpcLaunch{.tenant = t,
                            .tpcs = plan.own,
                            .tpc_count = plan.own_count + plan.borrowed,
                            .borrowed = plan.borrowed,
                            .reclaimed = plan.reclaimed,
                            .atom = plan.atom});
  }
}

}  // namespace tessera::gpu
