#pragma once
// Routes one launch through the tenant's partition, or passes it through unchanged.
//
// A launch on application stream S becomes, on the partition stream P of the current context:
//   cuEventRecord(app_done, S); cuStreamWaitEvent(P, app_done)   P starts after S's earlier work
//   launch(P)                                                    same arguments, stream P
//   cuEventRecord(launch_done, P); cuStreamWaitEvent(S, launch_done)  S's later work waits
// so order on S, cuStreamSynchronize(S), cuStreamQuery(S) and events recorded on S later all
// still see the kernel. Cost: four extra driver calls per launch and one mutex (the two events
// are shared), and launches from different application streams serialise on P.

#include <cuda.h>

#include <mutex>

#include "config.hpp"
#include "daemon_link.hpp"
#include "partition.hpp"
#include "real_driver.hpp"
#include "stats.hpp"

namespace tessera::interpose {

// Under tesserad: tells the daemon about this launch (it counts as work, so a tenant the daemon
// gave no SMs gets some at its next round) and returns the assignment to launch under. While the
// assignment is kHoldSms it waits, polling the page, up to `hold_limit_ns`; if still held then, it
// returns kHoldSms and the launch goes ahead on the application's stream (fail-open).
daemon_abi::Assignment follow_daemon(daemon_abi::AssignmentPage& page, long long hold_limit_ns);

// `fits(partition)`: false when a cooperative grid would not be co-resident on the partition.
// `launch(stream)`: the real call with the stream replaced (and only the stream).
template <class Fits, class Launch>
CUresult route(Entry e, CUstream app_stream, Fits&& fits, Launch&& launch) {
  const RealDriver* d = real_driver(false);
  // A wrapper is only handed out once the driver is resolved.
  if (d == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  auto pass = [&](Why why) {
    count_passed(e, why);
    return launch(app_stream);
  };
  try {
    const Config& c = config();
    daemon_abi::AssignmentPage* page = c.daemon_socket[0] != '\0' ? daemon_page() : nullptr;
    daemon_abi::Assignment assigned;
    if (page != nullptr) {
      assigned = follow_daemon(*page, c.hold_limit_ns);
      // The whole GPU at the least priority is the application's own stream.
      const bool whole = assigned.sms == daemon_abi::kWholeGpuSms;
      if (whole && (assigned.priority == 0 || d->stream_create_with_priority == nullptr))
        return pass(Why::kAssignedWholeGpu);
      if (assigned.sms == daemon_abi::kHoldSms) return pass(Why::kHoldTimedOut);
    } else {
      if (!c.configured) return pass(Why::kNotConfigured);
      if (!c.valid) return pass(Why::kBadConfig);
    }
    if (!d->can_route) return pass(Why::kDriverLacksRouting);
    // The stream the application's work is ordered on: a null stream in a _ptsz call is the
    // calling thread's default stream (cuda.h:450), in a plain call the legacy stream.
    const CUstream s =
        (app_stream == nullptr && entry_is_ptsz(e)) ? CU_STREAM_PER_THREAD : app_stream;
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (d->stream_is_capturing != nullptr && (d->stream_is_capturing(s, &capture) != CUDA_SUCCESS ||
                                              capture != CU_STREAM_CAPTURE_STATUS_NONE)) {
      return pass(Why::kStreamCapturing);
    }
    Why why = Why::kPartitionFailed;
    const auto priority = static_cast<int>(assigned.priority);
    Partition* p = page == nullptr ? partition_for_current_context(*d, c.partition_sms, &why)
                   : assigned.sms == daemon_abi::kWholeGpuSms
                       ? partition_for_whole_gpu(*d, priority, &why)
                       : partition_for_range(*d, assigned.first_sm, assigned.sms,
                                             page->granule_sms.load(std::memory_order_relaxed),
                                             priority, &why);
    if (p == nullptr) return pass(why);
    if (page != nullptr) page->routed_sms.store(p->sms, std::memory_order_relaxed);
    if (!fits(*d, *p)) return pass(Why::kCooperativeTooLarge);

    std::lock_guard lock(p->sequence);
    if (d->event_record(p->app_done, s) != CUDA_SUCCESS ||
        d->stream_wait_event(p->stream, p->app_done, 0) != CUDA_SUCCESS) {
      return pass(Why::kEventFailed);
    }
    // A graph is a serving engine's captured step: the daemon's policy sees how long it took.
    const bool graph = e == Entry::kGraphLaunch || e == Entry::kGraphLaunchPtsz;
    const int step = page != nullptr && graph ? begin_timed_step(*d, *p, *page) : -1;
    const CUresult r = launch(p->stream);
    if (r == CUDA_SUCCESS) end_timed_step(*d, *p, step);
    if (r != CUDA_SUCCESS) {
      verbose_log("%s on the partition stream returned %d: launching on the application's",
                  entry_symbol(e), static_cast<int>(r));
      return pass(Why::kPartitionLaunchFailed);
    }
    if (d->event_record(p->launch_done, p->stream) != CUDA_SUCCESS ||
        d->stream_wait_event(s, p->launch_done, 0) != CUDA_SUCCESS) {
      // The kernel is queued on P but S does not wait for it: wait here so the application's
      // later work still comes after it.
      count_order_sync(e);
      d->stream_synchronize(p->stream);
    }
    count_routed(e);
    return r;
  } catch (...) {
    return pass(Why::kInternalError);
  }
}

// For launches that are not cooperative.
inline bool always_fits(const RealDriver&, const Partition&) {
  return true;
}

// A cooperative grid must be co-resident: blocks <= max active blocks per SM x partition SMs.
bool cooperative_fits(const RealDriver& d, const Partition& p, CUfunction f, unsigned gx,
                      unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      unsigned shared_bytes);

}  // namespace tessera::interpose
