#include "tessera/gpu/policy/dvfs_governor.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::gpu {

namespace {

// The time a clock adds is compared with the slip less this relative margin, so that rounding in
// the learned sensitivities cannot put a chosen clock a hair past the slip.
constexpr double kSlipMargin = 1e-9;

std::vector<double> sanitize(std::vector<double> clocks) {
  std::erase_if(clocks, [](double c) { return !std::isfinite(c) || c <= 0; });
  std::sort(clocks.begin(), clocks.end());
  clocks.erase(std::unique(clocks.begin(), clocks.end()), clocks.end());
  return clocks;
}

}  // namespace

DvfsGovernor::DvfsGovernor(std::vector<double> clocks_mhz, double slip)
    : clocks_(sanitize(std::move(clocks_mhz))),
      slip_(std::isfinite(slip) ? std::max(slip, 0.0) : 0.0) {
  for (double c : clocks_) {
    if (c < clocks_.back() && clocks_.back() / c - 1 <= slip_ * (1 - kSlipMargin)) {
      probe_low_ = c;
      break;
    }
  }
}

core::Result<DvfsGovernor> DvfsGovernor::make(std::vector<double> clocks_mhz, double slip) {
  if (!std::isfinite(slip) || slip < 0) {
    return core::failf(core::Domain::kGpu, core::Code::kInvalidArgument,
                       "DVFS governor: the latency slip must be a finite fraction >= 0 (0.1 "
                       "allows 10% slower), got {}",
                       slip);
  }
  DvfsGovernor g(std::move(clocks_mhz), slip);
  if (g.clocks_.empty()) {
    return core::fail(core::Domain::kGpu, core::Code::kInvalidArgument,
                      "DVFS governor: no candidate clock is finite and positive; pass the GPU's "
                      "settable clocks (candidate_clocks(spec))");
  }
  return g;
}

void DvfsGovernor::observe(const KernelKey& key, double clock_mhz, core::Nanos latency) {
  if (!(clock_mhz > 0) || !std::isfinite(clock_mhz) || latency < 0 || clocks_.empty()) return;
  KernelState& k = kernels_[key];
  account(k, -1);
  observe_into(k, clock_mhz, latency);
  account(k, 1);
}

void DvfsGovernor::account(const KernelState& k, double sign) {
  runtime_ns_ += sign * k.runtime_ns;
  sensitive_ns_ += sign * k.runtime_ns * k.sensitivity.value_or(1.0);
  const std::int64_t one = sign > 0 ? 1 : -1;
  if (k.sensitivity) known_ += one;
  if (k.by_clock.size() == 1) single_clock_ += one;
}

void DvfsGovernor::observe_into(KernelState& k, double clock_mhz, core::Nanos latency) const {
  // Clocks are set in whole MHz; rounding keeps one reading of a clock from looking like two.
  ClockMean& mean = k.by_clock[std::round(clock_mhz)];
  mean.sum_ns += static_cast<double>(latency);
  ++mean.count;
  k.runtime_ns += static_cast<double>(latency);
  if (k.by_clock.size() < 2) return;
  // l(f) = A + B / f, least squares over the per-clock means (centred sums).
  double mean_x = 0;
  double mean_y = 0;
  for (const auto& [f, m] : k.by_clock) {
    mean_x += 1.0 / f;
    mean_y += m.sum_ns / static_cast<double>(m.count);
  }
  const double n = static_cast<double>(k.by_clock.size());
  mean_x /= n;
  mean_y /= n;
  double sxx = 0;
  double sxy = 0;
  for (const auto& [f, m] : k.by_clock) {
    const double dx = 1.0 / f - mean_x;
    sxx += dx * dx;
    sxy += dx * (m.sum_ns / static_cast<double>(m.count) - mean_y);
  }
  const double b = sxy / sxx;
  const double a = mean_y - b * mean_x;
  const double f_max = clocks_.back();
  const double at_max = a + b / f_max;
  // A non-positive predicted latency at f_max says the readings are noise: assume the worst.
  k.sensitivity = at_max > 0 ? std::clamp((b / f_max) / at_max, 0.0, 1.0) : 1.0;
}

DvfsGovernor::Totals DvfsGovernor::totals() const {
  return Totals{.runtime_ns = runtime_ns_,
                .sensitive_ns = std::clamp(sensitive_ns_, 0.0, runtime_ns_),
                .any_known = known_ > 0};
}

double DvfsGovernor::predicted_slowdown(double clock_mhz) const {
  const Totals t = totals();
  if (clocks_.empty() || t.runtime_ns <= 0 || !(clock_mhz > 0)) return 1.0;
  const double stretch = clocks_.back() / clock_mhz - 1;
  return (t.runtime_ns + stretch * t.sensitive_ns) / t.runtime_ns;
}

double DvfsGovernor::choose_clock_mhz() const {
  if (clocks_.empty()) return 0;
  const Totals t = totals();
  const double f_max = clocks_.back();
  if (!t.any_known || t.runtime_ns <= 0) return f_max;
  // The time a clock adds must fit in the time the slip allows. It shrinks as the clock rises,
  // so the first candidate that passes is found by binary search (the top one always passes).
  const double allowed = slip_ * (1 - kSlipMargin) * t.runtime_ns;
  const auto fits = [&](double c) { return (f_max / c - 1) * t.sensitive_ns <= allowed; };
  return *std::partition_point(clocks_.begin(), clocks_.end() - 1,
                               [&](double c) { return !fits(c); });
}

std::optional<double> DvfsGovernor::probe_clock_mhz() const {
  if (clocks_.empty() || single_clock_ == 0) return std::nullopt;
  const double f_max = clocks_.back();
  const std::optional<double>& low = probe_low_;
  const KernelState* best = nullptr;
  double best_clock = 0;
  for (const auto& [key, k] : kernels_) {
    if (k.by_clock.size() != 1) continue;
    const double seen = k.by_clock.begin()->first;
    const bool seen_at_max = std::abs(seen - f_max) < 0.5;
    if (seen_at_max && !low) continue;  // no probe within the slip: stays at s = 1
    if (best == nullptr || k.runtime_ns > best->runtime_ns) {
      best = &k;
      best_clock = seen_at_max ? *low : f_max;
    }
  }
  if (best == nullptr) return std::nullopt;
  return best_clock;
}

double DvfsGovernor::sensitivity(const KernelKey& key) const {
  const auto it = kernels_.find(key);
  return it == kernels_.end() ? 1.0 : it->second.sensitivity.value_or(1.0);
}

double DvfsGovernor::sensitivity(const workload::Kernel& kernel) const {
  const auto it = kernels_.find(kernel);
  return it == kernels_.end() ? 1.0 : it->second.sensitivity.value_or(1.0);
}

bool DvfsGovernor::knows(const KernelKey& key) const {
  const auto it = kernels_.find(key);
  return it != kernels_.end() && it->second.sensitivity.has_value();
}

std::vector<double> candidate_clocks(const hw::GpuSpec& spec, double step_mhz) {
  std::vector<double> out;
  if (step_mhz > 0 && std::isfinite(step_mhz)) {
    // Stepping down from boost keeps the boost clock on the grid, as NVIDIA's lists are.
    for (double c = spec.boost_clock_mhz - step_mhz; c >= spec.min_clock_mhz - 1e-9;
         c -= step_mhz) {
      out.push_back(c);
    }
    std::reverse(out.begin(), out.end());
  }
  out.push_back(spec.boost_clock_mhz);
  return out;
}

}  // namespace tessera::gpu
