#pragma once
// Where a job that has outgrown its instance runs next (MIGM §3.3-3.4): after it ran out of
// memory, or before, when the peak predictor says it will (early restart). Pure: the layout
// space, the scheme, what the job ran on and what was predicted in; the choice out. No clock, no
// device.

#include <cstdint>
#include <optional>

#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/policy/layout_space.hpp"
#include "tessera/mig/policy/peak_predictor.hpp"
#include "tessera/mig/policy/scheme.hpp"

namespace tessera::mig {

// A restart: the smallest profile the job may get next and the memory it must get there.
struct RestartChoice {
  int min_profile_id = 0;
  std::int64_t need_bytes = 0;
};

// An early restart: the job is stopped now, while its memory still fits, and requeued.
struct EarlyRestart {
  RestartChoice restart;
  std::int64_t predicted_peak_bytes = 0;  // the prediction that fired it, as predicted
};

class RestartPolicy {
 public:
  // `space` and `static_layout` (Scheme::kStatic) must outlive the policy.
  RestartPolicy(const LayoutSpace& space, Scheme scheme, const Layout& static_layout)
      : space_(space), scheme_(scheme), static_layout_(static_layout) {}

  // The profile a job that outgrew `profile_id` moves to: the next larger profile of the space
  // (next_larger_profile), or under the static scheme the smallest larger instance of the
  // layout; nullptr when there is none, and always under the sequential scheme (its one
  // instance is the largest).
  const hw::MigProfile* larger_than(int profile_id) const;

  // A predicted need above the largest instance the job can get (under static: the layout's
  // largest) is tried there: a prediction alone never gives a job up.
  std::int64_t capped(std::int64_t bytes) const;

  // After running out of memory on `profile_id`: the next larger profile, needing at least the
  // job's need so far, the peak it reached and the last prediction (capped). nullopt: there is
  // nothing larger, and the job is given up.
  std::optional<RestartChoice> after_out_of_memory(
      int profile_id, std::int64_t need_bytes, std::int64_t actual_peak_bytes,
      const std::optional<PeakPrediction>& prediction) const;

  // Whether to stop a job running on `profile_id` (an instance of `instance_bytes`) now: when a
  // converged prediction's peak exceeds the instance and a larger profile exists. The restart
  // needs at least the job's need so far and the predicted peak (capped).
  std::optional<EarlyRestart> early_restart(const std::optional<PeakPrediction>& prediction,
                                            int profile_id, std::int64_t instance_bytes,
                                            std::int64_t need_bytes) const;

 private:
  const LayoutSpace& space_;
  Scheme scheme_;
  const Layout& static_layout_;
};

}  // namespace tessera::mig
