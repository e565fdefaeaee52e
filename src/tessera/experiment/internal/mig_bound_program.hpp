#pragma once
// The linear program behind the MIG bound's tightest term (mig_bound.hpp). The closed-form terms
// give each job the way to run that holds the least, each on its own; this program keeps which
// jobs run together, and when. At a makespan M, the time from the first instance made to M is cut
// at every job's earliest start and earliest work, and in each interval it chooses how long the
// instances of each profile spend:
//   - with one job working alone (doing 1/t of its work a second, t its time alone there);
//   - with two jobs working side by side, where their peaks fit together and the model times the
//     pair (each doing 1/(s t), s its slowdown beside the other);
//   - with a job's process start. With one job to an instance the start holds the instance; with
//     two, it may overlap one job working alone or another start, and that time counts once.
// M passes when every job does all its work and one start, no job is in two places at once, and
// each interval holds at most 7 compute and 8 memory slices, each profile's instance limit and
// the instances made one at a time by then. A run on the simulated GPU is one such choice, so a
// makespan the program rules out no policy reaches. It relaxes which instance a job runs on (a
// job may split its work over profiles) and which job a start overlaps.

#include <cstddef>
#include <optional>
#include <vector>

namespace tessera::experiment {

struct BoundProfile {
  int compute_slices = 0;
  int memory_slices = 0;
  int at_once = 0;  // instances of it on the GPU at once, at most
};

struct BoundJob {
  double arrives = 0;  // the earliest its process starts: its submission or the first instance
  std::vector<std::optional<double>> time;  // per profile, its work alone (s); none: not held
};

// Two jobs that may share an instance of a profile: their slowdowns beside each other.
struct BoundPair {
  std::size_t a = 0;
  std::size_t b = 0;
  std::size_t profile = 0;
  double slowdown_a = 1;
  double slowdown_b = 1;
};

struct BoundProgram {
  std::vector<BoundProfile> profiles;
  std::vector<BoundJob> jobs;
  std::vector<BoundPair> pairs;  // empty with one job to an instance
  bool sharing = false;          // two jobs to an instance: starts may overlap
  double start = 0;              // a process start, s
  double create = 0;             // one instance, s; the driver makes them one at a time
  double first_create = 0;       // when the first create may begin (the first submission)
};

// The instance-time that instances made one after another give in [from, to]: the k-th (k = 1 ..
// 7) exists from first_create + k creates.
double instance_time(double first_create, double create, double from, double to);

// Whether the program admits a makespan of `m` seconds.
bool admits(const BoundProgram& program, double m);

// The least makespan the program admits, less the solver's tolerance (so that a run forced to it
// does not finish before it), or `shown` (a bound shown otherwise) where that is larger: one
// program whose last interval's length is minimized. nullopt where the program would be too
// large to solve quickly, or the solver fails (the caller keeps its other terms).
std::optional<double> least_admitted(const BoundProgram& program, double shown);

}  // namespace tessera::experiment
