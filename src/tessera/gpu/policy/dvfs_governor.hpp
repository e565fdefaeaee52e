#pragma once
// Per-stream clock choice from each kernel's frequency sensitivity (LithOS §4.6). Pure code: it
// is told what ran at which clock and answers which clock to set; it never touches a device.
//
// Model (an assumption, the first-order one LithOS uses): a kernel's latency at clock f is
//   l(f) = l(f_max) * (1 + s * (f_max / f - 1))
// with s in [0, 1] its sensitivity: 1 for a compute-bound kernel (time scales with 1/f), 0 for a
// memory-bound one (time set by DRAM, whose clock does not change). `slip` is the bound on the
// stream's slowdown (the reviewers pointed out the paper used one symbol for both).
//
// How sensitivity is learned: l(f) = A + B / f is linear in 1/f, so a kernel seen at two or more
// distinct clocks gets A and B by least squares, and s = (B / f_max) / (A + B / f_max). Until
// then its sensitivity is unknown and counts as s = 1 (the safe guess: the slowest it could get).
// The caller learns by probing: probe_clock_mhz() names a clock that would teach the governor
// something (a kernel seen at only one clock), the caller runs there for a while and reports what
// it saw through observe(). Any observation at the probe clock resolves the kernel it was asked
// for, so probing ends once each kernel has run at the probe clock; a probe clock is never the
// clock the kernel was already seen at.

#include <map>
#include <optional>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/gpu/policy/kernel_profiles.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::gpu {

class DvfsGovernor {
 public:
  // `clocks_mhz`: the candidate clocks (candidate_clocks(spec)); the highest is f_max. Clocks that
  // are not finite and positive are dropped, duplicates merged; slip < 0 counts as 0. With no
  // valid clock left the governor has nothing to choose: choose_clock_mhz() returns 0 and
  // probe_clock_mhz() nullopt. make() reports that as an error instead; use it for input that
  // comes from users.
  DvfsGovernor(std::vector<double> clocks_mhz, double slip);
  static core::Result<DvfsGovernor> make(std::vector<double> clocks_mhz, double slip);

  // Observed: the kernel `key` ran for `latency` at `clock_mhz`. Latencies of one key must be
  // comparable (same TPC count, or whole-grid equivalents from KernelProfiles). Adds the latency
  // to the kernel's share of the stream's runtime. Non-positive clocks and negative latencies
  // are ignored.
  void observe(const KernelKey& key, double clock_mhz, core::Nanos latency);

  // The lowest candidate clock whose predicted stream runtime (sum over kernels of runtime share
  // x l(f) / l(f_max)) stays within (1 + slip) of the runtime at f_max. Kernels without a
  // sensitivity count as s = 1. With no kernel whose sensitivity is known (including nothing
  // observed yet) it keeps f_max: exploring is probe_clock_mhz()'s job.
  double choose_clock_mhz() const;

  // A clock to run at next so that a kernel seen at only one clock gets its sensitivity, or
  // nullopt when every observed kernel has one. Asks for the kernel with the largest runtime
  // share first (ties: the smaller key). For a kernel seen only at f_max it is the lowest
  // candidate at which even a compute-bound kernel stays within the slip, so a probe never costs
  // more than the slip; when the slip is too small for any candidate below f_max there is no
  // probe (nullopt), and such kernels keep counting as s = 1. For a kernel seen only below f_max
  // it is f_max.
  std::optional<double> probe_clock_mhz() const;

  // The kernel's learned sensitivity in [0, 1]; 1 when unknown.
  double sensitivity(const KernelKey& key) const;
  // The same for a kernel, without building its key (for per-launch predictions).
  double sensitivity(const workload::Kernel& kernel) const;
  bool knows(const KernelKey& key) const;

  // Predicted stream runtime at `clock_mhz` over the runtime at f_max (1 at f_max; unknown
  // kernels count as s = 1), for reporting the latency a clock costs.
  double predicted_slowdown(double clock_mhz) const;

  double max_clock_mhz() const { return clocks_.empty() ? 0 : clocks_.back(); }
  const std::vector<double>& clocks_mhz() const { return clocks_; }

 private:
  struct ClockMean {
    double sum_ns = 0;
    std::int64_t count = 0;
  };
  struct KernelState {
    std::map<double, ClockMean> by_clock;
    double runtime_ns = 0;              // share of the stream's runtime
    std::optional<double> sensitivity;  // once seen at two distinct clocks
  };
  // Sum of runtime shares and of share x sensitivity (unknown: 1), and whether any is known.
  struct Totals {
    double runtime_ns = 0;
    double sensitive_ns = 0;
    bool any_known = false;
  };
  Totals totals() const;
  // Adds (sign 1) or removes (sign -1) a kernel's part of the running totals.
  void account(const KernelState& k, double sign);
  void observe_into(KernelState& k, double clock_mhz, core::Nanos latency) const;

  std::vector<double> clocks_;  // ascending
  double slip_ = 0;
  std::map<KernelKey, KernelState, KernelKeyLess> kernels_;
  // Kept up to date by observe() so choosing a clock does not walk every kernel: the runtime sum
  // is exact (whole nanoseconds), the sensitive sum may drift by rounding, clamped in totals().
  double runtime_ns_ = 0;
  double sensitive_ns_ = 0;
  std::int64_t known_ = 0;         // kernels with a sensitivity
  std::int64_t single_clock_ = 0;  // kernels seen at one clock only: what a probe is for
  // The lowest candidate below f_max at which even s = 1 stays in the slip, if any.
  std::optional<double> probe_low_;
};

// Candidate clocks from the spec's min clock up to its boost clock in `step_mhz` steps, always
// including the boost clock, ascending. NVIDIA's supported graphics clocks on A100 and H100 are
// spaced 15 MHz apart (`nvidia-smi -q -d SUPPORTED_CLOCKS`, as reposted for those boards; no
// NVIDIA document states the step, so the default is an assumption). A step <= 0 gives only the
// boost clock.
std::vector<double> candidate_clocks(const hw::GpuSpec& spec, double step_mhz = 15);

}  // namespace tessera::gpu
