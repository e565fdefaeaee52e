#pragma once
// How a workload::Kernel runs on a real GPU as tessera_emulate (kernel_params.h): the pure mapping
// from the simulator's kernel description (block shape, FLOPs and DRAM bytes per block, pipe,
// checkpoints) and a block range to one launch's configuration and parameters. No device calls
// except in allow_emulation_shared_memory, so the mapping is tested without a GPU.
//
// Rules (each one tested in tests/backends/cuda/emulation_test.cpp):
//  - threads per block = kernel.block.threads (1 .. the GPU's max_threads_per_block);
//  - grid = range.size(), block_offset = range.begin, virtual_blocks = kernel.blocks;
//  - FP32 pipe: fma_per_thread = flops_per_block / (2 x threads), rounded to the nearest (one FMA
//    is 2 FLOPs); tensor pipe: MMAs per full warp = flops_per_block / (2 x 16 x 16 x 16 x full
//    warps), rounded to the nearest (a partial last warp cannot issue warp-wide MMAs and does
//    none); a count above 2^32 - 1 is an error;
//  - bytes_per_block rounded to the nearest multiple of 32 (one 16-byte read and one 16-byte
//    write: the kernel moves exactly what the parameters say), at most 2^37 - 32;
//  - dynamic shared memory = the kernel's shared_memory_bytes, raised where needed so that no more
//    blocks are resident per SM than the simulator's occupancy for this kernel
//    (device::blocks_per_sm). Registers per thread are fixed when tessera_emulate is compiled (32,
//    so they never limit residency below the SM's thread limit) and cannot be set per launch;
//    shared memory can, so it is the lever (see emulation_shared_bytes);
//  - checkpoints = kernel.checkpoints; a kernel with checkpoints needs a progress buffer.

#include <cuda.h>

#include <cstdint>

#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/backends/cuda/kernel_module.hpp"
#include "tessera/backends/cuda/kernel_params.h"
#include "tessera/core/error.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::cuda {

// Device buffers one tessera_emulate launch uses (CUdeviceptr values; 0 = none).
struct EmulationBuffers {
  std::uint64_t scratch = 0;        // required when the kernel moves bytes
  std::uint64_t scratch_bytes = 0;  // a power of two, at least 16
  std::uint64_t sink = 0;           // required: one uint32
  std::uint64_t yield_flag = 0;     // 0: the launch never yields
  std::uint64_t progress = 0;  // uint32[kernel.blocks]; required when the kernel has checkpoints
  std::uint64_t yielded_blocks = 0;  // uint32 counter; 0: not counted
};

struct EmulationLaunch {
  TesseraEmulateParams params{};
  unsigned grid = 0;          // blocks of this launch (gridDim.x)
  unsigned block = 0;         // threads per block (blockDim.x)
  unsigned shared_bytes = 0;  // dynamic shared memory per block
  int blocks_per_sm = 0;      // the simulator's occupancy, which the launch does not exceed
};

// 1 KiB of shared memory per block is reserved by the system on compute capability 8.0 and later
// (CUDA C++ Programming Guide, "Features and Technical Specifications": 164/228 KB per SM against
// 163/227 KB per block on 8.0/9.0, and the occupancy calculator's "reserved shared memory").
inline constexpr std::int64_t kReservedSharedBytesPerBlock = 1024;

// The dynamic shared memory per block that keeps at most `target_blocks_per_sm` blocks of
// `threads` threads resident on one SM of `sm`, given the kernel's own `shared_bytes`: the kernel's
// own figure when the SM's block and thread limits (or that figure) already hold residency to the
// target, else the least size s with floor(sm.shared_memory_bytes / (s + 1 KiB)) <=
// target_blocks_per_sm. Assumes the driver gives the kernel the full shared-memory carveout
// (allow_emulation_shared_memory asks for it); a smaller carveout only lowers residency further.
std::int64_t emulation_shared_bytes(const hw::SmLimits& sm, int threads, std::int64_t shared_bytes,
                                    int target_blocks_per_sm);

// The launch of blocks `range` of `kernel` as tessera_emulate on a GPU described by `spec`.
// kInvalidArgument naming the kernel for what cannot launch: threads per block outside
// 1..max_threads_per_block, shared memory above the per-block maximum, a kernel that fits no SM,
// an empty range or one outside [0, blocks), a grid above 2^31 - 1 blocks, counts that overflow,
// a tensor-pipe kernel with work but no full warp, missing buffers.
core::Result<EmulationLaunch> emulation_launch(const workload::Kernel& kernel,
                                               device::BlockRange range, const hw::GpuSpec& spec,
                                               const EmulationBuffers& buffers);

// Lets tessera_emulate take the device's largest dynamic shared memory per block (launches above
// 48 KiB fail without CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; the maximum is
// CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN less the kernel's static shared memory)
// and asks for the full shared-memory carveout (PREFERRED_SHARED_MEMORY_CARVEOUT = 100), so that
// residency is what emulation_shared_bytes computed. Once per device, before the first launch.
core::Status allow_emulation_shared_memory(const DriverLibrary& driver, KernelModule& kernels,
                                           CUdevice device);

}  // namespace tessera::cuda
