#include "tessera/device/argument_checks.hpp"

#include "tessera/device/occupancy.hpp"

namespace tessera::device {

using core::Code;
using core::Domain;

core::Status check_stream_id(StreamId stream, std::size_t streams_created) {
  if (stream >= streams_created) {
    return core::failf(Domain::kDevice, Code::kNotFound,
                       "stream {} does not exist on this device ({} streams created); use an id "
                       "returned by create_stream",
                       stream, streams_created);
  }
  return {};
}

core::Status check_sm_mask(const hw::GpuSpec& spec, const SmMask& sms) {
  if (const int i = sms.first_from(spec.sms); i < kMaxSms) {
    return core::failf(Domain::kDevice, Code::kInvalidArgument,
                       "the stream's SM set names SM {}, but {} has {} SMs (0 to {}); build the "
                       "set from SMs that exist",
                       i, spec.name, spec.sms, spec.sms - 1);
  }
  return {};
}

core::Status check_span(StreamId stream, const workload::KernelSequencePtr& sequence,
                        const KernelSpan& span) {
  if (auto st = check_submitted_sequence(stream, sequence); !st) return st;
  const auto& groups = sequence->groups;
  const auto& c = span.from;
  if (c.group >= groups.size() || c.rep < 0 || c.rep >= groups[c.group].repeat ||
      c.index >= groups[c.group].kernels.size()) {
    return core::failf(Domain::kDevice, Code::kInvalidArgument,
                       "stream {}: a span starts at group {}, repetition {}, kernel {}, which is "
                       "not a kernel of the sequence ({} groups); start it at a kernel",
                       stream, c.group, c.rep, c.index, groups.size());
  }
  const std::int64_t left = workload::kernels_from(*sequence, c);
  if (span.count <= 0 || span.count > left) {
    return core::failf(Domain::kDevice, Code::kInvalidArgument,
                       "stream {}: a span of {} kernels from group {}, repetition {}, kernel {}; "
                       "the sequence has {} kernels from there, so ask for 1 to {}",
                       stream, span.count, c.group, c.rep, c.index, left, left);
  }
  return {};
}

core::Status check_submitted_sequence(StreamId stream,
                                      const workload::KernelSequencePtr& sequence) {
  if (!sequence) {
    return core::failf(Domain::kDevice, Code::kInvalidArgument,
                       "stream {}: submit needs a kernel sequence, got a null pointer", stream);
  }
  return {};
}

core::Status validate_stream_sequence(const hw::GpuSpec& spec, StreamId stream,
                                      const workload::KernelSequence& sequence) {
  if (auto v = validate_sequence(spec, sequence); !v) {
    return std::unexpected(v.error().with_context(fmt::format("stream {}", stream)));
  }
  return {};
}

core::Status check_clock_mhz(const hw::GpuSpec& spec, double mhz) {
  if (!(mhz >= spec.min_clock_mhz && mhz <= spec.boost_clock_mhz)) {
    return core::failf(Domain::kDevice, Code::kInvalidArgument,
                       "clock {} MHz is outside {}'s range of {} to {} MHz; pick a clock in it",
                       mhz, spec.name, spec.min_clock_mhz, spec.boost_clock_mhz);
  }
  return {};
}

}  // namespace tessera::device
