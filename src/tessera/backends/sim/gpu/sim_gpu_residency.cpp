// Co-residency of blocks of different kernels on one SM (SimGpuOptions::co_residency): where a
// kernel finds room, how co-resident kernels share an SM's pipes, and the SMs a partial last wave
// gives back.
//
// Aggregated, not per block: a kernel holds the same number of resident blocks on every SM it
// holds, so the SMs split into parts whose SMs hold blocks of the same kernels. Parts are worked
// out from the held sets when needed; a part's kernels are found by testing one of its SMs.

#include <algorithm>
#include <array>
#include <span>

#include "tessera/backends/sim/gpu/bandwidth.hpp"
#include "tessera/backends/sim/gpu/rounding.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"

namespace tessera::sim {
namespace {

// Resources in use on one SM.
struct Usage {
  std::int64_t threads = 0;
  std::int64_t registers = 0;
  std::int64_t shared_memory = 0;
  std::int64_t blocks = 0;

  void add(const workload::BlockResources& b, int count) {
    threads += std::int64_t{count} * b.threads;
    registers += std::int64_t{count} * b.threads * b.registers_per_thread;
    shared_memory += count * b.shared_memory_bytes;
    blocks += count;
  }
};

// Blocks of `b` that still fit on an SM with `used` in use (first-order occupancy, as
// device::blocks_per_sm).
int fit_on(const hw::SmLimits& sm, const Usage& used, const workload::BlockResources& b) {
  std::int64_t fit = sm.max_blocks - used.blocks;
  fit = std::min<std::int64_t>(fit, (sm.max_threads - used.threads) / std::max(b.threads, 1));
  const std::int64_t regs = std::int64_t{b.threads} * b.registers_per_thread;
  if (regs > 0) fit = std::min(fit, (sm.registers - used.registers) / regs);
  if (b.shared_memory_bytes > 0) {
    fit = std::min(fit, (sm.shared_memory_bytes - used.shared_memory) / b.shared_memory_bytes);
  }
  return static_cast<int>(std::max<std::int64_t>(fit, 0));
}

// FP16, FP8 and TF32 matrix instructions all issue to the SM's tensor cores.
bool tensor_pipe(workload::ComputePipe p) {
  return p != workload::ComputePipe::kFp32;
}

}  // namespace

void SimGpu::partition(const SmSet& within, std::uint32_t skip, bool in_sm_order) {
  part_scratch_.clear();
  holder_scratch_.clear();
  part_scratch_.push_back(within);
  for (std::uint32_t t = 0; t < streams_.size(); ++t) {
    const Launch& other = streams_[t].cur;
    if (t == skip || !holds_sms(other.phase) || !other.held.overlaps(within)) continue;
    holder_scratch_.push_back(t);
    const std::size_t parts = part_scratch_.size();
    for (std::size_t i = 0; i < parts; ++i) {
      const SmSet in = part_scratch_[i] & other.held;
      if (in.none()) continue;
      const SmSet out = part_scratch_[i] & ~other.held;
      part_scratch_[i] = in;
      if (!out.none()) part_scratch_.push_back(out);
    }
  }
  // Lowest-numbered part first, so SMs are taken in SM order whatever the holders' order.
  if (!in_sm_order) return;
  const auto by_first_sm = [](const SmSet& a, const SmSet& b) {
    return a.first_index() < b.first_index();
  };
  // One other holder, the common case, makes at most two parts.
  if (part_scratch_.size() == 2) {
    if (by_first_sm(part_scratch_[1], part_scratch_[0]))
      std::swap(part_scratch_[0], part_scratch_[1]);
    return;
  }
  std::sort(part_scratch_.begin(), part_scratch_.end(), by_first_sm);
}

SmSet SimGpu::take_room(std::uint32_t s, const SmSet& allowed, int n, int& fit) {
  Stream& st = streams_[s];
  const Launch& l = st.cur;
  int taken = 0;
  SmSet out = (free_ & allowed).lowest(n, taken);
  fit = info_at(st, st.cursor).occupancy;
  if (taken >= n || !options_.co_residency) return out;
  const SmSet occupied = allowed & ~free_;
  if (occupied.none()) return out;
  const workload::BlockResources& block = l.kernel->block;
  // One other kernel holding every occupied SM, the common case, needs no partition.
  std::uint32_t holder = kNoStream;
  int holders = 0;
  for (std::uint32_t t = 0; t < streams_.size(); ++t) {
    const Launch& other = streams_[t].cur;
    if (t == s || !holds_sms(other.phase) || !other.held.overlaps(occupied)) continue;
    holder = t;
    ++holders;
  }
  if (holders == 1 && streams_[holder].cur.held.contains(occupied)) {
    const Launch& other = streams_[holder].cur;
    Usage used;
    used.add(other.kernel->block, other.resident);
    const int room = fit_on(spec_.sm, used, block);
    if (room < 1) return out;
    int got = 0;
    out |= occupied.lowest(n - taken, got);
    fit = std::min(fit, room);
    return out;
  }
  partition(occupied, s, /*in_sm_order=*/true);
  for (const SmSet& part : part_scratch_) {
    const int first = part.first_index();
    Usage used;
    for (const auto t : holder_scratch_) {
      const Launch& other = streams_[t].cur;
      if (other.held.test(first)) used.add(other.kernel->block, other.resident);
    }
    const int room = fit_on(spec_.sm, used, block);
    if (room < 1) continue;
    int got = 0;
    out |= part.lowest(n - taken, got);
    taken += got;
    fit = std::min(fit, room);
    if (taken >= n) break;
  }
  return out;
}

SmSet SimGpu::held_by_others(std::uint32_t s) const {
  SmSet held;
  for (std::uint32_t t = 0; t < streams_.size(); ++t) {
    const Phase p = streams_[t].cur.phase;
    if (t != s && (holds_sms(p) || p == Phase::kBatched)) held |= streams_[t].cur.held;
  }
  return held;
}

void SimGpu::release(std::uint32_t s, const SmSet& sms) {
  if (!options_.co_residency) {
    free_ |= sms;
    return;
  }
  free_ |= sms & ~held_by_others(s);
  if (streams_[s].cur.shared) pipes_dirty_ = true;
}

void SimGpu::share_part(const SmSet& part, std::span<const std::uint32_t> on_part) {
  const auto sms = static_cast<double>(part.count());
  // Each pipe is shared max-min by the compute demand of the kernels issuing to it; a kernel
  // saving its state at a checkpoint occupies the SM but computes nothing.
  for (const bool tensor : {false, true}) {
    pipe_demand_scratch_.clear();
    pipe_user_scratch_.clear();
    for (const auto t : on_part) {
      const Launch& l = streams_[t].cur;
      if (l.phase != Phase::kRunning || tensor_pipe(l.shape.pipe) != tensor) continue;
      pipe_demand_scratch_.push_back(l.rates.compute_share);
      pipe_user_scratch_.push_back(t);
    }
    if (pipe_demand_scratch_.empty()) continue;
    if (pipe_user_scratch_.size() == 1) {  // a demand is a fraction of time, so at most 1
      granted_scratch_[pipe_user_scratch_[0]] += sms;
      continue;
    }
    pipe_share_scratch_.resize(pipe_demand_scratch_.size());
    water_fill(pipe_demand_scratch_, 1.0, pipe_share_scratch_);
    for (std::size_t i = 0; i < pipe_user_scratch_.size(); ++i) {
      granted_scratch_[pipe_user_scratch_[i]] += sms * pipe_share_scratch_[i];
    }
  }
  const double each = sms / static_cast<double>(on_part.size());
  for (const auto t : on_part) own_scratch_[t] += each;
}

void SimGpu::share_pipes() {
  pipes_dirty_ = false;
  // SMs that hold blocks of more than one kernel; a kernel's SMs outside them are its own.
  std::array<std::uint32_t, 2> pair{};
  int holders = 0;
  SmSet seen;
  SmSet multi;
  for (std::uint32_t t = 0; t < streams_.size(); ++t) {
    const Launch& l = streams_[t].cur;
    if (!holds_sms(l.phase)) continue;
    if (holders < 2) pair[holders] = t;
    ++holders;
    multi |= seen & l.held;
    seen |= l.held;
  }
  if (holders == 2) {
    share_pair(pair, multi);
    return;
  }
  // Per stream, summed over the shared parts: SMs' worth of pipe granted, and of SM time
  // counted as its own.
  granted_scratch_.assign(streams_.size(), 0.0);
  own_scratch_.assign(streams_.size(), 0.0);
  if (!multi.none()) {
    partition(multi, kNoStream, /*in_sm_order=*/false);
    for (const SmSet& part : part_scratch_) {
      const int first = part.first_index();
      on_part_scratch_.clear();
      for (const auto t : holder_scratch_) {
        if (streams_[t].cur.held.test(first)) on_part_scratch_.push_back(t);
      }
      share_part(part, on_part_scratch_);
    }
  }
  for (const auto s : running_) {
    Launch& l = streams_[s].cur;
    if (!l.held.overlaps(multi)) {
      set_pipe_share(l, false, 1, 1);
      continue;
    }
    const auto alone = static_cast<double>((l.held & ~multi).count());
    const auto held = static_cast<double>(l.held_sms);
    set_pipe_share(l, true, (alone + granted_scratch_[s]) / held, (alone + own_scratch_[s]) / held);
  }
}

void SimGpu::share_pair(const std::array<std::uint32_t, 2>& pair, const SmSet& both) {
  // Two kernels hold SMs: what share_part would work out on the one part they share, without
  // splitting SM sets.
  const int shared_sms = both.count();
  const Launch& a = streams_[pair[0]].cur;
  const Launch& b = streams_[pair[1]].cur;
  std::array<double, 2> granted{0, 0};
  if (shared_sms > 0) {
    const auto sms = static_cast<double>(shared_sms);
    const bool a_runs = a.phase == Phase::kRunning;
    const bool b_runs = b.phase == Phase::kRunning;
    if (a_runs && b_runs && tensor_pipe(a.shape.pipe) == tensor_pipe(b.shape.pipe)) {
      const std::array<double, 2> demand{a.rates.compute_share, b.rates.compute_share};
      std::array<double, 2> share{};
      water_fill(demand, 1.0, share);
      granted = {sms * share[0], sms * share[1]};
    } else {
      granted = {a_runs ? sms : 0, b_runs ? sms : 0};
    }
  }
  for (const auto s : running_) {
    Launch& l = streams_[s].cur;
    if (shared_sms == 0) {
      set_pipe_share(l, false, 1, 1);
      continue;
    }
    const auto alone = static_cast<double>(l.held_sms - shared_sms);
    const auto held = static_cast<double>(l.held_sms);
    const double own = static_cast<double>(shared_sms) / 2;
    set_pipe_share(l, true, (alone + granted[s == pair[0] ? 0 : 1]) / held, (alone + own) / held);
  }
}

void SimGpu::set_pipe_share(Launch& l, bool shared, double ratio, double weight) {
  l.shared = shared;
  if (ratio == l.pipe_ratio && weight == l.sm_weight) return;
  sync(l);
  l.sm_weight = weight;
  if (ratio != l.pipe_ratio) {
    l.pipe_ratio = ratio;
    mark_dirty(l.domain);
  }
}

SimGpu::Tail SimGpu::tail_of(const Plan& plan) const {
  if (!options_.co_residency || plan.sms < 2) return {};
  // Blocks dispatch in waves over the plan's SMs; a last wave of fewer blocks than SMs leaves
  // the rest idle from when it starts. Progress is fluid, so the wave starts when 1 / waves of
  // the plan is left (exact for a compute-bound kernel alone).
  constexpr double kWhole = 1e-9;  // fractional blocks after a re-plan: ignore rounding hairs
  const double sms = plan.sms;
  const double waves = ceil_non_negative(plan.blocks / sms - kWhole);
  if (waves < 2) return {};
  const int last = static_cast<int>(ceil_non_negative(plan.blocks - (waves - 1) * sms - kWhole));
  if (last >= plan.sms) return {};
  return {.left = 1 / waves, .sms = std::max(last, 1)};
}

void SimGpu::set_tail(Launch& l, const Tail& tail) const {
  l.tail_left = tail.left;
  l.tail_sms = tail.sms;
  l.in_tail = false;
}

void SimGpu::cancel_tail(Launch& l) {
  if (l.tail_timer != 0) engine_.cancel(l.tail_timer);
  l.tail_timer = 0;
}

void SimGpu::on_tail(std::uint32_t s) {
  Launch& l = streams_[s].cur;
  l.tail_timer = 0;
  if (l.phase != Phase::kRunning || l.in_tail) return;
  begin_op();
  sync(l);
  enter_tail(s);
  end_op();
}

void SimGpu::enter_tail(std::uint32_t s) {
  Launch& l = streams_[s].cur;
  const SmSet keep = l.held.lowest(l.tail_sms);
  const SmSet dropped = l.held & ~keep;
  l.held = keep;
  l.held_sms = l.tail_sms;
  l.in_tail = true;
  // One block left on each SM it keeps: room opens there too.
  l.resident = 1;
  if (l.shared) pipes_dirty_ = true;
  release(s, dropped);
  dispatch_needed_ = true;
}

}  // namespace tessera::sim
