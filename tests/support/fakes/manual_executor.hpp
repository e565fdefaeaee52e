#pragma once
// A device::Executor for tests: a queue of callbacks ordered by (time, sequence number), run only
// when the test asks. Same-time callbacks run in the order they were scheduled, as in sim::Engine.

#include <cstdint>
#include <functional>
#include <map>
#include <utility>

#include "tessera/core/time.hpp"
#include "tessera/device/executor.hpp"

namespace tessera::test {

class ManualExecutor final : public device::Executor {
 public:
  core::Nanos now() const override { return now_; }

  device::TimerId schedule_at(core::Nanos when, std::function<void()> fn) override {
    const device::TimerId id = next_id_++;
    queue_.emplace(Key{std::max(when, now_), id}, std::move(fn));
    return id;
  }

  bool cancel(device::TimerId id) override {
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->first.second == id) {
        queue_.erase(it);
        return true;
      }
    }
    return false;
  }

  // Runs the earliest callback; false if none is queued.
  bool step() {
    if (queue_.empty()) return false;
    auto node = queue_.extract(queue_.begin());
    now_ = node.key().first;
    ++executed_;
    node.mapped()();
    return true;
  }

  // Runs callbacks up to and including time `until`, then leaves the clock at `until`.
  void run_until(core::Nanos until) {
    while (!queue_.empty() && queue_.begin()->first.first <= until) step();
    now_ = std::max(now_, until);
  }

  // Runs until nothing is queued or `max_events` have run (a guard against endless loops such as
  // a training job that resubmits forever). Returns the number run.
  std::uint64_t run_all(std::uint64_t max_events = 1'000'000) {
    std::uint64_t n = 0;
    while (n < max_events && step()) ++n;
    return n;
  }

  std::size_t pending() const { return queue_.size(); }
  std::uint64_t executed() const { return executed_; }

 private:
  using Key = std::pair<core::Nanos, device::TimerId>;  // ids grow, so they order same-time events
  core::Nanos now_ = 0;
  device::TimerId next_id_ = 1;
  std::uint64_t executed_ = 0;
  std::map<Key, std::function<void()>> queue_;
};

}  // namespace tessera::test
