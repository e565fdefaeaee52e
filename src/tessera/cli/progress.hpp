#pragma once
// A one-line progress display on stderr for long runs. It draws only when stderr is a terminal,
// at most ten times a wall-clock second; it reads the wall clock, which is fine here because it
// only decides when to draw, never what the simulation does.

#include <cstdint>
#include <string_view>

#include "tessera/core/clock.hpp"
#include "tessera/scenario/runner.hpp"

namespace tessera::cli {

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled);
  ~ProgressLine() { finish(); }
  void update(const scenario::Progress& p);
  // Runs that count finished pieces (jobs of a MIG run, runs of a study): `what` is running,
  // `done` of `total` are finished, at `simulated` time when there is one (negative: none).
  void update(std::string_view what, std::int64_t done, std::int64_t total,
              core::Nanos simulated = -1);
  // Erases the line so results print on a clean terminal.
  void finish();

 private:
  bool enabled_;
  bool drawn_ = false;
  core::SystemClock clock_;
  core::Nanos last_draw_ = -core::kNanosPerSecond;
};

}  // namespace tessera::cli
