#include "tessera/device/gpu_device.hpp"

#include <utility>

#include "tessera/device/argument_checks.hpp"

namespace tessera::device {

core::Status GpuDevice::submit_span(StreamId stream, workload::KernelSequencePtr sequence,
                                    KernelSpan span, std::uint64_t tag, DoneCallback done) {
  if (auto st = check_span(stream, sequence, span); !st) return st;
  auto part = workload::span_of(*sequence, span.from, span.count);
  return submit(stream, std::move(part), tag,
                [count = span.count, done = std::move(done)](const SubmissionDone& d) {
                  if (!done) return;
                  SubmissionDone with = d;
                  with.kernels = count;
                  done(with);
                });
}

}  // namespace tessera::device
