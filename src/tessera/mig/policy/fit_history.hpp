#pragma once
// The peak predictor's fit history (see peak_predictor.hpp): the samples its fits cover, kept as
// running sums so that a sample costs the same whatever the history's length. From them come the
// least squares quantities of the fits in closed form, the residual sum of squares of any
// polynomial of degree 2 or less over any run of samples, and the test of a parabola against the
// best single level shift, which reads block summaries instead of scanning every split.

#include <cstddef>
#include <vector>

namespace tessera::mig::detail {

// Sums over a run of the fit history's samples, about its first sample: tau = t - t0 and
// dy = reserved - y0. Each fit's least squares and residual sum of squares follow from them in
// closed form; the origin keeps those differences of sums of GB-sized squares from cancelling.
struct Sums {
  double n = 0, tau = 0, tau2 = 0, tau3 = 0, tau4 = 0;  // count, sums of tau^k
  double y = 0, y_tau = 0, y_tau2 = 0, yy = 0;          // sums of dy tau^k and of dy^2
};

Sums operator+(const Sums& a, const Sums& b);
Sums operator-(const Sums& a, const Sums& b);

// The history the fits cover (since the last jump; all of it for linear_only), as running sums:
// a sample costs the same whatever its length.
struct FitHistory {
  std::size_t start = 0;                              // the index of its first sample
  double t0 = 0, y0 = 0, r0 = 0, g0 = 0;              // its first sample; g = reserved / requested
  std::vector<Sums> prefix = {Sums{}};                // prefix[i]: over its first i samples
  double t_sum = 0, y_sum = 0, r_sum = 0, g_sum = 0;  // plain sums in sample order, for the means
  double r = 0, r_tau = 0, g = 0, g_tau = 0;  // sums of dr and dr tau, dg and dg tau, about r0, g0
  // For the single-shift search: blocks[l][b] is the range of the offsets of the prefix sums of
  // dy in [b w, (b + 1) w), w = 16 << l, from the chord through the block's first and last.
  struct Offsets {
    double lo = 0, hi = 0;
  };
  std::vector<std::vector<Offsets>> blocks;
};

// One more sample into the fit history's sums; its first sample sets the origin.
void append(FitHistory& h, double t, double requested, double reserved);

// The sum over a run of samples of (dy - c0 - c1 tau - c2 tau^2)^2, from the run's sums.
double squared_residuals(const Sums& s, double c0, double c1, double c2);

// The least squares quantities of reserved memory on t over the fit history, centred.
struct Moments {
  const FitHistory* h = nullptr;
  const Sums* s = nullptr;  // over the whole fit history
  double n = 0;
  double tbar = 0, ybar = 0;
  double taubar = 0;    // tbar - t0
  double sxx = 0;       // sum (t - tbar)^2
  double sxy = 0;       // sum (t - tbar)(y - ybar)
  double syy = 0;       // sum (y - ybar)^2
  double slope = 0;     // of reserved on t
  double rss_line = 0;  // residual sum of squares of that line
};

Moments moments(const FitHistory& h);

// Whether a parabola's residual sum of squares rss_q over the fit history is below that of the
// best two-level fit of reserved (a mean before split k and one from k on, 2 <= k <= n-2) and
// below the flat fit's, sq. The answer is that of scanning every split, without the scan.
bool parabola_beats_single_shift(const FitHistory& h, double rss_q, double sq);

}  // namespace tessera::mig::detail
