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

void Engine::push(core::Nanos time, std::uint64_t seq, std::uint32_t slot) {
  Slot& s = slots_[slot];
  s.entry_seq = seq;
  s.entry_time = time;
  heap_.push_back(Entry{time, seq, slot});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
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
  Slot& s = slots_[slot];
  s.fn = std::move(fn);
  s.seq = seq;
  s.time = std::max(when, now_);
  push(s.time, seq, slot);
  ++live_;
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
  s->fn = nullptr;
  s->seq = 0;
  free_slots_.push_back(static_cast<std::uint32_t>(id & kLow32));
  --live_;
  if (heap_.size() > 2 * live_ + kSweepSlack) sweep_tombstones();
  return true;
}

device::TimerId Engine::reschedule(device::TimerId id, core::Nanos when) {
  Slot* s = live_slot(id);
  if (s == nullptr) return 0;
  const auto slot = static_cast<std::uint32_t>(id & kLow32);
  const std::uint64_t seq = next_seq_++;
  s->seq = seq;
  s->time = std::max(when, now_);
  // An entry due no later than the new time can stand for it and be re-filed when it surfaces;
  // otherwise the event needs an earlier entry (the old one turns into a tombstone).
  if (s->time < s->entry_time) {
    push(s->time, seq, slot);
    if (heap_.size() > 2 * live_ + kSweepSlack) sweep_tombstones();
  }
  return make_id(slot, seq);
}

void Engine::sweep_tombstones() {
  std::erase_if(heap_, [this](const Entry& e) {
    const Slot& s = slots_[e.slot];
    return s.seq == 0 || s.entry_seq != e.seq;
  });
  std::make_heap(heap_.begin(), heap_.end(), Later{});
}

bool Engine::settle_top() {
  while (!heap_.empty()) {
    const Entry top = heap_.front();
    Slot& s = slots_[top.slot];
    const bool stands = s.seq != 0 && s.entry_seq == top.seq;
    if (stands && s.seq == top.seq) return true;
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
    if (stands) push(s.time, s.seq, top.slot);  // moved later: file it at its new time
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
