#pragma once
// The discrete-event engine. Events are ordered by (time, sequence number), so events at the same
// time run in the order they were scheduled and a run is byte-for-byte reproducible.
//
// Shape: a binary heap of small PODs (time, sequence, slot) over a slot array that holds the
// callbacks. A timer id names its slot and its sequence number, so cancel is O(1): it frees the
// slot and leaves the heap entry behind as a tombstone that is skipped when it reaches the top
// (and swept out when tombstones outnumber live events). Slots are recycled, so a steady run
// does no heap allocation per event beyond what std::function itself needs for large captures.
//
// reschedule() moves a pending event, keeping its callback. Moved later, it keeps its old heap
// entry, which is pushed again at the new time when it reaches the top (so the common case, a
// completion pushed back by contention, costs no extra pop); moved earlier, it gets a new entry.
// Either way it is ordered exactly as if it had been cancelled and scheduled anew.

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

  std::size_t pending() const { return live_; }
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
    core::Nanos time = 0;   // when it is due
    // The heap entry standing for it; it may be earlier than `time` after a reschedule.
    std::uint64_t entry_seq = 0;
    core::Nanos entry_time = 0;
  };

  Slot* live_slot(device::TimerId id);
  void push(core::Nanos time, std::uint64_t seq, std::uint32_t slot);
  // Drops tombstones from the top and re-files moved events; true if a live event is due there.
  bool settle_top();
  void pop_and_run();
  void sweep_tombstones();

  core::Nanos now_ = 0;
  std::uint64_t next_seq_ = 1;
  std::uint64_t executed_ = 0;
  std::size_t live_ = 0;
  bool stop_requested_ = false;
  std::vector<Entry> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace tessera::sim
