#include "tessera/gpu/policy/kernel_profiles.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>
#include <tuple>

#include "tessera/core/try.hpp"
#include "tessera/device/occupancy.hpp"

namespace tessera::gpu {

namespace {

core::Error fit_error(std::string message) {
  return core::Error(core::Domain::kGpu, core::Code::kInvalidArgument, std::move(message));
}

// Clocks within half a MHz of boost count as boost: clocks are set in whole MHz.
bool at_boost(const hw::GpuSpec& spec, double clock_mhz) {
  return std::abs(clock_mhz - spec.boost_clock_mhz) < 0.5;
}

// Waves of `blocks` blocks on `tpcs` TPCs, `per_sm` resident blocks per SM.
double waves(const hw::GpuSpec& spec, int per_sm, std::int64_t blocks, int tpcs) {
  const std::int64_t wave = static_cast<std::int64_t>(tpcs) * spec.sms_per_tpc * per_sm;
  return static_cast<double>((blocks + wave - 1) / wave);
}

}  // namespace

double ScalingFit::predict_ns(int tpcs) const {
  return m_ns / static_cast<double>(std::max(tpcs, 1)) + b_ns;
}

core::Result<ScalingFit> fit_scaling(std::span<const LatencySample> samples) {
  // Two TPC counts or more, checked without a set: schedulers refit on every observation.
  bool distinct = false;
  for (const auto& s : samples) {
    if (s.tpcs < 1) {
      return std::unexpected(fit_error(
          fmt::format("scaling fit: a sample has {} TPCs; TPC counts start at 1", s.tpcs)));
    }
    if (!std::isfinite(s.latency_ns) || s.latency_ns < 0) {
      return std::unexpected(fit_error(fmt::format(
          "scaling fit: the sample at {} TPCs has latency {} ns; latencies must be finite and "
          ">= 0",
          s.tpcs, s.latency_ns)));
    }
    distinct = distinct || s.tpcs != samples.front().tpcs;
  }
  if (!distinct) {
    const std::size_t counts = samples.empty() ? 0 : 1;
    return std::unexpected(fit_error(fmt::format(
        "scaling fit: l(t) = m/t + b needs samples at two or more distinct TPC counts, got {} "
        "sample(s) at {} count(s); observe the kernel on another TPC count first",
        samples.size(), counts)));
  }
  // Centred sums keep the slope accurate when 1/t values are close together.
  const double n = static_cast<double>(samples.size());
  double mean_x = 0;
  double mean_y = 0;
  for (const auto& s : samples) {
    mean_x += 1.0 / s.tpcs;
    mean_y += s.latency_ns;
  }
  mean_x /= n;
  mean_y /= n;
  double sxx = 0;
  double sxy = 0;
  double raw_xx = 0;
  double raw_xy = 0;
  for (const auto& s : samples) {
    const double x = 1.0 / s.tpcs;
    sxx += (x - mean_x) * (x - mean_x);
    sxy += (x - mean_x) * (s.latency_ns - mean_y);
    raw_xx += x * x;
    raw_xy += x * s.latency_ns;
  }
  ScalingFit fit{.m_ns = sxy / sxx, .b_ns = mean_y - (sxy / sxx) * mean_x};
  // Noise can pull either coefficient below zero. b < 0 predicts negative latency past the
  // measured counts and m < 0 latency that grows with TPCs; neither is physical, so the offending
  // coefficient is pinned at 0 and the other refitted by least squares under that constraint.
  if (fit.b_ns < 0) {
    fit = ScalingFit{.m_ns = raw_xy / raw_xx, .b_ns = 0};
  }
  if (fit.m_ns < 0) {
    fit = ScalingFit{.m_ns = 0, .b_ns = mean_y};
  }
  return fit;
}

int right_size(const ScalingFit& fit, int max_tpcs, double slip) {
  max_tpcs = std::max(max_tpcs, 1);
  const double bound = (1 + std::max(slip, 0.0)) * fit.predict_ns(max_tpcs);
  // predict_ns(t) <= bound is false then true as t grows (m >= 0: latency falls with t), or true
  // throughout (m < 0: every t is at most predict_ns(max_tpcs)); max_tpcs always passes. Binary
  // search for the first t that passes: a scheduler asks this on every launch.
  int lo = 1;
  int hi = max_tpcs;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (fit.predict_ns(mid) <= bound) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

core::Result<HeldOutError> held_out_error(std::span<const LatencySample> samples,
                                          std::span<const int> fit_tpcs) {
  const std::set<int> fitted(fit_tpcs.begin(), fit_tpcs.end());
  std::vector<LatencySample> train;
  std::vector<LatencySample> held;
  for (const auto& s : samples) (fitted.contains(s.tpcs) ? train : held).push_back(s);
  TESSERA_ASSIGN_OR_RETURN(const ScalingFit fit,
                           core::with_context(fit_scaling(train), "held-out error"));
  HeldOutError out;
  double sum = 0;
  for (const auto& s : held) {
    if (s.latency_ns <= 0) continue;
    const double pct = 100.0 * std::abs(fit.predict_ns(s.tpcs) - s.latency_ns) / s.latency_ns;
    sum += pct;
    out.max_abs_pct = std::max(out.max_abs_pct, pct);
    ++out.points;
  }
  if (out.points == 0) {
    return std::unexpected(fit_error(
        "held-out error: no sample with a positive latency lies outside the fitted TPC counts; "
        "hold out at least one TPC count"));
  }
  out.mean_abs_pct = sum / out.points;
  return out;
}

KernelKey key_of(const workload::Kernel& k) {
  return KernelKey{.name = std::string(k.name),
                   .blocks = k.blocks,
                   .threads = k.block.threads,
                   .registers_per_thread = k.block.registers_per_thread,
                   .shared_memory_bytes = k.block.shared_memory_bytes,
                   .flops_per_block = k.flops_per_block,
                   .bytes_per_block = k.bytes_per_block,
                   .pipe = k.pipe};
}

void KernelProfiles::record(const hw::GpuSpec& spec, const workload::Kernel& k,
                            std::int64_t blocks_run, int tpcs, double clock_mhz,
                            core::Nanos latency) {
  const int per_sm = device::blocks_per_sm(spec.sm, k.block);
  if (per_sm < 1 || tpcs < 1 || blocks_run < 1 || blocks_run > k.blocks || latency < 0 ||
      !(clock_mhz > 0)) {
    return;
  }
  const double whole = static_cast<double>(latency) * waves(spec, per_sm, k.blocks, tpcs) /
                       waves(spec, per_sm, blocks_run, tpcs);
  auto it = profiles_.find(k);
  if (it == profiles_.end()) it = profiles_.emplace(key_of(k), Profile{}).first;
  Profile& p = it->second;
  if (!at_boost(spec, clock_mhz)) {
    Mean& at_clock = p.other_clocks[std::round(clock_mhz)];
    at_clock.sum_ns += whole;
    ++at_clock.count;
    return;
  }
  Mean& mean = p.by_tpcs[tpcs];
  mean.sum_ns += whole;
  ++mean.count;
  if (p.by_tpcs.size() >= 2) {
    points_.clear();
    for (const auto& [t, m] : p.by_tpcs) {
      points_.push_back({.tpcs = t, .latency_ns = m.sum_ns / static_cast<double>(m.count)});
    }
    if (auto f = fit_scaling(points_)) p.fit = *f;
  }
}

namespace {

// The fields of a key, in KernelKey's order, for keys and kernels alike.
auto key_fields(const KernelKey& k) {
  return std::tuple(std::string_view(k.name), k.blocks, k.threads, k.registers_per_thread,
                    k.shared_memory_bytes, k.flops_per_block, k.bytes_per_block, k.pipe);
}
auto key_fields(const workload::Kernel& k) {
  return std::tuple(k.name, k.blocks, k.block.threads, k.block.registers_per_thread,
                    k.block.shared_memory_bytes, k.flops_per_block, k.bytes_per_block, k.pipe);
}

}  // namespace

bool KernelKeyLess::operator()(const KernelKey& a, const KernelKey& b) const {
  return key_fields(a) < key_fields(b);
}
bool KernelKeyLess::operator()(const KernelKey& a, const workload::Kernel& b) const {
  return key_fields(a) < key_fields(b);
}
bool KernelKeyLess::operator()(const workload::Kernel& a, const KernelKey& b) const {
  return key_fields(a) < key_fields(b);
}

namespace {

auto search_fields(const KernelKey& k) {
  return std::tuple(k.blocks, k.flops_per_block, k.bytes_per_block, k.threads,
                    k.registers_per_thread, k.shared_memory_bytes, k.pipe,
                    std::string_view(k.name));
}
auto search_fields(const workload::Kernel& k) {
  return std::tuple(k.blocks, k.flops_per_block, k.bytes_per_block, k.block.threads,
                    k.block.registers_per_thread, k.block.shared_memory_bytes, k.pipe, k.name);
}

}  // namespace

bool KernelProfiles::SearchOrder::operator()(const KernelKey& a, const KernelKey& b) const {
  return search_fields(a) < search_fields(b);
}
bool KernelProfiles::SearchOrder::operator()(const KernelKey& a, const workload::Kernel& b) const {
  return search_fields(a) < search_fields(b);
}
bool KernelProfiles::SearchOrder::operator()(const workload::Kernel& a, const KernelKey& b) const {
  return search_fields(a) < search_fields(b);
}

const KernelProfiles::Profile* KernelProfiles::find(const workload::Kernel& k) const {
  const auto it = profiles_.find(k);
  return it == profiles_.end() ? nullptr : &it->second;
}

std::optional<core::Nanos> KernelProfiles::predict(const hw::GpuSpec& spec,
                                                   const workload::Kernel& k, std::int64_t blocks,
                                                   int tpcs) const {
  return predict(spec, lookup(spec, k), blocks, tpcs);
}

KernelProfiles::Lookup KernelProfiles::lookup(const hw::GpuSpec& spec,
                                              const workload::Kernel& k) const {
  Lookup found;
  found.profile_ = find(k);
  found.grid_blocks_ = k.blocks;
  found.per_sm_ = device::blocks_per_sm(spec.sm, k.block);
  return found;
}

std::optional<core::Nanos> KernelProfiles::predict(const hw::GpuSpec& spec, const Lookup& found,
                                                   std::int64_t blocks, int tpcs) const {
  const Profile* p = found.profile_;
  const int per_sm = found.per_sm_;
  if (p == nullptr || p->by_tpcs.empty() || per_sm < 1 || tpcs < 1 || blocks < 1) {
    return std::nullopt;
  }
  const double part = waves(spec, per_sm, blocks, tpcs);
  if (p->fit) {
    return core::round_to_nanos(p->fit->predict_ns(tpcs) * part /
                                waves(spec, per_sm, found.grid_blocks_, tpcs));
  }
  // One TPC count seen (the map holds exactly one entry here): scale its mean by waves.
  const auto& [seen_tpcs, mean] = *p->by_tpcs.begin();
  const double whole = mean.sum_ns / static_cast<double>(mean.count);
  return core::round_to_nanos(whole * part / waves(spec, per_sm, found.grid_blocks_, seen_tpcs));
}

std::optional<ScalingFit> KernelProfiles::fit(const workload::Kernel& k) const {
  const Profile* p = find(k);
  return p == nullptr ? std::nullopt : p->fit;
}

std::vector<LatencySample> KernelProfiles::samples(const workload::Kernel& k) const {
  std::vector<LatencySample> out;
  if (const Profile* p = find(k)) {
    for (const auto& [t, m] : p->by_tpcs) {
      out.push_back({.tpcs = t, .latency_ns = m.sum_ns / static_cast<double>(m.count)});
    }
  }
  return out;
}

std::vector<ClockSample> KernelProfiles::clock_samples(const workload::Kernel& k) const {
  std::vector<ClockSample> out;
  if (const Profile* p = find(k)) {
    for (const auto& [clock, m] : p->other_clocks) {
      out.push_back({.clock_mhz = clock, .latency_ns = m.sum_ns / static_cast<double>(m.count)});
    }
  }
  return out;
}

std::size_t KernelProfiles::kernels() const {
  return profiles_.size();
}

}  // namespace tessera::gpu
