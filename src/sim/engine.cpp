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

}  // namespace

void Engine::place(std::size_t i, const Entry& e) {
  heap_[i] = e;
  slots_[e.slot].at = static_cast<std::uint32_t>(i);
}

void Engine::sift_up(std::size_t i, Entry e) {
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!Later{}(heap_[parent], e)) break;
    place(i, heap_[parent]);
    i = parent;
  }
  place(i, e);
}

void Engine::sift_down(std::size_t i, Entry e) {
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && Later{}(heap_[child], heap_[child + 1])) ++child;
    if (!Later{}(e, heap_[child])) break;
    place(i, heap_[child]);
    i = child;
  }
  place(i, e);
}

void Engine::remove_at(std::size_t i) {
  const Entry last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;
  // The last entry fills the hole, then moves whichever way the order asks.
  if (i > 0 && Later{}(heap_[(i - 1) / 2], last)) {
    sift_up(i, last);
  } else {
    sift_down(i, last);
  }
}

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
  heap_.emplace_back();
  sift_up(heap_.size() - 1, Entry{std::max(when, now_), seq, slot});
  return make_id(slot, seq);
}

Engine::Slot* Engine::live_slot(device::TimerId id) {
  const auto slot = static_cast<std::uint32_t>(id & kLow32);
  if (slot >= slots_.size()) return nullptr;
  Slot& s = slots_[slot];
  if (s.seq == 0 || (s.seq & kLow32) != (id >> 32)) return nullptr;
  return &s;
}

bool Engine::cancel(device::TimerId id) {
  Slot* s = live_slot(id);
  if (s == nullptr) return false;
  remove_at(s->at);
  s->fn = nullptr;
  s->seq = 0;
  free_slots_.push_back(static_cast<std::uint32_t>(id & kLow32));
  return true;
}

device::TimerId Engine::reschedule(device::TimerId id, core::Nanos when) {
  Slot* s = live_slot(id);
  if (s == nullptr) return 0;
  const std::size_t i = s->at;
  const Entry moved{std::max(when, now_), next_seq_++, heap_[i].slot};
  s->seq = moved.seq;
  if (Later{}(heap_[i], moved)) {
    sift_up(i, moved);
  } else {
    sift_down(i, moved);
  }
  return make_id(moved.slot, moved.seq);
}

void Engine::pop_and_run() {
  const Entry e = heap_.front();
  remove_at(0);
  // Move the callback out and free its slot first: the callback may schedule (and so reuse the
  // slot, or grow the slot array) while it runs.
  Slot& s = slots_[e.slot];
  std::function<void()> fn = std::move(s.fn);
  s.fn = nullptr;
  s.seq = 0;
  free_slots_.push_back(e.slot);
  now_ = e.time;
  ++executed_;
  if (fn) fn();
}

void Engine::run_until(core::Nanos until) {
  stop_requested_ = false;
  while (!heap_.empty() && heap_.front().time <= until) {
    pop_and_run();
    if (stop_requested_) {
      stop_requested_ = false;
      return;
    }
  }
  if (until != core::kNever && now_ < until) now_ = until;
}

bool Engine::step() {
  if (heap_.empty()) return false;
  pop_and_run();
  return true;
}

}  // namespace tessera::sim
