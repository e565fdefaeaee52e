#include "tessera/sim/engine.hpp"

#include <algorithm>
#include <utility>

namespace tessera::sim {

namespace {

// A timer id is the slot index in the low 32 bits and the low 32 bits of the event's sequence
// number in the high 32 bits. A stale id can only alias a live event after the same slot has been
// reused 2^32 times, far beyond any run.
constexpr std::uint64_t kLow32 = 0xffff'ffffULL;

device::TimerId make_id(std::uint32_t slot, std::uint64_t seq) {
  return ((seq & kLow32) << 32) | slot;
}

// Sweep tombstones once they are this many more than the live events, so a workload that cancels
// and reschedules constantly keeps its heap (and the cost of each push and pop) bounded.
constexpr std::size_t kSweepSlack = 1024;

}  // namespace

device::TimerId Engine::schedule_at(core::Nanos when, std::function<void()> fn) {
  const std::uint64_t seq = next_seq_++;
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  slots_[slot].fn = std::move(fn);
  slots_[slot].seq = seq;
  heap_.push_back(Entry{std::max(when, now_), seq, slot});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
  ++live_;
  return make_id(slot, seq);
}

bool Engine::cancel(device::TimerId id) {
  const auto slot = static_cast<std::uint32_t>(id & kLow32);
  if (slot >= slots_.size()) return false;
  Slot& s = slots_[slot];
  if (s.seq == 0 || (s.seq & kLow32) != (id >> 32)) return false;
  s.fn = nullptr;
  s.seq = 0;
  free_slots_.push_back(slot);
  --live_;
  if (heap_.size() > 2 * live_ + kSweepSlack) sweep_tombstones();
  return true;
}

void Engine::sweep_tombstones() {
  std::erase_if(heap_, [this](const Entry& e) { return slots_[e.slot].seq != e.seq; });
  std::make_heap(heap_.begin(), heap_.end(), Later{});
}

bool Engine::settle_top() {
  while (!heap_.empty()) {
    const Entry& top = heap_.front();
    if (slots_[top.slot].seq == top.seq) return true;
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
  }
  return false;
}

void Engine::pop_and_run() {
  const Entry e = heap_.front();
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  heap_.pop_back();
  // Move the callback out and free its slot first: the callback may schedule (and so reuse the
  // slot, or grow the slot array) while it runs.
  Slot& s = slots_[e.slot];
  std::function<void()> fn = std::move(s.fn);
  s.fn = nullptr;
  s.seq = 0;
  free_slots_.push_back(e.slot);
  --live_;
  now_ = e.time;
  ++executed_;
  if (fn) fn();
}

void Engine::run_until(core::Nanos until) {
  stop_requested_ = false;
  while (settle_top()) {
    if (heap_.front().time > until) break;
    pop_and_run();
    if (stop_requested_) {
      stop_requested_ = false;
      return;
    }
  }
  if (until != core::kNever && now_ < until) now_ = until;
}

bool Engine::step() {
  if (!settle_top()) return false;
  pop_and_run();
  return true;
}

}  // namespace tessera::sim
