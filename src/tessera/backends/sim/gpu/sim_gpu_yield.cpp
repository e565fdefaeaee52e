// Cooperative yield (CoGPU's preemption of persistent kernels through a resident control kernel):
// a kernel with checkpoints, asked to stop, runs on to its next checkpoint, keeps its SMs while it
// saves its state, then gives them back; the rest of its work is relaunched at the head of its
// stream with the stream's configuration at that time.

#include <algorithm>
#include <cmath>

#include "tessera/backends/sim/gpu/sim_gpu.hpp"

namespace tessera::sim {

void SimGpu::start_yield(std::uint32_t s) {
  Stream& st = streams_[s];
  Launch& l = st.cur;
  if (l.phase == Phase::kRunning) sync(l);
  // Progress through the kernel's whole work, across re-plans and earlier yields: this launch
  // runs `total` blocks with `rest` of each block's work, and has `left` x plan blocks to go.
  const int c = l.kernel->checkpoints;
  const int passed = st.checkpoints_passed;
  const double total = info_at(st, st.cursor).blocks;
  const double rest = static_cast<double>(c + 1 - passed) / static_cast<double>(c + 1);
  const double done = 1 - rest * (l.left * l.plan.blocks / total);
  // Checkpoint j sits at done = j / (c + 1). A kernel exactly at one (up to rounding) stops
  // there, except at the one it was relaunched from: every launch gets past at least one.
  constexpr double kAtCheckpoint = 1e-9;
  const int j = std::max(passed + 1, static_cast<int>(std::ceil(done * (c + 1) - kAtCheckpoint)));
  if (j > c) return;  // past its last checkpoint: it runs to its end
  // In this launch's blocks: (c + 1 - j) / (c + 1) of the work, over `rest` per block.
  l.yield_blocks = total * static_cast<double>(c + 1 - j) / static_cast<double>(c + 1 - passed);
  l.yield_checkpoint = j;
  if (l.phase == Phase::kRunning) flag_reschedule(s);
}

void SimGpu::on_checkpoint(std::uint32_t s) {
  begin_op();
  Stream& st = streams_[s];
  Launch& l = st.cur;
  l.timer = 0;
  sync(l);
  l.left = l.yield_blocks / l.plan.blocks;  // exactly at the checkpoint, rounding aside
  st.checkpoints_passed = l.yield_checkpoint;
  l.yield_blocks = -1;
  // It stops computing and moving data, and keeps its SMs while it saves its state.
  leave_running(s);
  cancel_tail(l);
  if (l.shared) pipes_dirty_ = true;
  l.phase = Phase::kSaving;
  if (options_.yield_save_cost > 0) {
    l.timer =
        engine_.schedule_at(engine_.now() + options_.yield_save_cost, [this, s] { on_saved(s); });
  } else {
    on_saved(s);
  }
  end_op();
}

void SimGpu::on_saved(std::uint32_t s) {
  begin_op();
  Stream& st = streams_[s];
  Launch& l = st.cur;
  const core::Nanos now = engine_.now();
  l.timer = 0;
  integrals_.sm_ns += l.held_sms * l.sm_weight * static_cast<double>(now - l.since);
  l.since = now;
  const SmSet held = l.held;
  l.held = SmSet{};
  l.held_sms = 0;
  release(s, held);
  dispatch_needed_ = true;
  push_kernel_event(s, l.kernel, l.start, now, l.sms_at_start, /*yielded=*/true);
  // The rest stays at the head of the stream and launches with its configuration now.
  make_ready(s, /*relaunch=*/true);
  end_op();
}

}  // namespace tessera::sim
