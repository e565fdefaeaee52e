#pragma once
// The tenant's partition in one CUDA context: a green context of TESSERA_PARTITION_SMS SMs on the
// context's device, one non-blocking stream in it, and the two events that order that stream
// with the application's. Made at the first routed launch in that context, kept until exit
// (destroying green contexts while the driver is shutting down is not safe to order).

#include <cuda.h>

#include <mutex>

#include "real_driver.hpp"
#include "stats.hpp"

namespace tessera::interpose {

struct Partition {
  CUcontext app_context = nullptr;
  CUdevice device = 0;
  CUgreenCtx green = nullptr;
  CUstream stream = nullptr;      // the partition stream P
  CUevent app_done = nullptr;     // recorded on the app's stream S (created in S's context)
  CUevent launch_done = nullptr;  // recorded on P (created in the green context)
  unsigned sms = 0;               // what the green context really got
  bool ok = false;
  char error[224] = {};
  // Serialises record/wait/launch/record/wait: the two events are shared by every launch.
  std::mutex sequence;
};

// The partition of the current context, made on first use; nullptr with `why` set when there is
// no current context or the partition could not be made (then it is not retried).
Partition* partition_for_current_context(const RealDriver& d, unsigned sms, Why* why);

struct PartitionInfo {
  int device;
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
