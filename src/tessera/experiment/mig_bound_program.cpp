#include "tessera/experiment/internal/mig_bound_program.hpp"

#include <glpk.h>

#include <algorithm>
#include <limits>
#include <memory>

#include "tessera/hw/mig_profiles.hpp"

namespace tessera::experiment {
namespace {

// Programs above this many columns are not solved: the bound's CPU time grows with jobs squared
// (the pairs) times their arrivals, and a plan stays interactive. ml-1 with sharing has a few
// hundred, the 12-job trace mix about 5,000 (BM_MigBoundProgram times the solve).
constexpr std::size_t kMaxColumns = 40'000;

// The interval boundaries below `m`: the first instance made, every job's earliest start and
// earliest work; then `m`.
std::vector<double> boundaries(const BoundProgram& p, double m) {
  std::vector<double> b{p.first_create + p.create};
  for (const BoundJob& j : p.jobs) {
    b.push_back(j.arrives);
    b.push_back(j.arrives + p.start);
  }
  std::ranges::sort(b);
  b.erase(std::ranges::unique(b).begin(), b.end());
  std::erase_if(b, [m](double t) { return t >= m; });
  b.push_back(m);
  return b;
}

// The program's columns at makespan m, counted before it is built.
std::size_t columns(const BoundProgram& p, double m) {
  const std::size_t intervals = boundaries(p, m).size() - 1;
  const std::size_t per_profile = 2 * p.jobs.size() + (p.sharing ? 1 : 0);
  return intervals * (p.profiles.size() * per_profile + p.pairs.size());
}

// The program at `b`'s boundaries. The last interval ends at the makespan: fixed (admits), or a
// column the program minimizes (least_end).
class Program {
 public:
  Program(const BoundProgram& p, std::vector<double> b, std::optional<double> end)
      : p_(p), b_(std::move(b)) {
    build(end);
  }

  // Feasible, or not shown infeasible (a solver failure proves nothing).
  bool feasible() {
    const int rc = solve();
    if (rc == GLP_ENOPFS) return false;  // the presolver found no feasible point
    return rc != 0 || glp_get_status(lp_.get()) != GLP_NOFEAS;
  }
  // The least end of the last interval; nullopt where the solver fails.
  std::optional<double> least_end() {
    if (solve() != 0 || glp_get_status(lp_.get()) != GLP_OPT) return std::nullopt;
    return b_.back() + glp_get_obj_val(lp_.get());
  }

 private:
  int solve() {
    glp_load_matrix(lp_.get(), static_cast<int>(values_.size()) - 1, rows_.data(), cols_.data(),
                    values_.data());
    glp_smcp options;
    glp_init_smcp(&options);
    options.msg_lev = GLP_MSG_OFF;
    options.presolve = GLP_ON;
    return glp_simplex(lp_.get(), &options);
  }

  int row(int type, double lo) {
    const int r = glp_add_rows(lp_.get(), 1);
    glp_set_row_bnds(lp_.get(), r, type, lo, 0);
    return r;
  }
  int column() {
    const int c = glp_add_cols(lp_.get(), 1);
    glp_set_col_bnds(lp_.get(), c, GLP_LO, 0, 0);
    return c;
  }
  void put(int r, int c, double v) {
    if (v == 0) return;
    rows_.push_back(r);
    cols_.push_back(c);
    values_.push_back(v);
  }
  // A row of at most `constant` + `per_second` x the interval's length: fixed, or the length
  // column's.
  void limit(int r, double constant, double per_second, double length, int length_column) {
    if (length_column == 0) {
      glp_set_row_bnds(lp_.get(), r, GLP_UP, 0, constant + per_second * length);
      return;
    }
    glp_set_row_bnds(lp_.get(), r, GLP_UP, 0, constant);
    put(r, length_column, -per_second);
  }

  void build(std::optional<double> end) {
    const std::size_t n = p_.jobs.size();
    std::vector<int> work(n), starts(n);
    for (std::size_t j = 0; j < n; ++j) {
      // All of its work; a job with none (no time on some profile) only starts.
      const bool works =
          std::ranges::all_of(p_.jobs[j].time, [](const auto& t) { return !t || *t > 0; });
      work[j] = row(GLP_LO, works ? 1 : 0);
      starts[j] = row(GLP_LO, p_.start);
    }
    // A second of work on profile q does 1/t of job j's (none where it has no work).
    const auto rate = [&](std::size_t j, std::size_t q, double slowdown) {
      const double t = *p_.jobs[j].time[q];
      return t > 0 ? 1 / (t * slowdown) : 0.0;
    };
    const std::size_t intervals = b_.size();  // the last one ends at the makespan
    for (std::size_t k = 0; k < intervals; ++k) {
      const double from = b_[k];
      const bool last = k + 1 == intervals;
      // The last interval without an end: its length is the column minimized. Instances made
      // after `from` give it 7 x length less the delays to when each is made; that is their
      // instance-time once all are made, which the length's lower bound ensures (least_admitted
      // checks whether it binds).
      int length_column = 0;
      double length = 0;
      double instances_now = 0;
      if (last && !end) {
        length_column = column();
        glp_set_obj_dir(lp_.get(), GLP_MIN);
        glp_set_obj_coef(lp_.get(), length_column, 1);
        const auto [delay_sum, longest_delay] = delays(from);
        glp_set_col_bnds(lp_.get(), length_column, GLP_LO, longest_delay, 0);
        instances_now = -delay_sum;
      } else {
        const double to = last ? *end : b_[k + 1];
        length = to - from;
        instances_now = instance_time(p_.first_create, p_.create, from, to);
      }
      const double per_instance = length_column == 0 ? 0 : hw::kMigComputeSlices;
      std::vector<int> busy(n);  // a job is in one place at a time
      for (std::size_t j = 0; j < n; ++j) {
        busy[j] = row(GLP_UP, 0);
        limit(busy[j], 0, 1, length, length_column);
      }
      const int compute = row(GLP_UP, 0);
      limit(compute, 0, hw::kMigComputeSlices, length, length_column);
      const int memory = row(GLP_UP, 0);
      limit(memory, 0, hw::kMigMemorySlices, length, length_column);
      const int instances = row(GLP_UP, 0);
      limit(instances, instances_now, per_instance, length, length_column);
      std::vector<int> at_once(p_.profiles.size());
      for (std::size_t q = 0; q < p_.profiles.size(); ++q) {
        at_once[q] = row(GLP_UP, 0);
        limit(at_once[q], 0, p_.profiles[q].at_once, length, length_column);
      }
      // An instance of profile q busy for `sign` seconds (-1: overlap, which counts once).
      const auto occupies = [&](std::size_t q, int column, double sign) {
        put(compute, column, sign * p_.profiles[q].compute_slices);
        put(memory, column, sign * p_.profiles[q].memory_slices);
        put(instances, column, sign);
        put(at_once[q], column, sign);
      };
      for (std::size_t q = 0; q < p_.profiles.size(); ++q) {
        // Sharing: a start overlapping a job working alone or another start. Each second of
        // overlap takes a second of start, and a second of work alone or of a second start.
        int overlap = 0, beside_start = 0, beside_work = 0;
        if (p_.sharing) {
          overlap = column();
          occupies(q, overlap, -1);
          beside_start = row(GLP_UP, 0);
          beside_work = row(GLP_UP, 0);
          put(beside_start, overlap, 1);
          put(beside_work, overlap, 1);
        }
        for (std::size_t j = 0; j < n; ++j) {
          const BoundJob& job = p_.jobs[j];
          if (!job.time[q] || from < job.arrives) continue;
          const int start = column();
          occupies(q, start, 1);
          put(starts[j], start, 1);
          put(busy[j], start, 1);
          if (p_.sharing) {
            put(beside_start, start, -1);
            put(beside_work, start, -0.5);
          }
          if (from < job.arrives + p_.start) continue;
          const int alone = column();
          occupies(q, alone, 1);
          put(work[j], alone, rate(j, q, 1));
          put(busy[j], alone, 1);
          if (p_.sharing) put(beside_work, alone, -1);
        }
      }
      for (const BoundPair& pair : p_.pairs) {
        const BoundJob& a = p_.jobs[pair.a];
        const BoundJob& c = p_.jobs[pair.b];
        if (from < std::max(a.arrives, c.arrives) + p_.start) continue;
        const int both = column();
        occupies(pair.profile, both, 1);
        put(work[pair.a], both, rate(pair.a, pair.profile, pair.slowdown_a));
        put(work[pair.b], both, rate(pair.b, pair.profile, pair.slowdown_b));
        put(busy[pair.a], both, 1);
        put(busy[pair.b], both, 1);
      }
    }
  }

  // From `from`: the delays until each instance is made, summed, and the longest.
  std::pair<double, double> delays(double from) const {
    double sum = 0, longest = 0;
    for (int k = 1; k <= hw::kMigComputeSlices; ++k) {
      const double d = std::max(0.0, p_.first_create + k * p_.create - from);
      sum += d;
      longest = std::max(longest, d);
    }
    return {sum, longest};
  }

  const BoundProgram& p_;
  std::vector<double> b_;
  std::unique_ptr<glp_prob, void (*)(glp_prob*)> lp_{glp_create_prob(), glp_delete_prob};
  std::vector<int> rows_{0};
  std::vector<int> cols_{0};
  std::vector<double> values_{0};
};

}  // namespace

double instance_time(double first_create, double create, double from, double to) {
  double sum = 0;
  for (int k = 1; k <= hw::kMigComputeSlices; ++k) {
    sum += std::max(0.0, to - std::max(from, first_create + k * create));
  }
  return sum;
}

bool admits(const BoundProgram& p, double m) {
  for (const BoundJob& j : p.jobs) {
    if (j.arrives + p.start >= m) return false;  // no time left to work
  }
  std::vector<double> b = boundaries(p, m);
  b.pop_back();
  return Program(p, std::move(b), m).feasible();
}

std::optional<double> least_admitted(const BoundProgram& p, double shown) {
  if (p.jobs.empty()) return shown;
  if (columns(p, std::numeric_limits<double>::infinity()) > kMaxColumns) return std::nullopt;
  // Every job works after its earliest work, the last boundary, so the makespan lies past it and
  // the last interval begins there.
  std::vector<double> b = boundaries(p, std::numeric_limits<double>::infinity());
  b.pop_back();
  const double from = b.back();
  const std::optional<double> least = Program(p, b, std::nullopt).least_end();
  if (!least) return std::nullopt;
  // Where the length stopped at its lower bound (the last instance made), the instance-time
  // there is not linear: search below it with the exact program.
  double made = from;
  for (int k = 1; k <= hw::kMigComputeSlices; ++k) {
    made = std::max(made, p.first_create + k * p.create);
  }
  // GLPK's simplex meets the rows to a relative 1e-7; a run forced to the program's optimum
  // (general-3's, with two jobs to an instance) must not finish before it.
  double out = *least * (1 - 1e-6);
  if (*least <= made * (1 + 1e-12)) {
    double lo = from;
    double hi = *least;
    while (hi - lo > 1e-6 * hi) {
      const double mid = (lo + hi) / 2;
      (admits(p, mid) ? hi : lo) = mid;
    }
    out = lo;
  }
  // Within rounding of `shown`, the term shown otherwise stands (it names what binds more plainly).
  return out > shown * (1 + 1e-9) ? out : shown;
}

}  // namespace tessera::experiment
