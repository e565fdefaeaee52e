#pragma once
// The loop a wall-clock backend runs on the caller's thread: due timers, then a poll of its
// devices (completions, callbacks, more issue), then a sleep until whichever comes first of the
// next timer, the deadline and the poll interval.

#include <functional>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/device/wall_clock_executor.hpp"

namespace tessera::device {

// Repeats executor.run_due() then poll() (whose error ends the loop, returned) until executor time
// reaches `deadline` or `finished()` holds (checked after each poll; null: never).
core::Status poll_until(WallClockExecutor& executor, core::Nanos deadline, core::Nanos interval,
                        const std::function<core::Status()>& poll,
                        const std::function<bool()>& finished = nullptr);

}  // namespace tessera::device
