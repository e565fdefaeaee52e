#include "partition.hpp"

#include <atomic>
#include <cstdio>

#include "config.hpp"

namespace tessera::interpose {
namespace {

// ASSUMPTION: 64 contexts per process is enough (one primary context per device, plus a few
// created ones); beyond that launches pass through as partition_failed.
constexpr int kMaxPartitions = 64;
Partition g_partitions[kMaxPartitions];
std::atomic<int> g_count{0};  // slots [0, g_count) are complete and never change
std::mutex g_create_mutex;

bool check(CUresult r, const char* call, Partition& p) {
  if (r == CUDA_SUCCESS) return true;
  std::snprintf(p.error, sizeof p.error, "%s returned %d", call, static_cast<int>(r));
  return false;
}

// cuDevSmResourceSplitByCount with one group of at least `want` SMs (cuda.h:25040), a green
// context from it, its real SM count read back (the driver may give fewer: notes section 1), a
// non-blocking stream (required, cuda.h:25252) and the two ordering events.
void make(const RealDriver& d, unsigned want, Partition& p) {
  if (!check(d.ctx_get_device(&p.device), "cuCtxGetDevice", p)) return;
  CUdevResource all{};
  if (!check(d.device_get_dev_resource(p.device, &all, CU_DEV_RESOURCE_TYPE_SM),
             "cuDeviceGetDevResource", p)) {
    return;
  }
  CUdevResource group{};
  CUdevResource remaining{};
  unsigned groups = 1;
  const CUresult split =
      d.dev_sm_resource_split_by_count(&group, &groups, &all, &remaining, 0, want);
  if (split != CUDA_SUCCESS || groups < 1) {
    std::snprintf(p.error, sizeof p.error,
                  "cuDevSmResourceSplitByCount(minCount=%u) on device %d (%u SMs, minimum "
                  "partition %u) returned %d with %u groups: lower TESSERA_PARTITION_SMS",
                  want, p.device, all.sm.smCount, all.sm.minSmPartitionSize,
                  static_cast<int>(split), groups);
    return;
  }
  CUdevResourceDesc desc = nullptr;
  if (!check(d.dev_resource_generate_desc(&desc, &group, 1), "cuDevResourceGenerateDesc", p))
    return;
  if (!check(d.green_ctx_create(&p.green, desc, p.device, CU_GREEN_CTX_DEFAULT_STREAM),
             "cuGreenCtxCreate", p)) {
    return;
  }
  CUdevResource got{};
  if (!check(d.green_ctx_get_dev_resource(p.green, &got, CU_DEV_RESOURCE_TYPE_SM),
             "cuGreenCtxGetDevResource", p)) {
    return;
  }
  p.sms = got.sm.smCount;
  if (!check(d.green_ctx_stream_create(&p.stream, p.green, CU_STREAM_NON_BLOCKING, 0),
             "cuGreenCtxStreamCreate", p)) {
    return;
  }
  // cuEventRecord needs the event and the stream in the same context: app_done in the
  // application's (current) context, launch_done in the green one.
  if (!check(d.event_create(&p.app_done, CU_EVENT_DISABLE_TIMING), "cuEventCreate", p)) return;
  CUcontext green_context = nullptr;
  if (!check(d.ctx_from_green_ctx(&green_context, p.green), "cuCtxFromGreenCtx", p)) return;
  if (!check(d.ctx_push_current(green_context), "cuCtxPushCurrent", p)) return;
  const CUresult made = d.event_create(&p.launch_done, CU_EVENT_DISABLE_TIMING);
  CUcontext popped = nullptr;
  const CUresult pop = d.ctx_pop_current(&popped);
  if (!check(made, "cuEventCreate (green context)", p) || !check(pop, "cuCtxPopCurrent", p)) return;
  p.ok = true;
}

// A partition that failed half-way gives back what it made (streams before their green context:
// cuGreenCtxDestroy does not destroy them, notes section 1).
void undo(const RealDriver& d, Partition& p) {
  if (p.launch_done != nullptr) d.event_destroy(p.launch_done);
  if (p.app_done != nullptr) d.event_destroy(p.app_done);
  if (p.stream != nullptr) d.stream_destroy(p.stream);
  if (p.green != nullptr) d.green_ctx_destroy(p.green);
  p.launch_done = p.app_done = nullptr;
  p.stream = nullptr;
  p.green = nullptr;
}

}  // namespace

Partition* partition_for_current_context(const RealDriver& d, unsigned sms, Why* why) {
  CUcontext current = nullptr;
  if (d.ctx_get_current(&current) != CUDA_SUCCESS || current == nullptr) {
    *why = Why::kNoContext;
    return nullptr;
  }
  auto find = [&](int n) -> Partition* {
    for (int i = 0; i < n; ++i) {
      if (g_partitions[i].app_context == current) return &g_partitions[i];
    }
    return nullptr;
  };
  Partition* p = find(g_count.load(std::memory_order_acquire));
  if (p == nullptr) {
    std::lock_guard lock(g_create_mutex);
    const int n = g_count.load(std::memory_order_relaxed);
    p = find(n);
    if (p == nullptr) {
      if (n == kMaxPartitions) {
        *why = Why::kPartitionFailed;
        return nullptr;
      }
      p = &g_partitions[n];
      p->app_context = current;
      make(d, sms, *p);
      if (!p->ok) undo(d, *p);
      if (p->ok) {
        verbose_log("context %p, device %d: green context of %u SMs (asked %u), stream %p",
                    static_cast<void*>(current), p->device, p->sms, sms,
                    static_cast<void*>(p->stream));
      } else {
        verbose_log("context %p: no partition: %s", static_cast<void*>(current), p->error);
      }
      g_count.store(n + 1, std::memory_order_release);
    }
  }
  if (!p->ok) {
    *why = Why::kPartitionFailed;
    return nullptr;
  }
  return p;
}

int partition_count() {
  return g_count.load(std::memory_order_acquire);
}

PartitionInfo partition_info(int i) {
  const Partition& p = g_partitions[i];
  return {static_cast<int>(p.device), p.sms, p.ok, p.error};
}

}  // namespace tessera::interpose
