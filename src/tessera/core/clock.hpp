#pragma once
// An injected clock. Policies never read the wall clock: they are handed a Clock (or `now`).
// SystemClock is for real backends and progress display; ManualClock is for tests; the
// simulator's engine is itself a Clock (sim::Engine implements this interface).

#include "tessera/core/time.hpp"

namespace tessera::core {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Nanos now() const = 0;
};

// Monotonic wall time since construction.
class SystemClock final : public Clock {
 public:
  SystemClock();
  Nanos now() const override;

 private:
  Nanos origin_;
};

// Advanced only by the test that owns it.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Nanos start = 0) : now_(start) {}
  Nanos now() const override { return now_; }
  void advance(Nanos by) { now_ += by; }
  void set(Nanos t) { now_ = t; }

 private:
  Nanos now_;
};

}  // namespace tessera::core
