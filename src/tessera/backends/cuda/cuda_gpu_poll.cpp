// CudaGpu's completions: poll() finds launches whose end event has completed, times them on the
// executor's clock, handles yields, and delivers kernel events and done callbacks in order of
// (end time, stream); then it issues what the issue windows allow.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <utility>

#include "tessera/backends/cuda/internal/cuda_gpu_impl.hpp"
#include "tessera/core/try.hpp"

namespace tessera::cuda {

core::Result<core::Nanos> CudaGpu::Impl::event_time(const ExecutionContext& where,
                                                    const EventRef& from, core::Nanos from_time,
                                                    const EventRef& to) {
  // cuEventElapsedTime's milliseconds are a float (about 0.5 us resolution, 24 bits of mantissa):
  // an event is timed from the one before it on its stream when both are in one context (a short
  // distance), else from its context's reference event.
  const bool chained = from.event != nullptr && from_time >= 0 && from.owner == to.owner;
  float ms = 0;
  TESSERA_TRY(
      check(api.event_elapsed_time(&ms, chained ? from.event : where.reference.get(), to.event),
            "cuEventElapsedTime"));
  const core::Nanos base = chained ? from_time : where.reference_time;
  return base + static_cast<core::Nanos>(std::llround(static_cast<double>(ms) * 1e6));
}

core::Status CudaGpu::Impl::collect(device::StreamId id, std::vector<Completion>& out) {
  StreamState& st = streams[id];
  core::Nanos chain = st.last_end_time;
  while (!st.in_flight.empty()) {
    Launch& l = st.in_flight.front();
    const CUresult r = api.event_query(l.end.event);
    if (r == CUDA_ERROR_NOT_READY) break;
    TESSERA_TRY(check(r, "cuEventQuery"));
    Completion c;
    c.stream = id;
    TESSERA_ASSIGN_OR_RETURN(c.start, event_time(*l.where, l.previous.ref(), chain, l.start.ref()));
    if (chain >= 0) c.start = std::max(c.start, chain);  // never before the previous kernel ended
    TESSERA_ASSIGN_OR_RETURN(c.end, event_time(*l.where, l.start.ref(), c.start, l.end));
    c.end = std::max(c.end, c.start);
    // A kernel started after the host issued it and, found complete now, ended by now. On a GPU
    // the event clock and the executor's agree to within the float resolution; a driver whose
    // event clock runs elsewhere (the test fake's virtual one) must not place work outside that
    // window, where it would precede its own request in every latency a tenant computes.
    const core::Nanos now = executor.now();
    c.start = std::clamp(c.start, l.issued, now);
    c.end = std::clamp(c.end, c.start, now);
    chain = c.end;
    if (l.yieldable) {
      const std::uint32_t stopped =
          std::atomic_ref<std::uint32_t>(yielded_blocks(st.slot)).load(std::memory_order_acquire);
      c.yielded = stopped > 0;
      if (st.flag_raised) {
        // Lowered before anything of this stream runs with checkpoints again.
        auto seq = control->clear(st.slot);
        if (!seq) return fail_with(seq.error().with_context(fmt::format("stream {}", id)));
        st.clear_seq = *seq;
        st.flag_raised = false;
      }
      if (c.yielded) {
        // The rest stays at the head of the stream, to run under its configuration then.
        Launch rest;
        rest.submission = l.submission;
        rest.kernel = l.kernel;
        rest.cursor = l.cursor;
        rest.blocks = l.blocks;
        rest.last_of_submission = l.last_of_submission;
        rest.yieldable = true;
        rest.relaunch = true;
        st.rest = std::move(rest);
      }
    }
    c.launch = std::move(l);
    c.order = completion_order++;
    st.in_flight.pop_front();
    out.push_back(std::move(c));
  }
  return {};
}

void CudaGpu::Impl::deliver(Completion& c) {
  StreamState& st = streams[c.stream];
  Launch& l = c.launch;
  --l.where->launches_in_flight;
  st.last_end_time = c.end;
  Submission& sub = *l.submission;
  if (sub.started < 0) sub.started = c.start;
  if (!c.yielded) {  // a yielded launch is part of a kernel that counts once, when it ends
    ++kernels_completed;
    ++sub.kernels;
  }
  sm_ns += static_cast<double>(l.where->sms) * static_cast<double>(c.end - c.start);
  l.start.reset();
  l.previous.reset();
  const device::KernelEvent event{.stream = c.stream,
                                  .context = l.context,
                                  .bandwidth_domain = device::kWholeDevice,
                                  .kernel = l.kernel,
                                  .submission_tag = sub.tag,
                                  .start = c.start,
                                  .end = c.end,
                                  .sms = l.where->sms,
                                  .blocks = l.blocks,
                                  .yielded = c.yielded};
  // Observers may add observers: index, never iterate.
  for (std::size_t o = 0; o < observers.size(); ++o) observers[o]->on_kernel_complete(event);
  if (!c.yielded && l.last_of_submission && sub.done) {
    const device::SubmissionDone done{.stream = c.stream,
                                      .tag = sub.tag,
                                      .submitted = sub.submitted,
                                      .started = sub.started,
                                      .finished = c.end,
                                      .kernels = sub.kernels};
    const device::DoneCallback callback = std::move(sub.done);
    callback(done);
  }
}

core::Status CudaGpu::Impl::poll() {
  TESSERA_TRY(usable());
  if (delivering) return {};  // called from a callback: the outer poll finishes the job
  // A stream waiting for its yield flag to be lowered waits on the control kernel: querying its
  // stream is harmless on a GPU (it stays busy) and a progress point for the fake driver.
  const bool waiting_for_control =
      std::ranges::any_of(streams, [](const StreamState& st) { return st.clear_seq.has_value(); });
  if (waiting_for_control && control_stream != nullptr) {
    const CUresult r = api.stream_query(control_stream);
    if (r != CUDA_ERROR_NOT_READY) TESSERA_TRY(check(r, "cuStreamQuery (control kernel)"));
  }
  std::vector<Completion> ready;
  for (device::StreamId id = 0; id < streams.size(); ++id) TESSERA_TRY(collect(id, ready));
  std::ranges::sort(ready, [](const Completion& a, const Completion& b) {
    if (a.end != b.end) return a.end < b.end;
    if (a.stream != b.stream) return a.stream < b.stream;
    return a.order < b.order;
  });
  delivering = true;
  for (auto& c : ready) deliver(c);
  delivering = false;
  issue_all();
  return usable();
}

}  // namespace tessera::cuda
