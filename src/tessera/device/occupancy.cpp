#include "tessera/device/occupancy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "tessera/device/pipe_peak.hpp"

namespace tessera::device {

using core::Code;
using core::Domain;

int blocks_per_sm(const hw::SmLimits& sm, const workload::BlockResources& block) {
  if (block.threads <= 0) return 0;
  // This runs for every distinct kernel submitted: divide in 32 bits when the operands fit (a
  // 64-bit divide costs several times more on common x86 cores).
  const auto div = [](std::int64_t a, std::int64_t b) -> std::int64_t {
    constexpr std::int64_t kMax = std::numeric_limits<std::uint32_t>::max();
    if (a >= 0 && a <= kMax && b <= kMax) {
      return static_cast<std::uint32_t>(a) / static_cast<std::uint32_t>(b);
    }
    return a / b;
  };
  std::int64_t fit = sm.max_blocks;
  fit = std::min(fit, div(sm.max_threads, block.threads));
  const std::int64_t regs_per_block =
      static_cast<std::int64_t>(block.registers_per_thread) * block.threads;
  if (regs_per_block > 0) fit = std::min(fit, div(sm.registers, regs_per_block));
  if (block.shared_memory_bytes > 0) {
    fit = std::min(fit, div(sm.shared_memory_bytes, block.shared_memory_bytes));
  }
  return static_cast<int>(std::max<std::int64_t>(fit, 0));
}

namespace {

bool finite_non_negative(double x) {
  return std::isfinite(x) && x >= 0;
}

}  // namespace

core::Status validate_kernel(const hw::GpuSpec& spec, const workload::Kernel& k) {
  const auto bad = [&](std::string what) {
    return core::failf(Domain::kDevice, Code::kInvalidArgument, "kernel '{}' {}", k.name, what);
  };
  const hw::SmLimits& sm = spec.sm;
  if (k.blocks < 1) {
    return bad(fmt::format("has {} blocks; a grid needs at least one block", k.blocks));
  }
  const int threads = k.block.threads;
  if (threads < 1) {
    return bad(fmt::format("has {} threads per block; a block needs at least one thread", threads));
  }
  if (threads > sm.max_threads_per_block) {
    return bad(fmt::format("uses {} threads per block, above {}'s limit of {}; use smaller blocks",
                           threads, spec.name, sm.max_threads_per_block));
  }
  if (threads > sm.max_threads) {
    return bad(
        fmt::format("uses {} threads per block, more than one SM of {} holds ({}); use "
                    "smaller blocks",
                    threads, spec.name, sm.max_threads));
  }
  const int regs = k.block.registers_per_thread;
  if (regs < 0) {
    return bad(fmt::format("declares {} registers per thread; the count cannot be negative", regs));
  }
  if (regs > sm.max_registers_per_thread) {
    return bad(
        fmt::format("uses {} registers per thread, above {}'s limit of {}; lower the "
                    "register count (e.g. __launch_bounds__ or -maxrregcount)",
                    regs, spec.name, sm.max_registers_per_thread));
  }
  const std::int64_t regs_per_block = static_cast<std::int64_t>(regs) * threads;
  if (regs_per_block > sm.registers) {
    return bad(
        fmt::format("needs {} registers per block ({} threads x {}), more than one SM of "
                    "{} has ({}); use fewer threads or registers",
                    regs_per_block, threads, regs, spec.name, sm.registers));
  }
  const std::int64_t smem = k.block.shared_memory_bytes;
  if (smem < 0) {
    return bad(
        fmt::format("declares {} bytes of shared memory; the size cannot be negative", smem));
  }
  if (smem > sm.max_shared_memory_per_block_bytes) {
    return bad(
        fmt::format("uses {} bytes of shared memory per block, above {}'s limit of {} per "
                    "block; use smaller tiles",
                    smem, spec.name, sm.max_shared_memory_per_block_bytes));
  }
  if (smem > sm.shared_memory_bytes) {
    return bad(
        fmt::format("uses {} bytes of shared memory per block, more than one SM of {} has "
                    "({}); use smaller tiles",
                    smem, spec.name, sm.shared_memory_bytes));
  }
  if (blocks_per_sm(sm, k.block) < 1) {
    return bad(fmt::format(
        "does not fit on one SM of {} (limits: {} blocks, {} threads, {} "
        "registers, {} bytes of shared memory per SM)",
        spec.name, sm.max_blocks, sm.max_threads, sm.registers, sm.shared_memory_bytes));
  }
  if (!finite_non_negative(k.flops_per_block)) {
    return bad(fmt::format("has {} FLOPs per block; the cost must be a finite number >= 0",
                           k.flops_per_block));
  }
  if (!finite_non_negative(k.bytes_per_block)) {
    return bad(fmt::format("moves {} bytes per block; the traffic must be a finite number >= 0",
                           k.bytes_per_block));
  }
  if (!finite_non_negative(k.host_link_bytes_per_block)) {
    return bad(fmt::format(
        "moves {} bytes per block over the host link; the traffic must be a finite number >= 0",
        k.host_link_bytes_per_block));
  }
  if (k.host_link_bytes_per_block > 0 &&
      !(std::isfinite(k.host_link_bytes_per_s) && k.host_link_bytes_per_s > 0)) {
    return bad(fmt::format(
        "moves {} bytes per block over the host link at {} bytes/s; give the link a finite "
        "rate > 0",
        k.host_link_bytes_per_block, k.host_link_bytes_per_s));
  }
  if (k.flops_per_block > 0 && !(peak_flops(spec, k.pipe) > 0)) {
    const bool fp8 = k.pipe == workload::ComputePipe::kTensorFp8;
    return bad(
        fmt::format("does {} work, but {} lists no peak {} throughput{}; fix the GPU spec "
                    "or the kernel's pipe",
                    workload::to_string(k.pipe), spec.name, workload::to_string(k.pipe),
                    fp8 ? " (FP8 tensor cores came with Ada and Hopper)" : ""));
  }
  return {};
}

core::Status validate_sequence(const hw::GpuSpec& spec, const workload::KernelSequence& sequence) {
  bool any = false;
  for (std::size_t g = 0; g < sequence.groups.size(); ++g) {
    const auto& group = sequence.groups[g];
    if (group.repeat < 1) {
      return core::failf(Domain::kDevice, Code::kInvalidArgument,
                         "kernel group {} repeats {} times; a group runs at least once (drop the "
                         "group instead)",
                         g, group.repeat);
    }
    for (std::size_t i = 0; i < group.kernels.size(); ++i) {
      if (auto st = validate_kernel(spec, group.kernels[i]); !st) {
        // Name the position only on failure: this runs for every submission.
        return std::unexpected(st.error().with_context(fmt::format("group {}, kernel {}", g, i)));
      }
      any = true;
    }
  }
  if (!any) {
    return core::fail(Domain::kDevice, Code::kInvalidArgument,
                      "the submitted kernel sequence has no kernels; submit at least one");
  }
  return {};
}

core::Result<const workload::Kernel*> validate_range_submission(
    std::uint32_t stream, const workload::KernelSequencePtr& sequence, std::int64_t begin,
    std::int64_t end) {
  if (!sequence) {
    return core::failf(core::Domain::kDevice, core::Code::kInvalidArgument,
                       "stream {}: submit_range needs a kernel sequence, got a null pointer",
                       stream);
  }
  const auto& groups = sequence->groups;
  if (groups.size() != 1 || groups[0].kernels.size() != 1 || groups[0].repeat != 1) {
    return core::failf(core::Domain::kDevice, core::Code::kInvalidArgument,
                       "stream {}: submit_range launches part of one kernel, but the sequence has "
                       "{} group(s) with {} kernel launch(es) in all; submit exactly one kernel "
                       "(one group, one kernel, repeat 1: workload::single_kernel)",
                       stream, groups.size(), sequence->kernel_count());
  }
  const workload::Kernel& k = groups[0].kernels[0];
  if (!k.block_independent) {
    return core::failf(core::Domain::kDevice, core::Code::kInvalidArgument,
                       "stream {}: kernel '{}' synchronises across blocks (block_independent is "
                       "false), so it must run whole; submit it with submit(), not as block "
                       "ranges",
                       stream, k.name);
  }
  if (end - begin <= 0 || begin < 0 || end > k.blocks) {
    return core::failf(core::Domain::kDevice, core::Code::kInvalidArgument,
                       "stream {}: block range [{}, {}) of kernel '{}' is {}; give a non-empty "
                       "range inside its grid [0, {})",
                       stream, begin, end, k.name, end - begin <= 0 ? "empty" : "outside the grid",
                       k.blocks);
  }
  return &k;
}

}  // namespace tessera::device
