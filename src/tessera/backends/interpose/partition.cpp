#include "partition.hpp"

#include <atomic>
#include <cstdio>

#include "config.hpp"

namespace tessera::interpose {
namespace {

// ASSUMPTION: 256 partitions per process is enough (one primary context per device, a few
// created ones, and under a daemon the few ranges its policy moves a tenant between); beyond that
// launches pass through as partition_failed.
constexpr int kMaxPartitions = 256;
Partition g_partitions[kMaxPartitions];
std::atomic<int> g_count{0};  // slots [0, g_count) are complete and never change
std::mutex g_create_mutex;

bool check(CUresult r, const char* call, Partition& p) {
  if (r == CUDA_SUCCESS) return true;
  std::snprintf(p.error, sizeof p.error, "%s returned %d", call, static_cast<int>(r));
  return false;
}

// A green context from `desc`, its real SM count read back (the driver may give fewer: notes
// section 1), a non-blocking stream (required, cuda.h:25252) and the two ordering events.
void finish(const RealDriver& d, CUdevResourceDesc desc, Partition& p) {
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
  if (!check(d.green_ctx_stream_create(&p.stream, p.green, CU_STREAM_NON_BLOCKING, -p.priority),
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

// cuDevSmResourceSplitByCount with one group of at least `want` SMs (cuda.h:25040).
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
  finish(d, desc, p);
}

// The device split into groups of `granule` SMs in one call, and the groups inside
// [first, first + want) combined into one descriptor (allowed for groups of one split call,
// cuda.h:25050).
void make_range(const RealDriver& d, unsigned first, unsigned want, unsigned granule,
                Partition& p) {
  if (!check(d.ctx_get_device(&p.device), "cuCtxGetDevice", p)) return;
  CUdevResource all{};
  if (!check(d.device_get_dev_resource(p.device, &all, CU_DEV_RESOURCE_TYPE_SM),
             "cuDeviceGetDevResource", p)) {
    return;
  }
  // ASSUMPTION: no device has more than 256 groups (an H200 has 16 of 8 SMs).
  CUdevResource groups[256] = {};
  unsigned count = 256;
  CUdevResource remaining{};
  const CUresult split = d.dev_sm_resource_split_by_count(groups, &count, &all, &remaining, 0,
                                                          granule == 0 ? 1 : granule);
  if (split != CUDA_SUCCESS || count < 1) {
    std::snprintf(p.error, sizeof p.error,
                  "cuDevSmResourceSplitByCount(minCount=%u) on device %d (%u SMs) returned %d "
                  "with %u groups",
                  granule, p.device, all.sm.smCount, static_cast<int>(split), count);
    return;
  }
  const unsigned size = groups[0].sm.smCount;
  unsigned begin = (first + size - 1) / size;
  unsigned end = (first + want) / size;
  if (end > count) end = count;
  if (size == 0 || begin >= end) {
    std::snprintf(p.error, sizeof p.error,
                  "SMs %u-%u hold no whole group of the %u SMs device %d splits into", first,
                  first + want - 1, size, p.device);
    return;
  }
  CUdevResourceDesc desc = nullptr;
  if (!check(d.dev_resource_generate_desc(&desc, groups + begin, end - begin),
             "cuDevResourceGenerateDesc", p)) {
    return;
  }
  finish(d, desc, p);
}

// The whole GPU at a higher priority: a stream in the application's (current) context, where both
// ordering events live too. CUDA clamps the priority to the device's range.
void make_whole(const RealDriver& d, Partition& p) {
  if (!check(d.ctx_get_device(&p.device), "cuCtxGetDevice", p)) return;
  CUdevResource all{};
  if (!check(d.device_get_dev_resource(p.device, &all, CU_DEV_RESOURCE_TYPE_SM),
             "cuDeviceGetDevResource", p)) {
    return;
  }
  p.sms = all.sm.smCount;
  if (!check(d.stream_create_with_priority(&p.stream, CU_STREAM_NON_BLOCKING, -p.priority),
             "cuStreamCreateWithPriority", p)) {
    return;
  }
  if (!check(d.event_create(&p.app_done, CU_EVENT_DISABLE_TIMING), "cuEventCreate", p)) return;
  if (!check(d.event_create(&p.launch_done, CU_EVENT_DISABLE_TIMING), "cuEventCreate", p)) return;
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

// What a partition is made for, within the current context.
struct Request {
  int first_sm = -1;
  unsigned want = 0;
  bool whole = false;
  int priority = 0;
};

// The partition of the current context made for `r`, made with `build` on first use.
template <class Build>
Partition* partition_for(const RealDriver& d, const Request& r, Why* why, Build&& build) {
  CUcontext current = nullptr;
  if (d.ctx_get_current(&current) != CUDA_SUCCESS || current == nullptr) {
    *why = Why::kNoContext;
    return nullptr;
  }
  auto find = [&](int n) -> Partition* {
    for (int i = 0; i < n; ++i) {
      const Partition& p = g_partitions[i];
      if (p.app_context == current && p.first_sm == r.first_sm && p.want == r.want &&
          p.whole == r.whole && p.priority == r.priority) {
        return &g_partitions[i];
      }
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
      p->first_sm = r.first_sm;
      p->want = r.want;
      p->whole = r.whole;
      p->priority = r.priority;
      build(*p);
      if (!p->ok) undo(d, *p);
      if (p->ok) {
        if (r.whole) {
          verbose_log("context %p, device %d: whole GPU (%u SMs), stream %p of priority %d",
                      static_cast<void*>(current), p->device, p->sms, static_cast<void*>(p->stream),
                      -r.priority);
        } else if (r.first_sm < 0) {
          verbose_log("context %p, device %d: green context of %u SMs (asked %u), stream %p",
                      static_cast<void*>(current), p->device, p->sms, r.want,
                      static_cast<void*>(p->stream));
        } else {
          verbose_log(
              "context %p, device %d: green context of %u SMs (asked SMs %d-%u), "
              "stream %p of priority %d",
              static_cast<void*>(current), p->device, p->sms, r.first_sm,
              static_cast<unsigned>(r.first_sm) + r.want - 1, static_cast<void*>(p->stream),
              -r.priority);
        }
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

}  // namespace

Partition* partition_for_current_context(const RealDriver& d, unsigned sms, Why* why) {
  return partition_for(d, Request{.first_sm = -1, .want = sms}, why,
                       [&](Partition& p) { make(d, sms, p); });
}

Partition* partition_for_range(const RealDriver& d, unsigned first_sm, unsigned sms,
                               unsigned granule, int priority, Why* why) {
  return partition_for(
      d, Request{.first_sm = static_cast<int>(first_sm), .want = sms, .priority = priority}, why,
      [&](Partition& p) { make_range(d, first_sm, sms, granule, p); });
}

Partition* partition_for_whole_gpu(const RealDriver& d, int priority, Why* why) {
  return partition_for(d, Request{.whole = true, .priority = priority}, why,
                       [&](Partition& p) { make_whole(d, p); });
}

namespace {

// The timing events, in the stream's context (cuEventRecord wants the event in the stream's):
// the green context, or the application's for the whole GPU.
bool make_step_events(const RealDriver& d, Partition& p) {
  CUcontext context = p.app_context;
  if (p.green != nullptr && d.ctx_from_green_ctx(&context, p.green) != CUDA_SUCCESS) return false;
  if (d.ctx_push_current(context) != CUDA_SUCCESS) return false;
  bool ok = true;
  for (int i = 0; i < Partition::kStepSlots && ok; ++i) {
    ok = d.event_create(&p.step_start[i], CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
         d.event_create(&p.step_end[i], CU_EVENT_DEFAULT) == CUDA_SUCCESS;
  }
  CUcontext popped = nullptr;
  return d.ctx_pop_current(&popped) == CUDA_SUCCESS && ok;
}

}  // namespace

int begin_timed_step(const RealDriver& d, Partition& p, daemon_abi::AssignmentPage& page) {
  if (d.event_query == nullptr || d.event_elapsed_time == nullptr || p.step_events_failed) {
    return -1;
  }
  if (!p.step_events_made) {
    p.step_events_made = true;
    p.step_events_failed = !make_step_events(d, p);
    if (p.step_events_failed) {
      verbose_log("device %d: no timing events for graph launches", p.device);
      return -1;
    }
  }
  int free = -1;
  for (int i = 0; i < Partition::kStepSlots; ++i) {
    if (p.step_pending[i] && d.event_query(p.step_end[i]) == CUDA_SUCCESS) {
      float ms = 0;
      if (d.event_elapsed_time(&ms, p.step_start[i], p.step_end[i]) == CUDA_SUCCESS && ms >= 0) {
        page.last_step_ns.store(static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6),
                                std::memory_order_relaxed);
        page.last_step_sms.store(p.sms, std::memory_order_relaxed);
        page.steps.fetch_add(1, std::memory_order_release);
      }
      p.step_pending[i] = false;
    }
    if (!p.step_pending[i] && free < 0) free = i;
  }
  if (free < 0 || d.event_record(p.step_start[free], p.stream) != CUDA_SUCCESS) return -1;
  return free;
}

void end_timed_step(const RealDriver& d, Partition& p, int slot) {
  if (slot < 0) return;
  p.step_pending[slot] = d.event_record(p.step_end[slot], p.stream) == CUDA_SUCCESS;
}

int partition_count() {
  return g_count.load(std::memory_order_acquire);
}

PartitionInfo partition_info(int i) {
  const Partition& p = g_partitions[i];
  return {static_cast<int>(p.device), p.first_sm, p.whole, p.priority, p.sms, p.ok, p.error};
}

}  // namespace tessera::interpose
