#pragma once
// A tenant's virtual context (CoGPU's GPU coroutine): the ordered stream of kernels it submitted,
// whose launch configuration never changes. Schedulers (cogpu, lithos) hand its kernels to the
// device one piece at a time (a whole kernel, or a block-range atom of one), so where a piece
// runs can change between pieces while what each kernel computes cannot.
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

  // Hands out blocks [next_block(), end) of next() (end == next().blocks launches it whole / its
  // last atom); the cursor moves past the kernel when its last block is handed out. Records the
  // submission's start time. Needs has_next() and next_block() < end <= next().blocks.
  core::Status launch_blocks(std::int64_t end, core::Nanos now);

  // One launched piece (a whole kernel or an atom) finished. When every piece of a submission's
  // last kernel has finished, the submission's done callback runs (after the context's state is
  // updated, so it may push more work). Fails if no piece is in flight.
  core::Status piece_finished(core::Nanos now);

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
    bool ends_submission;  // launched the last blocks of its submission's last kernel
  };

  // Moves the cursor onto a real kernel (skipping empty groups) or past the submission.
  void settle();

  device::StreamId stream_;
  std::deque<Submission> submissions_;  // unfinished, in submission order
  std::size_t launching_ = 0;           // index of the first submission not fully launched
  Cursor cursor_;
  std::deque<Piece> in_flight_;  // launched, not finished, in launch order
};

}  // namespace tessera::gpu
