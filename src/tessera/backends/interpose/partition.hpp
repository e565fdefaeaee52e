#pragma once
// The tenant's partitions in one CUDA context: a green context on the context's device, one
// non-blocking stream in it, and the two events that order that stream with the application's.
// Without a daemon there is one per context, of TESSERA_PARTITION_SMS SMs; under tesserad one per
// SM range and stream priority the daemon has assigned, and, for the whole GPU at a priority above
// the least, a stream of that priority in the application's own context (no green context). Each
// is made at the first launch that needs it and kept until exit (destroying green contexts while
// the driver is shutting down is not safe to order), so an assignment made again costs nothing.

#include <cuda.h>

#include <mutex>

#include "real_driver.hpp"
#include "stats.hpp"
#include "tessera/daemon/assignment_page.hpp"

namespace tessera::interpose {

struct Partition {
  CUcontext app_context = nullptr;
  // The request it was made for: `want` SMs (TESSERA_PARTITION_SMS), or, when first_sm >= 0,
  // the daemon's range [first_sm, first_sm + want), or (whole) the whole GPU; its stream priority
  // in levels above the least urgent (the stream is made with CUDA priority -priority).
  int first_sm = -1;
  unsigned want = 0;
  bool whole = false;
  int priority = 0;
  CUdevice device = 0;
  CUgreenCtx green = nullptr;     // none for the whole GPU
  CUstream stream = nullptr;      // the partition stream P
  CUevent app_done = nullptr;     // recorded on the app's stream S (created in S's context)
  CUevent launch_done = nullptr;  // recorded on P (created in the green context)
  unsigned sms = 0;               // what the green context really got
  bool ok = false;
  char error[224] = {};
  // Serialises record/wait/launch/record/wait: the two events are shared by every launch.
  std::mutex sequence;
  // Under a daemon, graph launches are timed: pairs of timing events recorded on the partition
  // stream around a graph launch and read back at a later one (made at the first; under
  // `sequence`). A launch that finds every pair still pending is not timed.
  static constexpr int kStepSlots = 4;
  CUevent step_start[kStepSlots] = {};
  CUevent step_end[kStepSlots] = {};
  bool step_pending[kStepSlots] = {};
  bool step_events_made = false;
  bool step_events_failed = false;
};

// The partition of the current context, made on first use; nullptr with `why` set when there is
// no current context or the partition could not be made (then it is not retried).
Partition* partition_for_current_context(const RealDriver& d, unsigned sms, Why* why);
// The partition of the current context for the daemon's range [first_sm, first_sm + sms), made
// from the device's SMs split (one call) into groups of `granule` SMs: the groups inside the range.
// The driver may round a group up, so the partition can hold fewer SMs than the range.
Partition* partition_for_range(const RealDriver& d, unsigned first_sm, unsigned sms,
                               unsigned granule, int priority, Why* why);
// The stream of priority `priority` (> 0) on the whole GPU in the current context, made on first
// use (needs RealDriver::stream_create_with_priority).
Partition* partition_for_whole_gpu(const RealDriver& d, int priority, Why* why);

// Under p.sequence, before a graph launch on p.stream: reports the timed graph launches that have
// finished to `page`, then records the start event of a free pair and returns its slot (-1: this
// launch is not timed: the driver lacks event timing, the events could not be made, or every pair
// is still in flight).
int begin_timed_step(const RealDriver& d, Partition& p, daemon_abi::AssignmentPage& page);
// After the launch: records the pair's end event.
void end_timed_step(const RealDriver& d, Partition& p, int slot);

struct PartitionInfo {
  int device;
  int first_sm;  // -1: not a daemon range
  bool whole;    // the whole GPU (a stream of a higher priority)
  int priority;
  unsigned sms;
  bool ok;
  const char* error;
};
// Calls f(info, first) for each partition made so far (for the summary).
template <class F>
void for_each_partition(F&& f);
int partition_count();
PartitionInfo partition_info(int i);

template <class F>
void for_each_partition(F&& f) {
  const int n = partition_count();
  for (int i = 0; i < n; ++i) f(partition_info(i), i == 0);
}

}  // namespace tessera::interpose
