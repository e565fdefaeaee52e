#pragma once
// What a scheduler learns about kernels from their observed runs (LithOS §4.5): a per-kernel
// scaling curve l(t) = m/t + b over the TPC count t, the fewest TPCs within a latency slip
// (right-sizing), and the curve's accuracy on TPC counts it was not fitted on (held-out error,
// which the LithOS reviewers asked for instead of in-sample R^2).
//
// Pure code: no device calls, no clock reads. Observations come in through record(); the same
// observations in the same order give the same fits.

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::gpu {

struct LatencySample {
  int tpcs;
  double latency_ns;
};

// l(t) = m/t + b: m is the work that spreads over TPCs, b the part that does not (launch
// overhead, the tail of the last wave, a serial phase).
struct ScalingFit {
  double m_ns = 0;
  double b_ns = 0;
  double predict_ns(int tpcs) const;
};

// Least squares in x = 1/t. Needs samples at two or more distinct TPC counts, each with a finite,
// non-negative latency and tpcs >= 1. On noisy data the unconstrained fit can give b < 0 (a curve
// that drops below zero past the measured counts) or m < 0 (latency that grows with TPCs); both
// are clamped to 0 and the other coefficient refitted, so predictions stay non-negative and
// non-increasing in t.
core::Result<ScalingFit> fit_scaling(std::span<const LatencySample> samples);

// The fewest TPCs t in [1, max_tpcs] whose predicted latency is at most (1 + slip) times the
// predicted latency on max_tpcs. slip < 0 counts as 0; max_tpcs < 1 gives 1.
int right_size(const ScalingFit& fit, int max_tpcs, double slip);

// Fits on the samples at the TPC counts in `fit_tpcs` only and predicts every other sample.
// Errors are |predicted - observed| / observed in percent; samples with observed latency 0 are
// skipped. Fails if the fit fails or no sample is held out.
struct HeldOutError {
  double mean_abs_pct = 0;
  double max_abs_pct = 0;
  int points = 0;
};
core::Result<HeldOutError> held_out_error(std::span<const LatencySample> samples,
                                          std::span<const int> fit_tpcs);

// Identity of a kernel launch for learning: two launches with the same key do the same work with
// the same footprint, so their latencies are comparable. Ordered, so maps keyed by it iterate in
// a deterministic order.
struct KernelKey {
  std::string name;
  std::int64_t blocks = 0;
  int threads = 0;
  int registers_per_thread = 0;
  std::int64_t shared_memory_bytes = 0;
  double flops_per_block = 0;
  double bytes_per_block = 0;
  workload::ComputePipe pipe = workload::ComputePipe::kFp32;

  auto operator<=>(const KernelKey&) const = default;
  bool operator==(const KernelKey&) const = default;
};
KernelKey key_of(const workload::Kernel& k);

// Orders keys and kernels alike (as key_of would), so maps keyed by KernelKey can be searched with
// a kernel without building a key: a name longer than the small-string buffer would allocate on
// every lookup, and schedulers look up on every launch.
struct KernelKeyLess {
  using is_transparent = void;
  bool operator()(const KernelKey& a, const KernelKey& b) const;
  bool operator()(const KernelKey& a, const workload::Kernel& b) const;
  bool operator()(const workload::Kernel& a, const KernelKey& b) const;
};

// A whole-grid-equivalent latency observed at a clock other than boost.
struct ClockSample {
  double clock_mhz;
  double latency_ns;
};

class KernelProfiles {
 public:
  // One observed launch: `blocks_run` of the kernel's blocks on `tpcs` TPCs at `clock_mhz` took
  // `latency`. Atoms (blocks_run < blocks) are scaled to a whole-grid equivalent by waves (a wave
  // on t TPCs is t * sms_per_tpc * blocks_per_sm blocks). Runs at the boost clock feed the
  // scaling curve; runs at other clocks are kept as clock samples (for DVFS sensitivity).
  // Observations that cannot be used (tpcs < 1, blocks_run outside [1, blocks], negative latency,
  // a non-positive clock, a kernel that does not fit on an SM) are ignored: they carry no
  // information about the curve.
  void record(const hw::GpuSpec& spec, const workload::Kernel& k, std::int64_t blocks_run, int tpcs,
              double clock_mhz, core::Nanos latency);

  // Predicted latency of `blocks` blocks of `k` on `tpcs` TPCs at the boost clock: from the fit
  // when two or more TPC counts were seen, from the nearest seen TPC count scaled by waves when
  // only one was; nullopt when the kernel was never seen at the boost clock, or blocks or tpcs is
  // below 1.
  std::optional<core::Nanos> predict(const hw::GpuSpec& spec, const workload::Kernel& k,
                                     std::int64_t blocks, int tpcs) const;

  // The kernel's scaling curve, when it was seen at two or more TPC counts at the boost clock.
  std::optional<ScalingFit> fit(const workload::Kernel& k) const;
  // Per TPC count seen at the boost clock (ascending), the mean whole-grid latency.
  std::vector<LatencySample> samples(const workload::Kernel& k) const;
  // Per clock other than boost (whole MHz, ascending), the mean whole-grid latency seen there.
  // Means, not every observation: a long run at a lowered clock would otherwise grow without
  // bound.
  std::vector<ClockSample> clock_samples(const workload::Kernel& k) const;
  // Kernels with at least one usable observation.
  std::size_t kernels() const;

 private:
  struct Profile;

 public:
  // A kernel's profile found once, for a scheduler that predicts several piece sizes of one
  // kernel in a decision: predict() through it skips the search by key. It sees later records of
  // a kernel that was already profiled; a kernel not yet seen must be looked up again after its
  // first record().
  class Lookup {
   public:
    Lookup() = default;

   private:
    friend class KernelProfiles;
    const Profile* profile_ = nullptr;
    std::int64_t grid_blocks_ = 0;
    int per_sm_ = 0;  // resident blocks per SM; 0 when the kernel does not fit on one
  };
  Lookup lookup(const hw::GpuSpec& spec, const workload::Kernel& k) const;
  // As predict() above, for the kernel `found` was looked up with.
  std::optional<core::Nanos> predict(const hw::GpuSpec& spec, const Lookup& found,
                                     std::int64_t blocks, int tpcs) const;

 private:
  struct Mean {
    double sum_ns = 0;
    std::int64_t count = 0;
  };
  struct Profile {
    std::map<int, Mean> by_tpcs;          // at the boost clock
    std::map<double, Mean> other_clocks;  // by clock rounded to whole MHz
    std::optional<ScalingFit> fit;        // refitted when a new TPC count appears or a mean moves
  };
  const Profile* find(const workload::Kernel& k) const;

  // Numbers before the name: kernels of one name differ in their shapes, and comparing two equal
  // names costs a memcmp on every step of a search. Nothing iterates the map, so its order is
  // free to choose.
  struct SearchOrder {
    using is_transparent = void;
    bool operator()(const KernelKey& a, const KernelKey& b) const;
    bool operator()(const KernelKey& a, const workload::Kernel& b) const;
    bool operator()(const workload::Kernel& a, const KernelKey& b) const;
  };
  std::map<KernelKey, Profile, SearchOrder> profiles_;
  std::vector<LatencySample> points_;  // scratch for refitting, so record() does not allocate
};

}  // namespace tessera::gpu
