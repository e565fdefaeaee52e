#pragma once
// Time and timers as backends provide them. The simulator's engine implements this in virtual
// time; a real backend implements it with the wall clock. Sharing modes and tenants use only this,
// so the same code runs on either.

#include <cstdint>
#include <functional>

#include "tessera/core/clock.hpp"

namespace tessera::device {

using TimerId = std::uint64_t;

class Executor : public core::Clock {
 public:
  // Runs `fn` at time `when` (clamped to now() if earlier). Callbacks at the same time run in
  // the order they were scheduled.
  virtual TimerId schedule_at(core::Nanos when, std::function<void()> fn) = 0;
  // Returns false if the timer already ran or was cancelled.
  virtual bool cancel(TimerId id) = 0;

  TimerId schedule_after(core::Nanos delay, std::function<void()> fn) {
    return schedule_at(now() + delay, std::move(fn));
  }
};

}  // namespace tessera::device
