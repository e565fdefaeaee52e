// CudaGpu's launches: kernels leave a stream's queue one at a time, at most issue_window ahead of
// the GPU, each into the CUstream of the context its stream's configuration names at that moment,
// bracketed by two events; a remap waits on the previous launch's end event. A submission walks
// its sequence in place from its first kernel and leaves the queue with its last (the span's
// count reached, or the sequence's end).

#include <atomic>
#include <utility>

#include "tessera/backends/cuda/emulation.hpp"
#include "tessera/backends/cuda/internal/cuda_gpu_impl.hpp"
#include "tessera/backends/cuda/kernel_params.h"
#include "tessera/core/try.hpp"

namespace tessera::cuda {

void CudaGpu::Impl::issue_all() {
  for (device::StreamId id = 0; id < streams.size() && !error; ++id) issue(id);
}

void CudaGpu::Impl::issue(device::StreamId id) {
  while (!error) {
    StreamState& st = streams[id];
    const auto clear_acknowledged = [&] {
      if (st.clear_seq && !control->acknowledged(*st.clear_seq)) return false;
      st.clear_seq.reset();
      return true;
    };
    // The rest of a yielded launch goes first, once its yield flag is down again.
    if (st.rest) {
      if (!st.in_flight.empty() || !clear_acknowledged()) return;
      // Asked to yield meanwhile: the flag goes up first, so the rest stops at its next
      // checkpoint.
      if (std::exchange(st.yield_rest, false) && !raise_yield_flag(id)) return;
      Launch rest = std::move(*streams[id].rest);
      streams[id].rest.reset();
      (void)launch(id, std::move(rest));
      return;  // a checkpointed launch is alone in flight
    }
    if (st.queue.empty()) return;
    // Every queued submission has a kernel left to issue: it leaves the queue with its last.
    const auto sub = st.queue.front();
    const workload::KernelSequence& seq = *sub->sequence;
    if (static_cast<int>(st.in_flight.size()) >= options.issue_window) return;
    // Nothing is issued behind a checkpointed launch: if it yields, its rest must run next.
    if (!st.in_flight.empty() && st.in_flight.back().yieldable) return;
    const workload::Kernel& k = sub->next.kernel(seq);
    // Only tessera_emulate with checkpoints, on a stream with a yield flag, within the progress
    // buffer's size, can stop early; any other kernel runs to its end.
    const bool yieldable = k.checkpoints > 0 && control != nullptr && st.slot >= 0 &&
                           k.blocks <= options.max_checkpointed_blocks &&
                           !payloads.contains(k.name);
    if (yieldable && (!st.in_flight.empty() || !clear_acknowledged())) return;

    Launch l;
    l.submission = sub;
    l.kernel = &k;
    l.cursor = sub->next;
    l.blocks = sub->range.size() > 0 ? sub->range : device::BlockRange{.begin = 0, .end = k.blocks};
    l.yieldable = yieldable;
    // A span ends after its count of kernels, which may be before the sequence does.
    const bool more = sub->next.advance(seq);
    l.last_of_submission = --sub->left <= 0 || !more;
    if (l.last_of_submission) {
      sub->left = 0;
      st.queue.pop_front();
    }
    if (!launch(id, std::move(l))) return;
  }
}

core::Status CudaGpu::Impl::launch(device::StreamId id, Launch l) {
  StreamState& st = streams[id];
  auto where_or = context_for(granules_for(st.config.sms));
  if (!where_or) {
    return fail_with(where_or.error().with_context(fmt::format("stream {}", id)));
  }
  ExecutionContext& where = **where_or;
  TESSERA_ASSIGN_OR_RETURN(const CUstream cu, custream_for(where, id));

  TESSERA_TRY(check(api.ctx_push_current(where.context), "cuCtxPushCurrent"));
  OwnedEvent end;  // on failure, the launch's events go with `l` and `end`
  auto enqueued = [&]() -> core::Status {
    if (l.yieldable) TESSERA_TRY(prepare_yield_buffers(st, l, cu));
    TESSERA_ASSIGN_OR_RETURN(l.start, create_event(where));
    TESSERA_ASSIGN_OR_RETURN(end, create_event(where));
    // A remap: the new context's CUstream waits for the stream's previous kernel, so one stream's
    // kernels never overlap or reorder, whichever contexts they run in.
    if (st.last_end.get() != nullptr && st.last_custream != cu) {
      TESSERA_TRY(check(api.stream_wait_event(cu, st.last_end.get(), 0), "cuStreamWaitEvent"));
    }
    TESSERA_TRY(check(api.event_record(l.start.get(), cu), "cuEventRecord"));
    if (auto p = payloads.find(l.kernel->name); p != payloads.end()) {
      const PayloadLaunch what{.stream = cu,
                               .context = where.context,
                               .partition_sms = where.sms,
                               .device_stream = id,
                               .submission_tag = l.submission->tag,
                               .blocks = l.blocks};
      if (auto r = p->second(what); !r) {
        return fail_with(r.error().with_context(
            fmt::format("stream {}: payload of kernel '{}'", id, l.kernel->name)));
      }
    } else {
      TESSERA_TRY(launch_emulation(st, l, cu));
    }
    TESSERA_TRY(check(api.event_record(end.get(), cu), "cuEventRecord"));
    return {};
  }();
  CUcontext popped = nullptr;
  const CUresult pop = api.ctx_pop_current(&popped);
  if (!enqueued) return enqueued;
  TESSERA_TRY(check(pop, "cuCtxPopCurrent"));
  l.context = st.config.context;
  l.where = &where;
  ++where.launches_in_flight;
  // The stream keeps the end event until its next launch takes it (to wait on and to time from).
  l.previous = std::move(st.last_end);
  l.end = end.ref();
  st.last_end = std::move(end);
  st.last_custream = cu;
  l.issued = executor.now();
  st.in_flight.push_back(std::move(l));
  return {};
}

core::Status CudaGpu::Impl::prepare_yield_buffers(StreamState& st, const Launch& l, CUstream cu) {
  // Nothing else of this stream is in flight (a checkpointed launch goes alone), so its counter
  // and progress buffer are free to reset.
  std::atomic_ref<std::uint32_t>(yielded_blocks(st.slot)).store(0, std::memory_order_release);
  if (l.relaunch) return {};  // the rest resumes from the progress its first launch left
  // In stream order, so the zeroing cannot overtake the stream's earlier kernels.
  return check(api.memcpy_htod_async(progress_of(st), zeros.get(),
                                     static_cast<std::size_t>(l.kernel->blocks) * 4, cu),
               "cuMemcpyHtoDAsync (checkpoint progress)");
}

core::Status CudaGpu::Impl::launch_emulation(StreamState& st, const Launch& l, CUstream cu) {
  const EmulationBuffers buffers{
      .scratch = scratch.get(),
      .scratch_bytes = static_cast<std::uint64_t>(options.scratch_bytes),
      .sink = sink.get(),
      .yield_flag = l.yieldable ? control->yield_flag(st.slot) : 0,
      .progress = l.yieldable ? progress_of(st) : 0,
      .yielded_blocks = l.yieldable ? yielded_device + 4 * static_cast<CUdeviceptr>(st.slot) : 0,
  };
  // A kernel with checkpoints that cannot yield here does the same work without stopping points.
  workload::Kernel plain;
  const workload::Kernel* k = l.kernel;
  if (!l.yieldable && k->checkpoints > 0) {
    plain = *k;
    plain.checkpoints = 0;
    k = &plain;
  }
  auto e = emulation_launch(*k, l.blocks, spec, buffers);
  if (!e) return fail_with(e.error());
  if (auto r = kernels->launch(TESSERA_KERNEL_EMULATE, e->grid, e->block, e->shared_bytes, cu,
                               e->params);
      !r) {
    return fail_with(r.error());
  }
  return {};
}

}  // namespace tessera::cuda
