#include "tessera/gpu/modes/virtual_context.hpp"

#include <algorithm>
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

workload::SequenceCursor VirtualContext::next_position() const {
  return workload::SequenceCursor{.group = static_cast<std::uint32_t>(cursor_.group),
                                  .rep = cursor_.repeat,
                                  .index = static_cast<std::uint32_t>(cursor_.kernel)};
}

std::int64_t VirtualContext::kernels_left() const {
  if (!has_next()) return 0;
  return workload::kernels_from(*submissions_[launching_].sequence, next_position());
}

const workload::KernelSequencePtr& VirtualContext::next_sequence() const {
  return submissions_[launching_].sequence;
}

std::int64_t VirtualContext::kernels_before_checkpointed(std::int64_t limit) const {
  const auto& groups = submissions_[launching_].sequence->groups;
  const auto first_checkpointed = [](const std::vector<workload::Kernel>& kernels,
                                     std::size_t from) {
    for (std::size_t k = from; k < kernels.size(); ++k) {
      if (kernels[k].checkpoints > 0) return k;
    }
    return kernels.size();
  };
  std::int64_t n = 0;
  for (std::size_t g = cursor_.group; g < groups.size() && n < limit; ++g) {
    const auto& kernels = groups[g].kernels;
    const std::size_t from = g == cursor_.group ? cursor_.kernel : 0;
    const int repeats = groups[g].repeat - (g == cursor_.group ? cursor_.repeat : 0);
    if (const auto k = first_checkpointed(kernels, from); k < kernels.size()) {
      return std::min(n + static_cast<std::int64_t>(k - from), limit);
    }
    n += static_cast<std::int64_t>(kernels.size() - from);
    if (repeats <= 1) continue;
    // Every repetition is the same kernels: one pass over the group decides the rest of them.
    if (const auto k = first_checkpointed(kernels, 0); k < kernels.size()) {
      return std::min(n + static_cast<std::int64_t>(k), limit);
    }
    n += static_cast<std::int64_t>(kernels.size()) * (repeats - 1);
  }
  return std::min(n, limit);
}

void VirtualContext::skip_kernels(std::int64_t n) {
  const auto& groups = submissions_[launching_].sequence->groups;
  while (n > 0) {
    const auto& g = groups[cursor_.group];
    const auto size = static_cast<std::int64_t>(g.kernels.size());
    const std::int64_t in_repeat = size - static_cast<std::int64_t>(cursor_.kernel);
    if (n < in_repeat) {
      cursor_.kernel += static_cast<std::size_t>(n);
      return;
    }
    n -= in_repeat;
    cursor_.kernel = 0;
    ++cursor_.repeat;
    const auto repeats = std::min<std::int64_t>(n / size, g.repeat - cursor_.repeat);
    cursor_.repeat += static_cast<int>(repeats);
    n -= repeats * size;
    settle();
  }
}

core::Status VirtualContext::launch_run(std::int64_t count, core::Nanos now) {
  if (!has_next() || cursor_.block != 0) {
    return core::fail(Domain::kGpu, Code::kFailedPrecondition,
                      "virtual context: launch_run needs a kernel not yet handed out in part; "
                      "check has_next() and next_block() first");
  }
  const std::int64_t left = kernels_left();
  if (count <= 0 || count >= left) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "virtual context: a run of {} kernels, but its submission has {} from "
                       "here; a run holds 1 to {} (never the submission's last kernel)",
                       count, left, left - 1);
  }
  auto& sub = submissions_[launching_];
  if (sub.started < 0) sub.started = now;
  in_flight_.push_back(Piece{.ends_submission = false, .kernels = count, .from = cursor_});
  skip_kernels(count);
  return {};
}

core::Status VirtualContext::run_finished(std::int64_t ran, core::Nanos now) {
  if (in_flight_.empty() || in_flight_.front().kernels == 0) {
    return core::fail(Domain::kGpu, Code::kFailedPrecondition,
                      "virtual context: a run finished but the oldest piece in flight is not "
                      "one; report each launched piece exactly once");
  }
  const Piece run = in_flight_.front();
  if (ran < 0 || ran > run.kernels || (ran < run.kernels && in_flight_.size() > 1)) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "virtual context: a run of {} kernels ran {} with {} pieces in flight; a "
                       "run ends early only when nothing was launched after it",
                       run.kernels, ran, in_flight_.size());
  }
  if (ran < run.kernels) {
    cursor_ = run.from;
    skip_kernels(ran);
  }
  return piece_finished(now);
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
