#pragma once
// The discrete-event engine. Events are ordered by (time, sequence number), so events at the same
// time run in the order they were scheduled and a run is byte-for-byte reproducible.
//
// Shape: an indexed 4-ary min-heap whose entries hold the whole ordering key inline in 16 bytes
// (time; sequence number and slot packed in one word), so a sift compares contiguous memory and
// never follows a pointer, and a 4-ary heap has half the levels of a binary one. Callbacks live
// in a slot array beside the heap and a dense position array says where each slot's entry sits,
// so a timer id (slot and generation) finds its entry in O(1) and cancel or reschedule fix the
// heap in O(log n): the heap holds exactly the pending events, never tombstones. Slots are
// recycled, so a steady run does no heap allocation per event beyond what std::function itself
// needs for large captures. reschedule() moves a pending event, keeping its callback, ordered
// exactly as if it had been cancelled and scheduled anew.
//
// An entry has 32 bits for the sequence number. When they run out (after 2^32 schedules), the
// pending events are renumbered 0..n-1 in their current order, which changes no comparison; ids
// carry a per-slot generation rather than the sequence number, so they survive the renumbering.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "tessera/core/time.hpp"
#include "tessera/device/executor.hpp"

namespace tessera::sim {

class Engine final : public device::Executor {
 public:
  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  core::Nanos now() const override { return now_; }
  device::TimerId schedule_at(core::Nanos when, std::function<void()> fn) override;
  bool cancel(device::TimerId id) override;
  // Moves a pending event to `when` (clamped to now), as cancel + schedule_at with the same
  // callback would; returns its new id, or 0 (and does nothing) if `id` is not pending.
  device::TimerId reschedule(device::TimerId id, core::Nanos when);

  // Runs events until none is left or the next one is after `until`; time ends at `until`
  // (or at the last event if the queue empties first and until is kNever).
  void run_until(core::Nanos until);
  // Runs exactly one event; false if none is pending.
  bool step();
  // Asks a running run_until to return after the current event.
  void stop() { stop_requested_ = true; }

  std::size_t pending() const { return heap_.size(); }
  std::uint64_t events_executed() const { return executed_; }

 private:
  friend struct EngineTestPeer;  // lets a test reach the sequence-number wrap without 2^32 events

  __extension__ typedef unsigned __int128 Key;

  struct Entry {
    std::uint64_t time;   // the event's time with the sign bit flipped: unsigned order = time order
    std::uint64_t order;  // sequence number << 32 | slot; sequence numbers are unique
    Key key() const { return (Key{time} << 64) | order; }
    std::uint32_t slot() const { return static_cast<std::uint32_t>(order); }
  };
  struct Slot {
    std::function<void()> fn;
    std::uint32_t gen = 0;  // odd while an event is pending in the slot; its timer id carries it
  };

  static constexpr std::size_t kArity = 4;
  static constexpr std::uint64_t kSeqLimit = std::uint64_t{1} << 32;
  static constexpr std::uint32_t kNoSlot = 0xffff'ffffU;

  std::uint32_t live_slot(device::TimerId id) const;  // kNoSlot unless `id` is pending
  std::uint64_t take_seq();
  void renumber();
  void place(std::size_t i, const Entry& e);  // heap_[i] = e, keeping the slot's position
  void sift_up(std::size_t i, Entry e);
  void sift_down(std::size_t i, Entry e);
  void remove_at(std::size_t i);
  void pop_and_run();

  core::Nanos now_ = 0;
  std::uint64_t next_seq_ = 0;
  std::uint64_t executed_ = 0;
  bool stop_requested_ = false;
  std::vector<Entry> heap_;
  std::vector<std::uint32_t> pos_;  // by slot: index of its entry in heap_
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace tessera::sim
