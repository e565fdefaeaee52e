// The time-series peak-memory predictor; the definitions are in docs/mig.md ("Memory estimation
// and prediction").

#include "tessera/mig/policy/peak_predictor.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <span>
#include <utility>

namespace tessera::mig {

namespace {

// Jump detection (objection 2). A sample's rise over the previous one is a jump when it exceeds
// the median of the preceding differences by more than t robust standard deviations (1.4826 x
// their MAD, over at most kNoiseWindow differences, at least kMinNoiseDiffs of them) and by more
// than kMinJumpFraction of the level it rises from.
// The threshold t answers two ways a fixed "6 sigma" failed on flat noisy histories (a MAD of 6
// differences came out 5 times too small, two chance rises 4 samples apart read as a staircase
// and were extrapolated to 4 times the level):
// - the noise is estimated, not known: t is Student's t quantile with the MAD's effective degrees
//   of freedom, kMadEfficiency x (differences - 1) (the MAD of normal data is 37% as efficient as
//   the standard deviation: Rousseeuw and Croux, "Alternatives to the median absolute deviation",
//   JASA 88(424), 1993);
// - every sample is tested: the one-sided tail is per_sample_tail (Bonferroni), so that a flat
//   run sees a false jump with probability under 1 - confidence.
// ASSUMPTION kMinNoiseDiffs = 16: no jump is declared on fewer differences (effective df 5.6,
// t = 13 for 1000 iterations at 99%); on 12 t is 23, on 8 it is 77, past the tens of standard
// deviations of a lazily created optimizer state that the first check must still find.
// ASSUMPTION kMinJumpFraction = 2%: a rise below that stays within the margin between MIG slice
// sizes (the smallest is 1/8 of the GPU), and a GB-sized job's allocator segments stay under it
// (PyTorch's CUDACachingAllocator packs 1-10 MiB allocations in 20 MiB segments, kLargeBuffer,
// and rounds larger ones up to 2 MiB), so it is left to the fits instead of splitting history.
constexpr double kMadEfficiency = 0.37;  // Rousseeuw and Croux 1993: 36.75%, rounded
constexpr double kMadToSigma = 1.4826;   // 1 / Phi^-1(3/4): MAD to standard deviation (normal)
constexpr double kMinJumpFraction = 0.02;
constexpr std::size_t kNoiseWindow = 64;
constexpr std::size_t kMinNoiseDiffs = 16;
// Staircase: jumps whose sizes are each within 25% of their mean and whose spacings are each
// within 25% of their mean (ASSUMPTION: pages or segments of one size, allowing for sampling).
constexpr double kStairTolerance = 0.25;

// Acklam's rational approximation of the standard normal quantile (P. J. Acklam, "An algorithm
// for computing the inverse normal cumulative distribution function", 2003; relative error
// below 1.15e-9).
double normal_quantile(double p) {
  constexpr std::array<double, 6> a = {-3.969683028665376e+01, 2.209460984245205e+02,
                                       -2.759285104469687e+02, 1.383577518672690e+02,
                                       -3.066479806614716e+01, 2.506628277459239e+00};
  constexpr std::array<double, 5> b = {-5.447609879822406e+01, 1.615858368580409e+02,
                                       -1.556989798598866e+02, 6.680131188771972e+01,
                                       -1.328068155288572e+01};
  constexpr std::array<double, 6> c = {-7.784894002430293e-03, -3.223964580411365e-01,
                                       -2.400758277161838e+00, -2.549732539343734e+00,
                                       4.374664141464968e+00,  2.938163982698783e+00};
  constexpr std::array<double, 4> d = {7.784695709041462e-03, 3.224671290700398e-01,
                                       2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  const auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  };
  if (p < kLow) return tail(std::sqrt(-2 * std::log(p)));
  if (p > 1 - kLow) return -tail(std::sqrt(-2 * std::log(1 - p)));
  const double q = p - 0.5;
  const double r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double median(std::vector<double> v) {
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  double m = *mid;
  if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), mid)) / 2;
  return m;
}

double mean(std::span<const double> v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

struct Line {
  double slope = 0;
  double intercept = 0;  // at t = 0
  double at(double t) const { return intercept + slope * t; }
};

// Ordinary least squares of y on t (t strictly ascending, at least two points).
Line fit_line(std::span<const double> t, std::span<const double> y) {
  const double tbar = mean(t);
  const double ybar = mean(y);
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    sxx += (t[i] - tbar) * (t[i] - tbar);
    sxy += (t[i] - tbar) * (y[i] - ybar);
  }
  const double slope = sxx > 0 ? sxy / sxx : 0;
  return {slope, ybar - slope * tbar};
}

double upper_quantile(double confidence, double df) {
  return student_t_quantile((1 + confidence) / 2, std::max(df, 1.0));
}

// The false-positive probability of one model-selection test (a jump, a slope, a curvature).
// Each is tested at every sample and a converged prediction is acted on at any of them, so the
// run's 1 - confidence is shared among its iterations (Bonferroni): a flat run is read as a
// growing one with probability at most 1 - confidence per test kind, not at every sample.
double per_sample_tail(double confidence, std::int64_t total_iterations) {
  return (1 - confidence) / static_cast<double>(std::max<std::int64_t>(total_iterations, 1));
}

// Model selection for the linear model: reserved memory grows only if the slope of its least
// squares line is significantly positive, by a one-sided t-test whose false-positive
// probability is `tail`, b / (s / sqrt(Sxx)) > t_{1 - tail, n-2}. Without it, a flat job's noise
// gives the linear fit a slope near zero whose interval, extrapolated far beyond the history, is
// wide yet stable.
bool grows(std::span<const double> t, std::span<const double> res, double tail) {
  const std::size_t n = t.size();
  if (n < 3) return false;
  const Line line = fit_line(t, res);
  if (!(line.slope > 0)) return false;
  const double tbar = mean(t);
  double sse = 0, sxx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = res[i] - line.at(t[i]);
    sse += e * e;
    sxx += (t[i] - tbar) * (t[i] - tbar);
  }
  const double nn = static_cast<double>(n);
  const double se = std::sqrt(sse / (nn - 2) / sxx);
  return se == 0 || line.slope / se > student_t_quantile(1 - tail, nn - 2);
}

// The flat model with its interval: the mean level and the upper bound of the prediction
// interval for one more sample, mean + t_{n-1} s sqrt(1 + 1/n).
GrowthFit level_model(std::span<const double> res, double confidence) {
  const double m = mean(res);
  const double nn = static_cast<double>(res.size());
  double ss = 0;
  for (double x : res) ss += (x - m) * (x - m);
  const double s = res.size() > 1 ? std::sqrt(ss / (nn - 1)) : 0;
  return {GrowthModel::kFlat, m,
          m + upper_quantile(confidence, nn - 1) * s * std::sqrt(1 + 1 / nn)};
}

// The paper's model: requested r(t) and inverse reuse g(t) = reserved / requested, each linear,
// reserved predicted as r(x0) g(x0) with the prediction interval of the residuals of reserved
// against r(t) g(t). g is held at 1 or more (the allocator never holds less than it hands out).
GrowthFit linear_model(std::span<const double> t, std::span<const double> req,
                       std::span<const double> res, double x0, double confidence) {
  const std::size_t n = t.size();
  std::vector<double> g(n);
  for (std::size_t i = 0; i < n; ++i) g[i] = req[i] > 0 ? res[i] / req[i] : 1.0;
  const Line r = fit_line(t, req);
  const Line gl = fit_line(t, g);
  const auto product = [&](double x) { return std::max(r.at(x), 0.0) * std::max(gl.at(x), 1.0); };
  const double point = product(x0);
  if (n < 3) return {GrowthModel::kLinear, point, point};
  const double tbar = mean(t);
  double sse = 0, sxx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = res[i] - product(t[i]);
    sse += e * e;
    sxx += (t[i] - tbar) * (t[i] - tbar);
  }
  const double nn = static_cast<double>(n);
  const double s = std::sqrt(sse / (nn - 2));
  const double half = upper_quantile(confidence, nn - 2) * s *
                      std::sqrt(1 + 1 / nn + (x0 - tbar) * (x0 - tbar) / sxx);
  return {GrowthModel::kLinear, point, point + half};
}

// The residual sum of squares of the best two-level fit of y (a mean before index k and one
// from k on, k chosen to minimise it, at least two samples on each side).
double best_single_shift_rss(std::span<const double> y) {
  const std::size_t n = y.size();
  const double ybar = mean(y);
  double total = 0, sq = 0;
  for (double v : y) {
    total += v - ybar;
    sq += (v - ybar) * (v - ybar);
  }
  double best = sq, left = 0;
  for (std::size_t k = 1; k + 1 < n; ++k) {
    left += y[k - 1] - ybar;
    if (k < 2) continue;
    const auto nl = static_cast<double>(k);
    const auto nr = static_cast<double>(n - k);
    const double right = total - left;
    best = std::min(best, sq - left * left / nl - right * right / nr);
  }
  return best;
}

// Least squares of reserved on (1, u, u^2), u = (t - tbar) / scale so that the normal equations
// stay well conditioned; kept when the squared term is significant (F-test whose false-positive
// probability is `tail`: F(1, n-3) = t(n-3)^2), the curvature is positive, and it beats a single
// level shift. Its interval is at `confidence`.
std::optional<GrowthFit> quadratic_model(std::span<const double> t, std::span<const double> res,
                                         double x0, double confidence, double tail) {
  const std::size_t n = t.size();
  if (n < 4) return std::nullopt;
  const double tbar = mean(t);
  double scale = 0;
  for (double x : t) scale = std::max(scale, std::abs(x - tbar));
  std::vector<double> u(n);
  for (std::size_t i = 0; i < n; ++i) u[i] = (t[i] - tbar) / scale;

  std::array<double, 5> su{};  // sums of u^k
  std::array<double, 3> sy{};  // sums of y u^k
  for (std::size_t i = 0; i < n; ++i) {
    double p = 1;
    for (std::size_t k = 0; k < 5; ++k) {
      su[k] += p;
      if (k < 3) sy[k] += res[i] * p;
      p *= u[i];
    }
  }
  // Inverse of the symmetric 3x3 matrix [[s0 s1 s2] [s1 s2 s3] [s2 s3 s4]] by cofactors.
  const double m00 = su[2] * su[4] - su[3] * su[3];
  const double m01 = su[2] * su[3] - su[1] * su[4];
  const double m02 = su[1] * su[3] - su[2] * su[2];
  const double m11 = su[0] * su[4] - su[2] * su[2];
  const double m12 = su[1] * su[2] - su[0] * su[3];
  const double m22 = su[0] * su[2] - su[1] * su[1];
  const double det = su[0] * m00 + su[1] * m01 + su[2] * m02;
  if (!(std::abs(det) > 0)) return std::nullopt;
  const std::array<std::array<double, 3>, 3> inv = {{{m00 / det, m01 / det, m02 / det},
                                                     {m01 / det, m11 / det, m12 / det},
                                                     {m02 / det, m12 / det, m22 / det}}};
  std::array<double, 3> beta{};
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t c = 0; c < 3; ++c) beta[r] += inv[r][c] * sy[c];
  }
  if (!(beta[2] > 0)) return std::nullopt;  // not curving upward

  const Line lin = fit_line(t, res);
  double rss_q = 0, rss_l = 0, tss = 0;
  const double ybar = mean(res);
  for (std::size_t i = 0; i < n; ++i) {
    const double eq = res[i] - (beta[0] + beta[1] * u[i] + beta[2] * u[i] * u[i]);
    const double el = res[i] - lin.at(t[i]);
    rss_q += eq * eq;
    rss_l += el * el;
    tss += (res[i] - ybar) * (res[i] - ybar);
  }
  const double df = static_cast<double>(n) - 3;
  const double tq = upper_quantile(confidence, df);
  const double ts = student_t_quantile(1 - tail / 2, df);
  const double gain = rss_l - rss_q;
  // Rounding alone must not make a straight line look curved.
  if (!(gain > ts * ts * rss_q / df) || !(gain > 1e-12 * tss)) return std::nullopt;
  // A level that shifted once (a step under the jump detector's 2% floor, late in a flat
  // history) also looks curved upward; a parabola is kept only if it fits better than the best
  // single shift, which has as many parameters (two levels and where it happens).
  if (!(rss_q < best_single_shift_rss(res))) return std::nullopt;

  const double u0 = (x0 - tbar) / scale;
  const std::array<double, 3> v = {1, u0, u0 * u0};
  double leverage = 0;
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t c = 0; c < 3; ++c) leverage += v[r] * inv[r][c] * v[c];
  }
  const double point = beta[0] + beta[1] * u0 + beta[2] * u0 * u0;
  const double half = tq * std::sqrt(rss_q / df) * std::sqrt(1 + std::max(leverage, 0.0));
  return GrowthFit{GrowthModel::kQuadratic, point, point + half};
}

}  // namespace

std::string_view to_string(GrowthModel m) {
  switch (m) {
    case GrowthModel::kFlat: return "flat";
    case GrowthModel::kLinear: return "linear";
    case GrowthModel::kQuadratic: return "quadratic";
    case GrowthModel::kStaircase: return "staircase";
  }
  return "?";
}

// Hill 1970, as R's qt() implements it (without R's Taylor refinement): exact for df 1 and 2, an
// expansion about the normal quantile for the far tail, and Hill's series otherwise.
double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df >= 1)) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  const double tail = 2 * (1 - p);  // two-sided tail probability
  constexpr double kHalfPi = std::numbers::pi / 2;
  if (df == 1) return std::tan(std::numbers::pi * (p - 0.5));
  if (df == 2) return std::sqrt(2 / (tail * (2 - tail)) - 2);
  const double a = 1 / (df - 0.5);
  const double b = 48 / (a * a);
  double c = ((20700 * a / b - 98) * a - 16) * a + 96.36;
  const double d = ((94.5 / (b + c) - 3) / b + 1) * std::sqrt(a * kHalfPi) * df;
  double y = std::pow(d * tail, 2 / df);
  if (y > 0.05 + a) {
    const double x = normal_quantile(0.5 * tail);
    y = x * x;
    if (df < 5) c += 0.3 * (df - 4.5) * (x + 0.6);
    c = (((0.05 * d * x - 5) * x - 7) * x - 2) * x + b + c;
    y = (((((0.4 * y + 6.3) * y + 36) * y + 94.5) / c - y - 3) / b + 1) * x;
    y = std::expm1(a * y * y);
  } else {
    y = ((1 / (((df + 6) / (df * y) - 0.089 * d - 0.822) * (df + 2) * 3) + 0.5 / (df + 4)) * y -
         1) *
            (df + 1) / (df + 2) +
        1 / y;
  }
  return std::sqrt(df * y);
}

PeakPredictor::PeakPredictor(std::int64_t total_iterations,
                             std::vector<workload::MemoryStep> declared_steps,
                             PredictorOptions options)
    : total_iterations_(total_iterations),
      declared_steps_(std::move(declared_steps)),
      options_(options) {}

void PeakPredictor::add(std::int64_t iteration, std::int64_t requested_bytes,
                        std::int64_t reserved_bytes) {
  const auto t = static_cast<double>(iteration);
  if (!t_.empty() && t <= t_.back()) return;
  t_.push_back(t);
  requested_.push_back(static_cast<double>(requested_bytes));
  reserved_.push_back(static_cast<double>(reserved_bytes));
  detect_jump();
  current_ = compute();
  if (!current_) return;

  // CONVERGE: keep the last converge_window + 1 predicted peaks and compare neighbours.
  const std::size_t keep = static_cast<std::size_t>(std::max(options_.converge_window, 0)) + 1;
  recent_peaks_.push_back(static_cast<double>(current_->peak_bytes));
  if (recent_peaks_.size() > keep) recent_peaks_.erase(recent_peaks_.begin());
  bool steady = recent_peaks_.size() == keep &&
                std::cmp_greater_equal(t_.size(), std::max(options_.min_samples, 2));
  for (std::size_t i = 1; steady && i < recent_peaks_.size(); ++i) {
    const double prev = recent_peaks_[i - 1];
    steady = std::abs(recent_peaks_[i] - prev) < options_.converge_tolerance * std::abs(prev) ||
             recent_peaks_[i] == prev;
  }
  if (steady && options_.converge_precision > 0) {
    const auto point = static_cast<double>(current_->point_bytes);
    steady =
        static_cast<double>(current_->peak_bytes) - point <= options_.converge_precision * point;
  }
  current_->converged = steady;
}

std::optional<PeakPrediction> PeakPredictor::predict() const {
  return current_;
}

void PeakPredictor::detect_jump() {
  const std::size_t k = t_.size() - 1;  // the new sample
  if (k < kMinNoiseDiffs + 1) return;
  // The first check also looks back at the samples before it, against the noise of all the
  // differences so far (their median and MAD shrug off a jump's own): a job's first iterations
  // often lack what it creates lazily (PyTorch builds an optimizer's state at its first step),
  // and that rise would otherwise stay in the fits' history as an outlier that widens them.
  const bool first_check = k == kMinNoiseDiffs + 1;
  const std::size_t first = first_check ? 1 : (k > kNoiseWindow ? k - kNoiseWindow : 1);
  const std::size_t end = first_check ? k + 1 : k;
  std::vector<double> diffs;
  diffs.reserve(end - first);
  for (std::size_t j = first; j < end; ++j) diffs.push_back(reserved_[j] - reserved_[j - 1]);
  const double m = median(diffs);
  std::vector<double> dev(diffs.size());
  for (std::size_t j = 0; j < diffs.size(); ++j) dev[j] = std::abs(diffs[j] - m);
  const double sigma = kMadToSigma * median(std::move(dev));
  const double df = kMadEfficiency * static_cast<double>(diffs.size() - 1);
  const double threshold =
      student_t_quantile(1 - per_sample_tail(options_.confidence, total_iterations_), df) * sigma;
  for (std::size_t j = first_check ? 1 : k; j <= k; ++j) {
    const double rise = reserved_[j] - reserved_[j - 1] - m;
    if (!(rise > threshold) || !(rise > kMinJumpFraction * reserved_[j - 1])) continue;
    const bool declared = std::ranges::any_of(declared_steps_, [&](const workload::MemoryStep& s) {
      const auto at = static_cast<double>(s.iteration);
      return at > t_[j - 1] && at <= t_[j];
    });
    jumps_.push_back({.index = j,
                      .iteration = t_[j],
                      .noise_sigma = sigma,
                      .noise_df = static_cast<int>(diffs.size()) - 1,
                      .declared = declared});
  }
}

// Staircase: the longest run of trailing jumps, none of them declared, whose sizes are each
// within kStairTolerance of their mean and whose spacings likewise. A jump's size is the
// difference of the mean levels on either side of it, so the run's mean jump telescopes to
// (m_last - m_before) / run, where m_before is the level before the run's first jump and m_last
// the level since its last. Prediction: m_last + mean jump x the jumps still to come at the
// mean spacing, with the interval of that linear combination of segment means under the
// pooled within-segment noise (plus one future sample's noise).
std::optional<GrowthFit> PeakPredictor::staircase_model(double x0) const {
  const std::size_t n = t_.size();
  std::vector<std::size_t> bounds = {0};
  for (const Jump& j : jumps_) bounds.push_back(j.index);
  bounds.push_back(n);
  const auto segment = [&](std::size_t s) {
    return std::span<const double>(reserved_.data() + bounds[s], bounds[s + 1] - bounds[s]);
  };
  // Jump j lies between segments j and j + 1.
  const auto size = [&](std::size_t j) { return mean(segment(j + 1)) - mean(segment(j)); };

  std::size_t run = 0;
  for (std::size_t len = 2; len <= jumps_.size(); ++len) {
    const std::size_t first = jumps_.size() - len;
    if (jumps_[first].declared || jumps_.back().declared) break;
    double mean_size = 0, spacing = 0;
    for (std::size_t j = first; j < jumps_.size(); ++j)
      mean_size += size(j) / static_cast<double>(len);
    spacing = (jumps_.back().iteration - jumps_[first].iteration) / static_cast<double>(len - 1);
    bool steady = mean_size > 0;
    for (std::size_t j = first; steady && j < jumps_.size(); ++j) {
      steady = std::abs(size(j) - mean_size) <= kStairTolerance * mean_size;
      if (steady && j > first) {
        const double gap = jumps_[j].iteration - jumps_[j - 1].iteration;
        steady = std::abs(gap - spacing) <= kStairTolerance * spacing;
      }
    }
    if (!steady) break;
    run = len;
  }
  if (run < 2) return std::nullopt;

  const std::size_t first = jumps_.size() - run;
  const double r = static_cast<double>(run);
  const double period = (jumps_.back().iteration - jumps_[first].iteration) / (r - 1);
  // Right after the last jump before the end this is 0 and still bounds the new level's noise.
  const double further = std::max(std::floor((x0 - jumps_.back().iteration) / period), 0.0);
  const auto before = segment(first);
  const auto last = segment(jumps_.size());
  const double m_before = mean(before);
  const double m_last = mean(last);
  const double jump = (m_last - m_before) / r;
  const double point = m_last + jump * further;

  double sse = 0;
  std::size_t count = 0;
  for (std::size_t s = first; s <= jumps_.size(); ++s) {
    const auto seg = segment(s);
    const double m = mean(seg);
    for (double x : seg) sse += (x - m) * (x - m);
    count += seg.size();
  }
  const double df = static_cast<double>(count) - (r + 1);
  double sigma = 0;
  double sigma_df = df;
  if (df >= 1) {
    sigma = std::sqrt(sse / df);
  } else {  // too few samples to pool: the robust noise of the differences at the last jump
    sigma = jumps_.back().noise_sigma / std::numbers::sqrt2;
    sigma_df = jumps_.back().noise_df;
  }
  const double w_last = 1 + further / r;
  const double w_before = further / r;
  const double var = 1 + w_last * w_last / static_cast<double>(last.size()) +
                     w_before * w_before / static_cast<double>(before.size());
  const double half = upper_quantile(options_.confidence, sigma_df) * sigma * std::sqrt(var);
  return GrowthFit{GrowthModel::kStaircase, point, point + half};
}

std::optional<PeakPrediction> PeakPredictor::compute() const {
  const std::size_t n = t_.size();
  if (n < 2) return std::nullopt;
  const double x0 = std::max(static_cast<double>(total_iterations_ - 1), t_.back());
  const double conf = options_.confidence;
  const double tail = per_sample_tail(conf, total_iterations_);

  std::vector<GrowthFit> candidates;
  candidates.push_back({GrowthModel::kFlat, *std::ranges::max_element(reserved_),
                        *std::ranges::max_element(reserved_)});

  // The fits cover the history since the last jump: a level change is not a trend.
  const std::size_t start = options_.linear_only || jumps_.empty() ? 0 : jumps_.back().index;
  const std::span<const double> t(t_.data() + start, n - start);
  const std::span<const double> req(requested_.data() + start, n - start);
  const std::span<const double> res(reserved_.data() + start, n - start);
  // Right after a jump, the last sample's ratio stands in for the fit.
  double inverse_reuse =
      requested_.back() > 0 ? std::max(reserved_.back() / requested_.back(), 1.0) : 1.0;
  if (t.size() >= 2) {
    // The paper always fits the line; ours only when the growth is significant.
    candidates.push_back(options_.linear_only || grows(t, res, tail)
                             ? linear_model(t, req, res, x0, conf)
                             : level_model(res, conf));
    std::vector<double> g(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) g[i] = req[i] > 0 ? res[i] / req[i] : 1.0;
    inverse_reuse = std::max(fit_line(t, g).at(x0), 1.0);
  }
  if (!options_.linear_only) {
    if (auto q = quadratic_model(t, res, x0, conf, tail)) candidates.push_back(*q);
    if (auto stairs = staircase_model(x0)) candidates.push_back(*stairs);
  }

  // Declared steps still ahead, at the reserved-to-requested ratio expected then.
  double declared = 0;
  for (const workload::MemoryStep& s : declared_steps_) {
    const auto at = static_cast<double>(s.iteration);
    if (at > t_.back() && at <= x0) declared += static_cast<double>(s.bytes) * inverse_reuse;
  }

  const auto best = std::ranges::max_element(
      candidates, [](const GrowthFit& a, const GrowthFit& b) { return a.peak < b.peak; });
  double point = 0;
  for (const GrowthFit& c : candidates) point = std::max(point, c.point);
  const auto bytes = [](double b) {
    return static_cast<std::int64_t>(std::ceil(std::clamp(b, 0.0, 9.0e18)));
  };
  PeakPrediction out;
  out.point_bytes = bytes(point + declared);
  out.peak_bytes = std::max(bytes(best->peak + declared), out.point_bytes);
  out.model = best->model;
  out.samples = static_cast<std::int64_t>(n);
  return out;
}

}  // namespace tessera::mig
