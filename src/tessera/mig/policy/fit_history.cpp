// The peak predictor's fit history: its running sums, and the closed-form quantities and the
// single-shift search that read them.

#include "tessera/mig/policy/fit_history.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace tessera::mig::detail {

Sums operator+(const Sums& a, const Sums& b) {
  return {a.n + b.n, a.tau + b.tau,     a.tau2 + b.tau2,     a.tau3 + b.tau3, a.tau4 + b.tau4,
          a.y + b.y, a.y_tau + b.y_tau, a.y_tau2 + b.y_tau2, a.yy + b.yy};
}

Sums operator-(const Sums& a, const Sums& b) {
  return {a.n - b.n, a.tau - b.tau,     a.tau2 - b.tau2,     a.tau3 - b.tau3, a.tau4 - b.tau4,
          a.y - b.y, a.y_tau - b.y_tau, a.y_tau2 - b.y_tau2, a.yy - b.yy};
}

double squared_residuals(const Sums& s, double c0, double c1, double c2) {
  return s.yy - 2 * (c0 * s.y + c1 * s.y_tau + c2 * s.y_tau2) + c0 * c0 * s.n +
         2 * c0 * c1 * s.tau + (c1 * c1 + 2 * c0 * c2) * s.tau2 + 2 * c1 * c2 * s.tau3 +
         c2 * c2 * s.tau4;
}

namespace {

// The split search's smallest block: 16 prefix sums (kLeaf), scanned one by one.
constexpr std::size_t kLeaf = 16;

// The range of the offsets of prefix sums [a, e] of dy from the chord through p[a] and p[e].
FitHistory::Offsets chord_offsets(std::span<const Sums> p, std::size_t a, std::size_t e) {
  const double slope = (p[e].y - p[a].y) / static_cast<double>(e - a);
  FitHistory::Offsets o;
  for (std::size_t k = a; k <= e; ++k) {
    const double d = p[k].y - p[a].y - static_cast<double>(k - a) * slope;
    o.lo = std::min(o.lo, d);
    o.hi = std::max(o.hi, d);
  }
  return o;
}

// The same for [a, e] from its halves' ranges, [a, m) and [m, e]: a half's chord is off the
// whole's by a linear function, so its offsets move by at most that function's values at its ends.
FitHistory::Offsets merge_offsets(std::span<const Sums> p, std::size_t a, std::size_t m,
                                  std::size_t e, const FitHistory::Offsets& left,
                                  const FitHistory::Offsets& right) {
  const double slope = (p[e].y - p[a].y) / static_cast<double>(e - a);
  const auto off = [&](std::size_t k) {
    return p[k].y - p[a].y - static_cast<double>(k - a) * slope;
  };
  const double d1 = off(m - 1);
  const double d2 = off(m);
  return {std::min(left.lo + std::min(d1, 0.0), right.lo + std::min(d2, 0.0)),
          std::max(left.hi + std::max(d1, 0.0), right.hi + std::max(d2, 0.0))};
}

// Once the prefix sums fill a block of kLeaf, its offsets, and those of every larger block it
// completes (as in a binary counter: amortized O(1) per sample).
void extend_blocks(FitHistory& h) {
  const std::size_t count = h.prefix.size();
  if (count % kLeaf != 0) return;
  if (h.blocks.empty()) h.blocks.emplace_back();
  h.blocks[0].push_back(chord_offsets(h.prefix, count - kLeaf, count - 1));
  std::size_t w = kLeaf;
  for (std::size_t l = 0; h.blocks[l].size() % 2 == 0; ++l, w *= 2) {
    const auto& level = h.blocks[l];
    const FitHistory::Offsets merged = merge_offsets(h.prefix, count - 2 * w, count - w, count - 1,
                                                     level[level.size() - 2], level.back());
    if (h.blocks.size() == l + 1) h.blocks.emplace_back();
    h.blocks[l + 1].push_back(merged);
  }
}

}  // namespace

void append(FitHistory& h, double t, double requested, double reserved) {
  const double g = requested > 0 ? reserved / requested : 1.0;
  if (h.prefix.size() == 1) {
    h.t0 = t;
    h.y0 = reserved;
    h.r0 = requested;
    h.g0 = g;
  }
  const double tau = t - h.t0;
  const double tau2 = tau * tau;
  const double dy = reserved - h.y0;
  h.prefix.push_back(h.prefix.back() +
                     Sums{1, tau, tau2, tau2 * tau, tau2 * tau2, dy, dy * tau, dy * tau2, dy * dy});
  h.t_sum += t;
  h.y_sum += reserved;
  h.r_sum += requested;
  h.g_sum += g;
  h.r += requested - h.r0;
  h.r_tau += (requested - h.r0) * tau;
  h.g += g - h.g0;
  h.g_tau += (g - h.g0) * tau;
  extend_blocks(h);
}

Moments moments(const FitHistory& h) {
  Moments m;
  m.h = &h;
  m.s = &h.prefix.back();
  const Sums& s = *m.s;
  m.n = s.n;
  m.tbar = h.t_sum / s.n;
  m.ybar = h.y_sum / s.n;
  m.taubar = s.tau / s.n;
  m.sxx = s.tau2 - m.taubar * s.tau;
  m.sxy = s.y_tau - m.taubar * s.y;
  m.syy = std::max(s.yy - s.y * s.y / s.n, 0.0);
  m.slope = m.sxx > 0 ? m.sxy / m.sxx : 0;
  m.rss_line = std::max(m.syy - m.slope * m.sxy, 0.0);
  return m;
}

namespace {

// The search behind parabola_beats_single_shift. The two-level fit split at k leaves the residual
// sum of squares sq - L^2 n / (k (n - k)), L the sum of the first k deviations from the mean, from
// the prefix sums of dy. Rather than every split, the search visits the blocks of
// FitHistory::blocks and skips a block once a bound on its L (its chord's ends, less the mean's
// line, plus its offsets' range) shows no split in it reaches rss_q; the splits it does visit get
// the same test, so the answer is the scan's.
class ShiftSearch {
 public:
  ShiftSearch(const FitHistory& h, double rss_q, double sq)
      : p_(h.prefix),
        blocks_(h.blocks),
        n_(p_.size() - 1),
        mean_(p_[n_].y / static_cast<double>(n_)),
        total_(p_[n_].y - static_cast<double>(n_) * mean_),
        rss_q_(rss_q),
        sq_(sq),
        // Rounding in the bounds and in a split's sum of squares is far below this margin.
        floor_(sq - rss_q - 1e-9 * (std::abs(sq - rss_q) + std::abs(sq))) {}

  bool parabola_wins() const {
    if (!(rss_q_ < sq_)) return false;
    std::size_t pos = 0;  // the blocks, largest first, tile the prefix sums as a binary counter
    for (std::size_t l = blocks_.size(); l-- > 0;) {
      const std::size_t w = kLeaf << l;
      for (; pos / w < blocks_[l].size(); pos += w) {
        if (reaches(l, pos / w)) return false;
      }
    }
    for (std::size_t k = pos; k + 2 <= n_; ++k) {
      if (split_reaches(k)) return false;
    }
    return true;
  }

 private:
  std::span<const Sums> p_;
  std::span<const std::vector<FitHistory::Offsets>> blocks_;
  std::size_t n_;
  double mean_, total_, rss_q_, sq_, floor_;

  double left(std::size_t k) const { return p_[k].y - static_cast<double>(k) * mean_; }

  // As the two-level scan computes it.
  bool split_reaches(std::size_t k) const {
    if (k < 2 || k + 2 > n_) return false;
    const double l = left(k);
    const double r = total_ - l;
    const auto nl = static_cast<double>(k);
    const auto nr = static_cast<double>(n_ - k);
    return !(rss_q_ < sq_ - l * l / nl - r * r / nr);
  }

  bool reaches(std::size_t level, std::size_t block) const {
    const std::size_t w = kLeaf << level;
    const std::size_t a = block * w, e = a + w - 1;
    const std::size_t k0 = std::max<std::size_t>(a, 2);
    const std::size_t k1 = std::min(e, n_ >= 2 ? n_ - 2 : 0);
    if (k0 > k1) return false;
    if (!may_reach(level, block, a, e, k0, k1)) return false;
    if (level == 0) {
      for (std::size_t k = k0; k <= k1; ++k) {
        if (split_reaches(k)) return true;
      }
      return false;
    }
    return reaches(level - 1, 2 * block) || reaches(level - 1, 2 * block + 1);
  }

  // Whether a split k in [k0, k1] of block [a, e] might have sq - L^2 n / (k (n - k)) <= rss_q.
  bool may_reach(std::size_t level, std::size_t block, std::size_t a, std::size_t e, std::size_t k0,
                 std::size_t k1) const {
    const FitHistory::Offsets& o = blocks_[level][block];
    const double slope = (p_[e].y - p_[a].y) / static_cast<double>(e - a);
    // L(k) = chord(k) - k mean + offset(k); the first two are linear in k.
    const auto line = [&](std::size_t k) {
      return p_[a].y + static_cast<double>(k - a) * slope - static_cast<double>(k) * mean_;
    };
    const double lo = std::min(line(k0), line(k1)) + o.lo;
    const double hi = std::max(line(k0), line(k1)) + o.hi;
    const double scale = std::abs(p_[a].y) + std::abs(p_[e].y) + std::abs(o.lo) + std::abs(o.hi) +
                         static_cast<double>(k1) * std::abs(mean_);
    const double l = std::max(std::abs(lo), std::abs(hi)) * (1 + 1e-9) + 1e-12 * scale;
    const auto weight = [&](std::size_t k) {
      return static_cast<double>(k) * static_cast<double>(n_ - k);
    };
    const double explained = l * l * static_cast<double>(n_) / std::min(weight(k0), weight(k1));
    return explained >= floor_;
  }
};

}  // namespace

bool parabola_beats_single_shift(const FitHistory& h, double rss_q, double sq) {
  return ShiftSearch(h, rss_q, sq).parabola_wins();
}

}  // namespace tessera::mig::detail
