#pragma once
// The executor of a real backend: timers over the wall clock, run by the backend's own loop
// (run_due), which sleeps in between. Timers are ordered by (time, sequence number), so callbacks
// due at the same instant run in the order they were scheduled, as in sim::Engine.

#include <functional>
#include <map>
#include <utility>

#include "tessera/core/clock.hpp"
#include "tessera/device/executor.hpp"

namespace tessera::device {

class WallClockExecutor final : public Executor {
 public:
  // `clock` (not owned) replaces the wall clock in tests; null: a core::SystemClock started now.
  explicit WallClockExecutor(const core::Clock* clock = nullptr);

  core::Nanos now() const override { return clock_->now(); }
  TimerId schedule_at(core::Nanos when, std::function<void()> fn) override;
  bool cancel(TimerId id) override;

  // Runs every timer due at now(), including ones that callbacks schedule for now or earlier.
  // Returns how many ran.
  int run_due();
  // When the earliest pending timer is due; core::kNever if none is pending.
  core::Nanos next_due() const;
  bool has_pending() const { return !timers_.empty(); }

 private:
  core::SystemClock system_clock_;
  const core::Clock* clock_;
  TimerId next_id_ = 1;
  // (time, id): ids grow with every schedule, so they are the sequence number.
  std::map<std::pair<core::Nanos, TimerId>, std::function<void()>> timers_;
  std::map<TimerId, core::Nanos> when_;  // id -> time, to cancel by id
};

}  // namespace tessera::device
