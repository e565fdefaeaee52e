#include "tessera/device/wall_clock_executor.hpp"

#include <algorithm>

namespace tessera::device {

WallClockExecutor::WallClockExecutor(const core::Clock* clock)
    : clock_(clock != nullptr ? clock : &system_clock_) {}

TimerId WallClockExecutor::schedule_at(core::Nanos when, std::function<void()> fn) {
  const TimerId id = next_id_++;
  const core::Nanos at = std::max(when, now());
  timers_.emplace(std::pair{at, id}, std::move(fn));
  when_.emplace(id, at);
  return id;
}

bool WallClockExecutor::cancel(TimerId id) {
  const auto it = when_.find(id);
  if (it == when_.end()) return false;
  timers_.erase(std::pair{it->second, id});
  when_.erase(it);
  return true;
}

int WallClockExecutor::run_due() {
  int ran = 0;
  while (!timers_.empty() && timers_.begin()->first.first <= now()) {
    auto node = timers_.extract(timers_.begin());
    when_.erase(node.key().second);
    node.mapped()();
    ++ran;
  }
  return ran;
}

core::Nanos WallClockExecutor::next_due() const {
  return timers_.empty() ? core::kNever : timers_.begin()->first.first;
}

}  // namespace tessera::device
