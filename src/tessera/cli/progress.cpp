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

void ProgressLine::update(std::string_view what, std::int64_t done, std::int64_t total,
                          core::Nanos simulated) {
  if (!enabled_) return;
  const core::Nanos now = clock_.now();
  if (done < total && now - last_draw_ < core::millis(100)) return;
  last_draw_ = now;
  const std::string at =
      simulated >= 0 ? fmt::format("  simulated {:.1f} s", core::to_seconds(simulated)) : "";
  fmt::print(stderr, "\r\033[K[{}/{}] {}{}  wall {:.1f} s", done, total, what, at,
             core::to_seconds(now));
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace tessera::cli
