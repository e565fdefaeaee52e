#include "tessera/cli/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace tessera::cli {

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO) == 1) {}

void ProgressLine::finish() {
  if (drawn_) fmt::print(stderr, "\r\033[K");
  drawn_ = false;
}

void ProgressLine::update(const scenario::Progress& p) {
  if (!enabled_) return;
  const core::Nanos now = clock_.now();
  const bool last = p.simulated >= p.duration;
  if (!last && now - last_draw_ < core::millis(100)) return;
  last_draw_ = now;
  const double fraction = static_cast<double>(p.simulated) / static_cast<double>(p.duration);
  fmt::print(stderr,
             "\r\033[K[{}/{}] {:<18} simulated {:>7.1f} s of {:.0f} s ({:3.0f}%)  wall {:.1f} s",
             p.mode_index + 1, p.mode_count, p.mode, core::to_seconds(p.simulated),
             core::to_seconds(p.duration), 100 * fraction, core::to_seconds(now));
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace tessera::cli
