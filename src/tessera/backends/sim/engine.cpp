#include "tessera/backends/sim/engine.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace tessera::sim {

namespace {

constexpr std::uint64_t kLow32 = 0xffff'ffffULL;
constexpr std::uint64_t kSignBit = std::uint64_t{1} << 63;

std::uint64_t time_key(core::Nanos t) {
  return static_cast<std::uint64_t>(t) ^ kSignBit;
}
core::Nanos key_time(std::uint64_t k) {
  return static_cast<core::Nanos>(k ^ kSignBit);
}

// A timer id is the slot index in the low 32 bits and the slot's generation in the high 32 bits.
// The generation is odd, so no id is 0, and a stale id can only alias a live event after its slot
// has been scheduled or moved 2^31 more times, far beyond any run.
device::TimerId make_id(std::uint32_t slot, std::uint32_t gen) {
  return (static_cast<device::TimerId>(gen) << 32) | slot;
}

}  // namespace

void Engine::place(std::size_t i, const Entry& e) {
  heap_[i] = e;
  pos_[e.slot()] = static_cast<std::uint32_t>(i);
}

void Engine::sift_up(std::size_t i, Entry e) {
  const Key k = e.key();
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!(k < heap_[parent].key())) break;
    place(i, heap_[parent]);
    i = parent;
  }
  place(i, e);
}

void Engine::sift_down(std::size_t i, Entry e) {
  const Key k = e.key();
  const std::size_t n = heap_.size();
  for (;;) {
    const std::size_t first = kArity * i + 1;
    if (first >= n) break;
    // The earliest child, chosen with conditional moves: which child wins is a coin toss, so a
    // branch here would be mispredicted half the time.
    const std::size_t end = std::min(first + kArity, n);
    std::size_t best = first;
    Key best_key = heap_[first].key();
    for (std::size_t c = first + 1; c < end; ++c) {
      const Key ck = heap_[c].key();
      const bool earlier = ck < best_key;
      best = earlier ? c : best;
      best_key = earlier ? ck : best_key;
    }
    if (!(best_key < k)) break;
    place(i, heap_[best]);
    i = best;
  }
  place(i, e);
}

void Engine::remove_at(std::size_t i) {
  const Entry last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;
  // The last entry fills the hole, then moves whichever way the order asks.
  if (i > 0 && last.key() < heap_[(i - 1) / kArity].key()) {
    sift_up(i, last);
  } else {
    sift_down(i, last);
  }
}

std::uint64_t Engine::take_seq() {
  if (next_seq_ == kSeqLimit) renumber();
  return next_seq_++;
}

void Engine::renumber() {
  std::vector<std::uint32_t> by_seq(heap_.size());
  std::iota(by_seq.begin(), by_seq.end(), 0U);
  std::sort(by_seq.begin(), by_seq.end(),
            [this](std::uint32_t a, std::uint32_t b) { return heap_[a].order < heap_[b].order; });
  for (std::size_t rank = 0; rank < by_seq.size(); ++rank) {
    Entry& e = heap_[by_seq[rank]];
    e.order = (static_cast<std::uint64_t>(rank) << 32) | e.slot();
  }
  next_seq_ = by_seq.size();
}

device::TimerId Engine::schedule_at(core::Nanos when, std::function<void()> fn) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
    pos_.push_back(0);
  }
  Slot& s = slots_[slot];
  s.fn = std::move(fn);
  ++s.gen;  // odd: pending
  const Entry e{time_key(std::max(when, now_)), (take_seq() << 32) | slot};
  heap_.emplace_back();
  sift_up(heap_.size() - 1, e);
  return make_id(slot, s.gen);
}

std::uint32_t Engine::live_slot(device::TimerId id) const {
  const auto slot = static_cast<std::uint32_t>(id & kLow32);
  if (slot >= slots_.size()) return kNoSlot;
  const std::uint32_t gen = slots_[slot].gen;
  if ((gen & 1) == 0 || gen != (id >> 32)) return kNoSlot;
  return slot;
}

bool Engine::cancel(device::TimerId id) {
  const std::uint32_t slot = live_slot(id);
  if (slot == kNoSlot) return false;
  remove_at(pos_[slot]);
  Slot& s = slots_[slot];
  s.fn = nullptr;
  ++s.gen;  // even: free
  free_slots_.push_back(slot);
  return true;
}

device::TimerId Engine::reschedule(device::TimerId id, core::Nanos when) {
  const std::uint32_t slot = live_slot(id);
  if (slot == kNoSlot) return 0;
  const std::size_t i = pos_[slot];
  const Entry moved{time_key(std::max(when, now_)), (take_seq() << 32) | slot};
  Slot& s = slots_[slot];
  s.gen += 2;  // still odd, but the old id no longer matches
  if (moved.key() < heap_[i].key()) {
    sift_up(i, moved);
  } else {
    sift_down(i, moved);
  }
  return make_id(slot, s.gen);
}

void Engine::pop_and_run() {
  const Entry e = heap_.front();
  remove_at(0);
  // In a long queue the next event's slot was written long ago and is a cache miss: start
  // fetching it now, so it arrives while this callback runs.
  if (!heap_.empty()) __builtin_prefetch(&slots_[heap_.front().slot()]);
  // Move the callback out and free its slot first: the callback may schedule (and so reuse the
  // slot, or grow the slot array) while it runs.
  Slot& s = slots_[e.slot()];
  std::function<void()> fn = std::move(s.fn);
  s.fn = nullptr;
  ++s.gen;  // even: free
  free_slots_.push_back(e.slot());
  now_ = key_time(e.time);
  ++executed_;
  if (fn) fn();
}

void Engine::run_until(core::Nanos until) {
  stop_requested_ = false;
  while (!heap_.empty() && key_time(heap_.front().time) <= until) {
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
