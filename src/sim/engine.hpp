#pragma once
// The discrete-event engine. Events are ordered by (time, sequence number), so events at the same
// time run in the order they were scheduled and a run is byte-for-byte reproducible.
//
// Shape: an indexed binary heap of small PODs (time, sequence, slot) over a slot array that holds
// the callbacks; each slot knows where its entry sits in the heap. A timer id names its slot and
// its sequence number, so cancel and reschedule find the entry in O(1) and fix the heap in
// O(log n): the heap holds exactly the pending events, never tombstones. Slots are recycled, so a
// steady run does no heap allocation per event beyond what std::function itself needs for large
// captures. reschedule() moves a pending event, keeping its callback, ordered exactly as if it
// had been cancelled and scheduled anew.

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
  struct Entry {
    core::Nanos time;
    std::uint64_t seq;
    std::uint32_t slot;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  struct Slot {
    std::function<void()> fn;
    std::uint64_t seq = 0;  // the live event's sequence number; 0 when the slot is free
    std::uint32_t at = 0;   // index of its entry in heap_
  };

  Slot* live_slot(device::TimerId id);
  void place(std::size_t i, const Entry& e);  // heap_[i] = e, keeping the slot's index
  void sift_up(std::size_t i, Entry e);
  void sift_down(std::size_t i, Entry e);
  void remove_at(std::size_t i);
  void pop_and_run();

  core::Nanos now_ = 0;
  std::uint64_t next_seq_ = 1;
  std::uint64_t executed_ = 0;
  bool stop_requested_ = false;
  std::vector<Entry> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace tessera::sim
