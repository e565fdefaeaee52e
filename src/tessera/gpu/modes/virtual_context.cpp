#include "tessera/gpu/modes/virtual_context.hpp"

#include <utility>

namespace tessera::gpu {

using core::Code;
using core::Domain;

namespace {

bool has_kernel(const workload::KernelSequence& seq) {
  for (const auto& g : seq.groups) {
    if (g.repeat > 0 && !g.kernels.empty()) return true;
  }
  return false;
}

}  // namespace

core::Status VirtualContext::push(workload::KernelSequencePtr sequence, std::uint64_t tag,
                                  device::DoneCallback done, core::Nanos now) {
  if (!sequence || !has_kernel(*sequence)) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "virtual context: submission {} has no kernel to run; submit a sequence "
                       "with at least one kernel in a group repeated at least once",
                       tag);
  }
  submissions_.push_back(Submission{
      .sequence = std::move(sequence), .tag = tag, .done = std::move(done), .submitted = now});
  if (launching_ + 1 == submissions_.size()) {
    cursor_ = Cursor{};
    settle();
  }
  return {};
}

void VirtualContext::settle() {
  const auto& groups = submissions_[launching_].sequence->groups;
  while (cursor_.group < groups.size()) {
    const auto& g = groups[cursor_.group];
    if (cursor_.repeat < g.repeat && cursor_.kernel < g.kernels.size()) return;
    ++cursor_.group;
    cursor_.repeat = 0;
    cursor_.kernel = 0;
  }
}

bool VirtualContext::has_next() const {
  return launching_ < submissions_.size();
}

const workload::Kernel& VirtualContext::next() const {
  return submissions_[launching_].sequence->groups[cursor_.group].kernels[cursor_.kernel];
}

workload::Phase VirtualContext::next_phase() const {
  return submissions_[launching_].sequence->phase;
}

std::uint64_t VirtualContext::next_tag() const {
  return submissions_[launching_].tag;
}

std::int64_t VirtualContext::next_block() const {
  return cursor_.block;
}

core::Status VirtualContext::launch_blocks(std::int64_t end, core::Nanos now) {
  if (!has_next()) {
    return core::fail(Domain::kGpu, Code::kFailedPrecondition,
                      "virtual context: launch_blocks with no kernel left to launch; check "
                      "has_next() first");
  }
  const workload::Kernel& k = next();
  if (end <= cursor_.block || end > k.blocks) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "virtual context: cannot launch blocks [{}, {}) of kernel '{}' with {} "
                       "blocks; the end must be past the next block and inside the grid",
                       cursor_.block, end, k.name, k.blocks);
  }
  auto& sub = submissions_[launching_];
  if (sub.started < 0) sub.started = now;
  bool ends_submission = false;
  if (end < k.blocks) {
    cursor_.block = end;
  } else {
    cursor_.block = 0;
    const auto& g = sub.sequence->groups[cursor_.group];
    if (++cursor_.kernel == g.kernels.size()) {
      cursor_.kernel = 0;
      ++cursor_.repeat;
    }
    settle();
    if (cursor_.group == sub.sequence->groups.size()) {
      ends_submission = true;
      ++launching_;
      cursor_ = Cursor{};
      if (has_next()) settle();
    }
  }
  in_flight_.push_back(Piece{.ends_submission = ends_submission});
  return {};
}

core::Status VirtualContext::piece_finished(core::Nanos now) {
  if (in_flight_.empty()) {
    return core::fail(Domain::kGpu, Code::kFailedPrecondition,
                      "virtual context: a piece finished but none was in flight; report each "
                      "launched piece exactly once");
  }
  const Piece piece = in_flight_.front();
  in_flight_.pop_front();
  if (!piece.ends_submission) return {};
  Submission finished = std::move(submissions_.front());
  submissions_.pop_front();
  --launching_;
  if (finished.done) {
    finished.done(device::SubmissionDone{.stream = stream_,
                                         .tag = finished.tag,
                                         .submitted = finished.submitted,
                                         .started = finished.started,
                                         .finished = now});
  }
  return {};
}

}  // namespace tessera::gpu
