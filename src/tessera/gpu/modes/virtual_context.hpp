#pragma once
// A tenant's virtual context (CoGPU's GPU coroutine): the ordered stream of kernels it submitted,
// whose launch configuration never changes. Schedulers (cogpu, lithos) hand its kernels to the
// device one piece at a time (a whole kernel, or a block-range atom of one), so where a piece
// runs can change between pieces while what each kernel computes cannot.
//
// A piece may also be a run: several whole kernels of one submission handed to the device as one
// span (device::KernelSpan), which the device may end early at a kernel boundary
// (GpuDevice::end_after_head); the kernels it did not run are handed out again.
//
// Pieces finish in the order they were launched (the schedulers keep one device stream per
// virtual context). The context only keeps order and times; it never calls the device.

#include <cstdint>
#include <deque>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::gpu {

class VirtualContext {
 public:
  // `stream` is what the done callbacks report as SubmissionDone::stream.
  explicit VirtualContext(device::StreamId stream = 0) : stream_(stream) {}

  // Appends a submission; `done` runs (with submitted/started/finished times) when its last kernel
  // has finished. Fails, leaving the context unchanged, if `sequence` is null or has no kernel.
  core::Status push(workload::KernelSequencePtr sequence, std::uint64_t tag,
                    device::DoneCallback done, core::Nanos now);

  bool has_next() const;                 // a kernel not yet (fully) launched remains
  const workload::Kernel& next() const;  // that kernel (a reference into the submitted sequence)
  workload::Phase next_phase() const;    // phase of the submission it belongs to
  std::uint64_t next_tag() const;        // tag of the submission it belongs to
  std::int64_t next_block() const;       // blocks of next() already handed out as atoms (0 if none)
  // next()'s position in its submission's sequence (KernelSpan::from), and the kernels of that
  // submission from next() to its end.
  workload::SequenceCursor next_position() const;
  std::int64_t kernels_left() const;
  // The sequence next() belongs to (KernelSpan's sequence).
  const workload::KernelSequencePtr& next_sequence() const;
  // Kernels from next() on, at most `limit`, before the first that can be preempted
  // (workload::Kernel::checkpoints > 0): a scheduler that asks for a yield knows which kernel
  // is running only when that kernel goes alone.
  std::int64_t kernels_before_checkpointed(std::int64_t limit) const;

  // Hands out blocks [next_block(), end) of next() (end == next().blocks launches it whole / its
  // last atom); the cursor moves past the kernel when its last block is handed out. Records the
  // submission's start time. Needs has_next() and next_block() < end <= next().blocks.
  core::Status launch_blocks(std::int64_t end, core::Nanos now);

  // Hands out `count` whole kernels from next() on as one run, short of the submission's last
  // kernel: a run never ends its submission, so what its end says about the submission stays with
  // the last kernel's own piece. Needs has_next(), next_block() == 0 and
  // 0 < count < kernels_left().
  core::Status launch_run(std::int64_t count, core::Nanos now);

  // One launched piece (a whole kernel, an atom or a run) finished. When every piece of a
  // submission's last kernel has finished, the submission's done callback runs (after the
  // context's state is updated, so it may push more work). Fails if no piece is in flight.
  core::Status piece_finished(core::Nanos now);
  // The oldest piece, a run, finished after `ran` of its kernels: the ones it did not run are
  // next() again. A run cut short must be the only piece in flight.
  core::Status run_finished(std::int64_t ran, core::Nanos now);

  int pieces_in_flight() const { return static_cast<int>(in_flight_.size()); }
  bool idle() const { return submissions_.empty(); }  // nothing queued and nothing in flight
  // Submissions whose done callback has not run yet (queued, running, or launched but unfinished).
  std::size_t queued_submissions() const { return submissions_.size(); }

 private:
  struct Submission {
    workload::KernelSequencePtr sequence;
    std::uint64_t tag;
    device::DoneCallback done;
    core::Nanos submitted;
    core::Nanos started = -1;
  };
  // Position of the next kernel to launch inside submissions_[launching_].
  struct Cursor {
    std::size_t group = 0;
    int repeat = 0;
    std::size_t kernel = 0;
    std::int64_t block = 0;
  };
  struct Piece {
    bool ends_submission;      // launched the last blocks of its submission's last kernel
    std::int64_t kernels = 0;  // a run's kernels (0: not a run)
    Cursor from{};             // where a run began
  };

  // Moves the cursor onto a real kernel (skipping empty groups) or past the submission.
  void settle();
  // Moves the cursor `n` whole kernels on, within the submission (never onto its end).
  void skip_kernels(std::int64_t n);

  device::StreamId stream_;
  std::deque<Submission> submissions_;  // unfinished, in submission order
  std::size_t launching_ = 0;           // index of the first submission not fully launched
  Cursor cursor_;
  std::deque<Piece> in_flight_;  // launched, not finished, in launch order
};

}  // namespace tessera::gpu
