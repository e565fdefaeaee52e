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

using detail::append;
using detail::FitHistory;
using detail::Level;
using detail::Moments;
using detail::moments;
using detail::parabola_beats_single_shift;
using detail::squared_residuals;
using detail::Sums;

// The median of ascending w (the mean of the middle two for an even count).
double sorted_median(std::span<const double> w) {
  const std::size_t mid = w.size() / 2;
  return w.size() % 2 == 0 ? (w[mid] + w[mid - 1]) / 2 : w[mid];
}

// The median of |w_i - m| for ascending w: the deviations of the values up to m, walked down from
// m, and of those above it, walked up, are each ascending, so merging the two runs from m outwards
// gives them in order.
double median_deviation(std::span<const double> w, double m) {
  const std::size_t mid = w.size() / 2;
  std::size_t below = static_cast<std::size_t>(std::ranges::upper_bound(w, m) - w.begin());
  std::size_t above = below;
  double previous = 0, current = 0;
  for (std::size_t rank = 0; rank <= mid; ++rank) {
    previous = current;
    const bool take_below = above == w.size() || (below > 0 && m - w[below - 1] <= w[above] - m);
    current = take_below ? m - w[--below] : w[above++] - m;
  }
  return w.size() % 2 == 0 ? (current + previous) / 2 : current;
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

struct Line {
  double slope = 0;
  double mean = 0;  // at tbar
  double tbar = 0;
  double at(double t) const { return mean + slope * (t - tbar); }
};

// Least squares lines of requested memory and of g = reserved / requested on t.
Line requested_line(const Moments& m) {
  const FitHistory& h = *m.h;
  return {m.sxx > 0 ? (h.r_tau - m.taubar * h.r) / m.sxx : 0, h.r_sum / m.n, m.tbar};
}

Line reuse_line(const Moments& m) {
  const FitHistory& h = *m.h;
  return {m.sxx > 0 ? (h.g_tau - m.taubar * h.g) / m.sxx : 0, h.g_sum / m.n, m.tbar};
}

// Model selection for the linear model: reserved memory grows only if the slope of its least
// squares line is significantly positive, by a one-sided t-test whose false-positive
// probability is `tail`, b / (s / sqrt(Sxx)) > t_{1 - tail, n-2}. Without it, a flat job's noise
// gives the linear fit a slope near zero whose interval, extrapolated far beyond the history, is
// wide yet stable.
bool grows(const Moments& m, double tail) {
  if (m.n < 3 || !(m.slope > 0)) return false;
  const double se = std::sqrt(m.rss_line / (m.n - 2) / m.sxx);
  return se == 0 || m.slope / se > student_t_quantile(1 - tail, m.n - 2);
}

// The flat model with its interval: the mean level and the upper bound of the prediction
// interval for one more sample, mean + t_{n-1} s sqrt(1 + 1/n).
GrowthFit level_model(const Moments& m, double confidence) {
  const double s = m.n > 1 ? std::sqrt(m.syy / (m.n - 1)) : 0;
  return {GrowthModel::kFlat, m.ybar,
          m.ybar + upper_quantile(confidence, m.n - 1) * s * std::sqrt(1 + 1 / m.n)};
}

// The residual sum of squares of reserved against r(t) g(t), g held at 1 or more and r at 0 or
// more. Each clamp holds on one side of where its line crosses, so the product is a polynomial
// of degree 2 or less on each of at most three runs of samples, found by bisection on t.
double product_residuals(const Moments& m, std::span<const double> t, const Line& r,
                         const Line& g) {
  const FitHistory& h = *m.h;
  const auto r_pos = [&](std::size_t i) { return r.at(t[i]) > 0; };
  const auto g_above = [&](std::size_t i) { return g.at(t[i]) > 1; };
  const std::size_t n = t.size();
  // The first sample where `pred` differs from the first sample's (n if none): a line's sign
  // changes at most once.
  const auto change = [&](const auto& pred) {
    const bool first = pred(0);
    if (pred(n - 1) == first) return n;
    std::size_t lo = 0, hi = n - 1;  // pred(lo) == first, pred(hi) != first
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      (pred(mid) == first ? lo : hi) = mid;
    }
    return hi;
  };
  std::array<std::size_t, 4> cuts = {0, change(r_pos), change(g_above), n};
  std::sort(cuts.begin() + 1, cuts.begin() + 3);
  // r and g about tau = 0, the fit history's first sample.
  const double ra = r.at(h.t0), rb = r.slope;
  const double ga = g.at(h.t0), gb = g.slope;
  double sse = 0;
  for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
    const std::size_t a = cuts[c], b = cuts[c + 1];
    if (a == b) continue;
    const Sums run = h.prefix[b] - h.prefix[a];
    if (!r_pos(a)) {
      sse += squared_residuals(run, -h.y0, 0, 0);
    } else if (!g_above(a)) {
      sse += squared_residuals(run, ra - h.y0, rb, 0);
    } else {
      sse += squared_residuals(run, ra * ga - h.y0, ra * gb + rb * ga, rb * gb);
    }
  }
  return std::max(sse, 0.0);
}

// The paper's model: requested r(t) and inverse reuse g(t) = reserved / requested, each linear,
// reserved predicted as r(x0) g(x0) with the prediction interval of the residuals of reserved
// against r(t) g(t). g is held at 1 or more (the allocator never holds less than it hands out).
GrowthFit linear_model(const Moments& m, std::span<const double> t, double x0, double confidence) {
  const Line r = requested_line(m);
  const Line g = reuse_line(m);
  const double point = std::max(r.at(x0), 0.0) * std::max(g.at(x0), 1.0);
  if (m.n < 3) return {GrowthModel::kLinear, point, point};
  const double s = std::sqrt(product_residuals(m, t, r, g) / (m.n - 2));
  const double half = upper_quantile(confidence, m.n - 2) * s *
                      std::sqrt(1 + 1 / m.n + (x0 - m.tbar) * (x0 - m.tbar) / m.sxx);
  return {GrowthModel::kLinear, point, point + half};
}

// Least squares of reserved on (1, u, u^2), u = (t - tbar) / scale so that the normal equations
// stay well conditioned; kept when the squared term is significant (F-test whose false-positive
// probability is `tail`: F(1, n-3) = t(n-3)^2), the curvature is positive, and it beats a single
// level shift. Its interval is at `confidence`.
std::optional<GrowthFit> quadratic_model(const Moments& m, double t_last, double x0,
                                         double confidence, double tail) {
  if (m.n < 4) return std::nullopt;
  const FitHistory& h = *m.h;
  const Sums& s = *m.s;
  const double c = m.taubar;
  const double scale = std::max(c, t_last - h.t0 - c);
  // Centred sums of powers of tau, and of dy times them, from the sums about t0.
  const double c3 = s.tau3 - 3 * c * s.tau2 + 2 * c * c * s.tau;
  const double c4 = s.tau4 - 4 * c * s.tau3 + 6 * c * c * s.tau2 - 3 * c * c * c * s.tau;
  const double d1 = s.y_tau - c * s.y;
  const double d2 = s.y_tau2 - 2 * c * s.y_tau + c * c * s.y;
  const std::array<double, 5> su = {m.n, 0, m.sxx / (scale * scale), c3 / (scale * scale * scale),
                                    c4 / (scale * scale * scale * scale)};   // sums of u^k
  const std::array<double, 3> sy = {s.y, d1 / scale, d2 / (scale * scale)};  // of dy u^k
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
    for (std::size_t col = 0; col < 3; ++col) beta[r] += inv[r][col] * sy[col];
  }
  beta[0] += h.y0;                          // the fit of dy, shifted back
  if (!(beta[2] > 0)) return std::nullopt;  // not curving upward

  // The squared term's share of the sum of squares, beta_2^2 / (M^-1)_22 (the added-variable
  // form, free of the cancellation of two residual sums).
  const double gain = beta[2] * beta[2] / inv[2][2];
  const double rss_q = std::max(m.rss_line - gain, 0.0);
  const double df = m.n - 3;
  const double ts = student_t_quantile(1 - tail / 2, df);
  // Rounding alone must not make a straight line look curved.
  if (!(gain > ts * ts * rss_q / df) || !(gain > 1e-12 * m.syy)) return std::nullopt;
  // A level that shifted once (a step under the jump detector's 2% floor, late in a flat
  // history) also looks curved upward; a parabola is kept only if it fits better than the best
  // single shift, which has as many parameters (two levels and where it happens).
  if (!parabola_beats_single_shift(h, rss_q, m.syy)) return std::nullopt;

  const double u0 = (x0 - m.tbar) / scale;
  const std::array<double, 3> v = {1, u0, u0 * u0};
  double leverage = 0;
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t col = 0; col < 3; ++col) leverage += v[r] * inv[r][col] * v[col];
  }
  const double point = beta[0] + beta[1] * u0 + beta[2] * u0 * u0;
  const double half = upper_quantile(confidence, df) * std::sqrt(rss_q / df) *
                      std::sqrt(1 + std::max(leverage, 0.0));
  return GrowthFit{GrowthModel::kQuadratic, point, point + half};
}

// Count, mean and sum of squared deviations of v.
Level level_of(std::span<const double> v) {
  double sum = 0;
  for (double x : v) sum += x;
  const double m = sum / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return {static_cast<double>(v.size()), m, ss};
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
  const auto reserved = static_cast<double>(reserved_bytes);
  max_reserved_ = t_.empty() ? reserved : std::max(max_reserved_, reserved);
  t_.push_back(t);
  requested_.push_back(static_cast<double>(requested_bytes));
  reserved_.push_back(reserved);
  const std::size_t jumps = jumps_.size();
  detect_jump();
  close_levels();
  // The fits cover the history since the last jump: a level change is not a trend.
  if (!options_.linear_only && jumps_.size() > jumps) {
    refit_from(jumps_.back().index);
  } else {
    append(fit_, t, requested_.back(), reserved);
  }
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
  slide_noise_window(first, end);
  const std::span<const double> diffs = noise_window_;
  const double m = sorted_median(diffs);
  const double sigma = kMadToSigma * median_deviation(diffs, m);
  const double df = kMadEfficiency * static_cast<double>(diffs.size() - 1);
  // Once the window is full the quantile's degrees of freedom stay put.
  if (df != jump_quantile_df_) {
    jump_quantile_df_ = df;
    jump_quantile_ =
        student_t_quantile(1 - per_sample_tail(options_.confidence, total_iterations_), df);
  }
  const double threshold = jump_quantile_ * sigma;
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

// Moves the sorted window of differences to those of samples [first, end): each difference goes
// in and out once, by bisection.
void PeakPredictor::slide_noise_window(std::size_t first, std::size_t end) {
  const auto diff = [&](std::size_t j) { return reserved_[j] - reserved_[j - 1]; };
  for (; noise_end_ < end; ++noise_end_) {
    const double d = diff(noise_end_);
    noise_window_.insert(std::ranges::upper_bound(noise_window_, d), d);
  }
  for (; noise_first_ < first; ++noise_first_) {
    noise_window_.erase(std::ranges::lower_bound(noise_window_, diff(noise_first_)));
  }
}

// The levels that the jumps found since the last call closed, from their samples (once each).
void PeakPredictor::close_levels() {
  while (levels_.size() < jumps_.size()) {
    const std::size_t s = levels_.size();
    const std::size_t begin = s == 0 ? 0 : jumps_[s - 1].index;
    levels_.push_back(level_of(std::span(reserved_).subspan(begin, jumps_[s].index - begin)));
  }
}

void PeakPredictor::refit_from(std::size_t start) {
  fit_ = detail::FitHistory{};
  fit_.start = start;
  for (std::size_t i = start; i < t_.size(); ++i) append(fit_, t_[i], requested_[i], reserved_[i]);
}

// Staircase: the longest run of trailing jumps, none of them declared, whose sizes are each
// within kStairTolerance of their mean and whose spacings likewise. A jump's size is the
// difference of the mean levels on either side of it, so the run's mean jump telescopes to
// (m_last - m_before) / run, where m_before is the level before the run's first jump and m_last
// the level since its last. Prediction: m_last + mean jump x the jumps still to come at the
// mean spacing, with the interval of that linear combination of segment means under the
// pooled within-segment noise (plus one future sample's noise).
std::optional<GrowthFit> PeakPredictor::staircase_model(double x0) const {
  const std::size_t jumps = jumps_.size();
  if (jumps < 2 || jumps_.back().declared) return std::nullopt;
  // Level s lies before jump s; the last one is the fit history.
  const Sums& fit = fit_.prefix.back();
  const detail::Level last{fit.n, fit_.y_sum / fit.n,
                           std::max(fit.yy - fit.y * fit.y / fit.n, 0.0)};
  const auto level = [&](std::size_t s) -> const detail::Level& {
    return s < levels_.size() ? levels_[s] : last;
  };
  // Jump j lies between levels j and j + 1.
  const auto size = [&](std::size_t j) { return level(j + 1).mean - level(j).mean; };

  // Lengthening the run backwards, with the extremes of its sizes and gaps: each length is
  // checked in O(1).
  std::size_t run = 0;
  double size_sum = size(jumps - 1);
  double size_min = size_sum, size_max = size_sum;
  double gap_min = std::numeric_limits<double>::infinity(), gap_max = -gap_min;
  for (std::size_t len = 2; len <= jumps; ++len) {
    const std::size_t first = jumps - len;
    if (jumps_[first].declared) break;
    const double s = size(first);
    size_sum += s;
    size_min = std::min(size_min, s);
    size_max = std::max(size_max, s);
    const double gap = jumps_[first + 1].iteration - jumps_[first].iteration;
    gap_min = std::min(gap_min, gap);
    gap_max = std::max(gap_max, gap);
    const double mean_size = size_sum / static_cast<double>(len);
    const double spacing =
        (jumps_.back().iteration - jumps_[first].iteration) / static_cast<double>(len - 1);
    const bool steady = mean_size > 0 &&
                        std::max(std::abs(size_max - mean_size), std::abs(size_min - mean_size)) <=
                            kStairTolerance * mean_size &&
                        std::max(std::abs(gap_max - spacing), std::abs(gap_min - spacing)) <=
                            kStairTolerance * spacing;
    if (!steady) break;
    run = len;
  }
  if (run < 2) return std::nullopt;

  const std::size_t first = jumps - run;
  const double r = static_cast<double>(run);
  const double period = (jumps_.back().iteration - jumps_[first].iteration) / (r - 1);
  // Right after the last jump before the end this is 0 and still bounds the new level's noise.
  const double further = std::max(std::floor((x0 - jumps_.back().iteration) / period), 0.0);
  const detail::Level& before = level(first);
  const double jump = (last.mean - before.mean) / r;
  const double point = last.mean + jump * further;

  double sse = 0, count = 0;
  for (std::size_t s = first; s <= jumps; ++s) {
    sse += level(s).ss;
    count += level(s).count;
  }
  const double df = count - (r + 1);
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
  const double var = 1 + w_last * w_last / last.count + w_before * w_before / before.count;
  const double half = upper_quantile(options_.confidence, sigma_df) * sigma * std::sqrt(var);
  return GrowthFit{GrowthModel::kStaircase, point, point + half};
}

std::optional<PeakPrediction> PeakPredictor::compute() const {
  const std::size_t n = t_.size();
  if (n < 2) return std::nullopt;
  const double x0 = std::max(static_cast<double>(total_iterations_ - 1), t_.back());
  const double conf = options_.confidence;
  const double tail = per_sample_tail(conf, total_iterations_);

  std::array<GrowthFit, 4> candidates{};
  std::size_t count = 0;
  candidates[count++] = {GrowthModel::kFlat, max_reserved_, max_reserved_};

  const Moments m = moments(fit_);
  const std::span<const double> t = std::span(t_).subspan(fit_.start);
  // Right after a jump, the last sample's ratio stands in for the fit.
  double inverse_reuse =
      requested_.back() > 0 ? std::max(reserved_.back() / requested_.back(), 1.0) : 1.0;
  if (m.n >= 2) {
    // The paper always fits the line; ours only when the growth is significant.
    candidates[count++] = options_.linear_only || grows(m, tail) ? linear_model(m, t, x0, conf)
                                                                 : level_model(m, conf);
    inverse_reuse = std::max(reuse_line(m).at(x0), 1.0);
  }
  if (!options_.linear_only) {
    if (auto q = quadratic_model(m, t_.back(), x0, conf, tail)) candidates[count++] = *q;
    if (auto stairs = staircase_model(x0)) candidates[count++] = *stairs;
  }

  // Declared steps still ahead, at the reserved-to-requested ratio expected then.
  double declared = 0;
  for (const workload::MemoryStep& s : declared_steps_) {
    const auto at = static_cast<double>(s.iteration);
    if (at > t_.back() && at <= x0) declared += static_cast<double>(s.bytes) * inverse_reuse;
  }

  const std::span<const GrowthFit> fits(candidates.data(), count);
  const auto best = std::ranges::max_element(
      fits, [](const GrowthFit& a, const GrowthFit& b) { return a.peak < b.peak; });
  double point = 0;
  for (const GrowthFit& c : fits) point = std::max(point, c.point);
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
