#pragma once
// Facts about one GPU model, as the simulator and the policies need them. Every number in the
// catalog (gpu_catalog.cpp) names its source beside it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::hw {

struct SmLimits {
  int max_threads;  // resident threads per SM
  int max_blocks;   // resident thread blocks per SM
  int registers;    // 32-bit registers per SM
  int max_registers_per_thread;
  std::int64_t shared_memory_bytes;  // usable shared memory per SM
  std::int64_t max_shared_memory_per_block_bytes;
  int max_threads_per_block;
};

struct GpuSpec {
  std::string name;          // catalog key, e.g. "H100-SXM5-80GB"
  std::string architecture;  // "Ampere", "Hopper"
  int compute_capability_major;
  int compute_capability_minor;

  int sms;   // enabled SMs
  int tpcs;  // enabled TPCs (2 SMs each on A100/H100)
  int gpcs;  // GPCs with enabled SMs
  int sms_per_tpc;
  SmLimits sm;

  std::int64_t memory_bytes;
  double memory_bandwidth_bytes_per_s;  // peak DRAM bandwidth

  // Peak dense throughput at the boost clock, whole device.
  double peak_fp16_tensor_flops;  // dense FP16/BF16 tensor-core FLOP/s
  double peak_fp32_flops;         // non-tensor FP32 FLOP/s
  double peak_tf32_tensor_flops;  // dense TF32 tensor-core FLOP/s
  double peak_fp8_tensor_flops;   // dense FP8 tensor-core FLOP/s; 0 where there are no FP8 MMAs

  // NVLink bandwidth per direction between two GPUs of one server (0: no NVLink).
  double nvlink_bytes_per_s;

  double min_clock_mhz;    // lowest settable graphics clock
  double base_clock_mhz;   // nvidia-smi's "Default Applications Clocks" (the board's base clock)
  double boost_clock_mhz;  // max graphics clock; peak FLOP/s above are quoted at this clock

  double tdp_watts;   // board power limit
  double idle_watts;  // board power with nothing running (clocks parked, memory idle)

  // Green-context SM partitions come in multiples of this many SMs, with at least
  // green_ctx_min_sms (CUDA driver API docs; see shared/notes/cuda-api-facts.md).
  int green_ctx_sm_granularity;
  int green_ctx_min_sms;

  bool mig_capable;
  int mig_max_instances;

  // Derived helpers: per-SM, per-cycle peak work, so a changed clock scales compute linearly.
  double fp16_tensor_flops_per_sm_per_cycle() const;
  double fp32_flops_per_sm_per_cycle() const;
};

// All catalog entries, in a stable order.
const std::vector<GpuSpec>& gpu_catalog();
// Case-insensitive lookup by catalog name or short alias ("h100", "a100-40gb", "a100-80gb",
// "h200", "rtx4090"); the error lists the known names.
core::Result<GpuSpec> find_gpu(std::string_view name);
// The catalog name of the GPU a driver reports by this device name ("NVIDIA H100 80GB HBM3" is
// "H100-SXM5-80GB"): the one table both the CUDA and the NVML backend read. nullopt for a board
// the catalog does not hold.
std::optional<std::string_view> gpu_for_device_name(std::string_view device_name);

}  // namespace tessera::hw
