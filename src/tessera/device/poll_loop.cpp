#include "tessera/device/poll_loop.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace tessera::device {

core::Status poll_until(WallClockExecutor& executor, core::Nanos deadline, core::Nanos interval,
                        const std::function<core::Status()>& poll,
                        const std::function<bool()>& finished) {
  while (true) {
    executor.run_due();
    if (auto st = poll(); !st) return st;
    const core::Nanos now = executor.now();
    if (now >= deadline) return {};
    if (finished && finished()) return {};
    const core::Nanos wake = std::min({deadline, executor.next_due(), now + interval});
    if (wake > now) std::this_thread::sleep_for(std::chrono::nanoseconds(wake - now));
  }
}

}  // namespace tessera::device
