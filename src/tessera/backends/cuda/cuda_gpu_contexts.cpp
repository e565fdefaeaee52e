// CudaGpu's physical contexts: the granules of one split call, the green context of each granule
// set a stream's SmMask maps to (made on first use, cached, the least recently used idle one
// destroyed when the cache is full), and a CUstream per (device stream, context).

#include <vector>

#include "tessera/backends/cuda/internal/cuda_gpu_impl.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::cuda {

using core::Code;
using core::Domain;

core::Status CudaGpu::Impl::make_granules() {
  TESSERA_ASSIGN_OR_RETURN(const auto resource, query_sm_resource(driver, device.handle));
  // The smallest partition the driver makes (8 SMs on Hopper, 4 on Ampere: cuda.h's guidelines,
  // read from the device here, never assumed) is the granule: every partition is a union of them.
  TESSERA_ASSIGN_OR_RETURN(auto split,
                           split_into_granules(driver, device.handle, resource.min_partition_sms));
  if (split.groups.empty() || split.granule_sms <= 0) {
    return core::failf(Domain::kCuda, Code::kInternal,
                       "splitting GPU {}'s {} SMs into granules of {} gave none", device.ordinal,
                       resource.sm_count, resource.min_partition_sms);
  }
  granules = std::move(split);
  // Policies plan partitions in whole granules (gpu/physical_contexts.hpp's PartitionGrid).
  spec.green_ctx_sm_granularity = granules->granule_sms;
  spec.green_ctx_min_sms = granules->granule_sms;
  return {};
}

GranuleSet CudaGpu::Impl::granules_for(const device::SmMask& mask) const {
  GranuleSet set;
  if (!granules || mask.empty()) return set;
  bool every_sm = true;
  for (int i = 0; i < spec.sms && every_sm; ++i) every_sm = mask.test(i);
  if (every_sm) return set;  // the whole GPU: the primary context
  // SmMask index i is SM i of a virtual numbering: granule g holds SMs [g * G, (g + 1) * G), and
  // the SMs after the last granule are the split's remainder (the control kernel's).
  const int g_sms = granules->granule_sms;
  const int n = static_cast<int>(granules->groups.size());
  int best = -1;
  int best_overlap = 0;
  for (int g = 0; g < n; ++g) {
    int overlap = 0;
    for (int i = g * g_sms; i < (g + 1) * g_sms; ++i) overlap += mask.test(i) ? 1 : 0;
    if (overlap == g_sms) set.set(static_cast<std::size_t>(g));
    if (overlap > best_overlap) {
      best_overlap = overlap;
      best = g;
    }
  }
  if (set.none()) {
    // A mask smaller than a granule (LithOS's TPC sets can be): the granule it overlaps most,
    // or the last one when it names only remainder SMs.
    const int g = best >= 0 ? best : n - 1;
    set.set(static_cast<std::size_t>(g));
    core::logger().debug(
        "CudaGpu: an SM set of {} SMs covers no granule of {} SMs completely; "
        "it runs in granule {} ({} of its SMs in the set)",
        mask.count(), g_sms, g, best_overlap);
  }
  return set;
}

core::Result<ExecutionContext*> CudaGpu::Impl::context_for(const GranuleSet& set) {
  if (set.none()) {
    primary_context->last_used = ++use_clock;
    return primary_context.get();
  }
  for (auto& c : green_contexts) {
    if (c->granules == set) {
      c->last_used = ++use_clock;
      return c.get();
    }
  }
  if (static_cast<int>(green_contexts.size()) >= options.max_green_contexts) {
    // Only a context with nothing in flight and no live event can go.
    auto victim = green_contexts.end();
    for (auto it = green_contexts.begin(); it != green_contexts.end(); ++it) {
      const auto& c = **it;
      if (c.launches_in_flight > 0 || c.live_events > 0) continue;
      if (victim == green_contexts.end() || c.last_used < (*victim)->last_used) victim = it;
    }
    if (victim != green_contexts.end()) {
      destroy_context(**victim);
      green_contexts.erase(victim);
    } else {
      core::logger().warn("CudaGpu: all {} cached green contexts are busy; making one more",
                          green_contexts.size());
    }
  }
  std::vector<int> indices;
  for (std::size_t g = 0; g < set.size(); ++g) {
    if (set.test(g)) indices.push_back(static_cast<int>(g));
  }
  TESSERA_ASSIGN_OR_RETURN(auto green,
                           make_green_context(driver, device.handle, *granules, indices, 0));
  auto c = std::make_unique<ExecutionContext>();
  c->granules = set;
  c->green = std::move(green);
  c->context = c->green.context;
  c->sms = c->green.sms;
  c->last_used = ++use_clock;
  green_contexts.push_back(std::move(c));
  return green_contexts.back().get();
}

core::Result<CUstream> CudaGpu::Impl::custream_for(ExecutionContext& where,
                                                   device::StreamId stream) {
  if (auto it = where.streams.find(stream); it != where.streams.end()) return it->second.get();
  CUstream cu = nullptr;
  // CUDA numbers priorities the other way round (lower is more urgent) and clamps them to the
  // device's range (cuStreamCreateWithPriority).
  const int priority = -streams[stream].config.priority;
  if (where.primary) {
    TESSERA_TRY(check(api.ctx_push_current(where.context), "cuCtxPushCurrent"));
    const CUresult r = api.stream_create_with_priority(&cu, CU_STREAM_NON_BLOCKING, priority);
    CUcontext popped = nullptr;
    api.ctx_pop_current(&popped);
    TESSERA_TRY(check(r, "cuStreamCreateWithPriority"));
  } else {
    TESSERA_TRY(check(
        api.green_ctx_stream_create(&cu, where.green.green.get(), CU_STREAM_NON_BLOCKING, priority),
        "cuGreenCtxStreamCreate"));
  }
  where.streams.emplace(stream, UniqueStream(driver, cu));
  if (!where.reference) {
    // The context's first CUstream is empty: its reference event completes at once.
    TESSERA_TRY(check(api.ctx_push_current(where.context), "cuCtxPushCurrent"));
    CUevent e = nullptr;
    CUresult r = api.event_create(&e, CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS) {
      where.reference = UniqueEvent(driver, e);
      r = api.event_record(e, cu);
      if (r == CUDA_SUCCESS) r = api.event_synchronize(e);
    }
    CUcontext popped = nullptr;
    api.ctx_pop_current(&popped);
    TESSERA_TRY(check(r, "recording a context's reference event"));
    where.reference_time = executor.now();
  }
  return cu;
}

core::Result<OwnedEvent> CudaGpu::Impl::create_event(ExecutionContext& where) {
  // The caller has made `where` current: an event belongs to the context it is created in.
  CUevent e = nullptr;
  TESSERA_TRY(check(api.event_create(&e, CU_EVENT_DEFAULT), "cuEventCreate"));
  return OwnedEvent(UniqueEvent(driver, e), where);
}

void CudaGpu::Impl::destroy_context(ExecutionContext& c) {
  c.streams.clear();
  c.reference.reset();
  if (!c.primary) destroy_green_context(c.green);
}

}  // namespace tessera::cuda
