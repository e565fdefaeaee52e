#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>

#include "tessera/hw/gpu_spec.hpp"

// The catalog. Each number carries a tag naming its source:
//   [A100-WP]  NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1 / Table 3.
//   [A100-DS]  NVIDIA A100 Tensor Core GPU datasheet, "A100 40GB SXM" / "A100 80GB SXM" columns.
//   [H100-WP]  NVIDIA H100 Tensor Core GPU Architecture whitepaper, Table 3, "H100 SXM5" column.
//   [H100-DS]  NVIDIA H100 Tensor Core GPU datasheet, "H100 SXM" column.
//   [H200-DS]  NVIDIA H200 Tensor Core GPU datasheet, "H200 SXM" column.
//   [ADA-WP]   NVIDIA Ada GPU Architecture whitepaper v2.02, Appendix A, Table 2, "GeForce RTX
//              4090" column (dense figures; the second of each pair is with sparsity).
//   [4090-PP]  NVIDIA GeForce RTX 4090 product page, "Specs": base/boost clock, memory, power,
//              PCI Express Gen 4 bus, no NVLink.
//   [CUDA-PG]  CUDA C++ Programming Guide, "Technical Specifications per Compute Capability".
//   [GREEN]    CUDA Driver API, Green Contexts (cuda.h of CUDA 13.0, lines 24711-24715, quoted in
//              shared/notes/cuda-api-facts.md section 1): SM partitions on CC 8.x are at least 4
//              SMs in multiples of 2; on CC 9.0+ at least 8 SMs in multiples of 8.
//   [MIG]      NVIDIA Multi-Instance GPU User Guide (R580), "Supported GPUs", Table 1.
//   [SMI ...]  nvidia-smi output posted in a public GitHub thread, named in the tag. NVIDIA
//              publishes no idle power and no base clock for these boards; these readings are
//              the best public sources found.
//   ASSUMPTION marks a value no source states; the comment says how it was chosen.
//
// Memory sizes are the datasheet's GB read as GiB: HBM stacks come in binary sizes, and the
// totals nvidia-smi reports (81920 MiB for A100 80GB, 81559 MiB for H100, 143771 MiB for H200)
// are within 1% of that reading and far from the decimal one.

namespace tessera::hw {

namespace {

constexpr std::int64_t kKiB = 1024;
constexpr std::int64_t kGiB = 1024 * 1024 * 1024;

// Per-SM limits of compute capability 8.0 (A100), all [CUDA-PG].
constexpr SmLimits kCc80Limits{
    .max_threads = 2048,
    .max_blocks = 32,
    .registers = 64 * 1024,
    .max_registers_per_thread = 255,
    .shared_memory_bytes = 164 * kKiB,
    .max_shared_memory_per_block_bytes = 163 * kKiB,
    .max_threads_per_block = 1024,
};

// Per-SM limits of compute capability 9.0 (H100, H200), all [CUDA-PG].
constexpr SmLimits kCc90Limits{
    .max_threads = 2048,
    .max_blocks = 32,
    .registers = 64 * 1024,
    .max_registers_per_thread = 255,
    .shared_memory_bytes = 228 * kKiB,
    .max_shared_memory_per_block_bytes = 227 * kKiB,
    .max_threads_per_block = 1024,
};

GpuSpec a100(std::string name) {
  GpuSpec g{};
  g.name = std::move(name);
  g.architecture = "Ampere";
  g.compute_capability_major = 8;  // [CUDA-PG] A100 is CC 8.0
  g.compute_capability_minor = 0;
  g.sms = 108;        // [A100-WP]
  g.tpcs = 54;        // [A100-WP]
  g.gpcs = 7;         // [A100-WP]
  g.sms_per_tpc = 2;  // [A100-WP]
  g.sm = kCc80Limits;
  g.peak_fp16_tensor_flops = 312e12;  // [A100-DS] 312 TFLOPS dense (624 is with sparsity)
  g.peak_fp32_flops = 19.5e12;        // [A100-DS]
  g.peak_tf32_tensor_flops = 156e12;  // [A100-DS] TF32 Tensor Core 156 TFLOPS dense (312 sparse)
  g.peak_fp8_tensor_flops = 0;        // [A100-WP] Ampere's tensor cores have no FP8 mode
  // [A100-WP] third-generation NVLink: 12 links x 25 GB/s per direction = 300 GB/s (the 600 GB/s
  // figure counts both directions).
  g.nvlink_bytes_per_s = 300e9;
  g.min_clock_mhz = 210;  // ASSUMPTION: lowest entry of the 15 MHz-step list that
                          // `nvidia-smi -q -d SUPPORTED_CLOCKS` prints for GA100 boards, as
                          // widely reposted; no NVIDIA document states it.
  g.boost_clock_mhz =
      1410;           // [A100-WP] GPU boost clock; also "Max Clocks" in [SMI nvidia-docker#1648]
  g.tdp_watts = 400;  // [A100-DS] max TDP, SXM
  g.green_ctx_sm_granularity = 2;  // [GREEN] CC 8.x
  g.green_ctx_min_sms = 4;         // [GREEN] CC 8.x
  g.mig_capable = true;            // [MIG]
  g.mig_max_instances = 7;         // [MIG]
  return g;
}

GpuSpec a100_40gb() {
  GpuSpec g = a100("A100-SXM4-40GB");
  g.memory_bytes = 40 * kGiB;               // [A100-DS] 40GB HBM2
  g.memory_bandwidth_bytes_per_s = 1555e9;  // [A100-DS] 1,555 GB/s
  // [SMI NVIDIA/nvidia-docker#1648]: 400 W A100 SXM4 with 1215 MHz (40GB HBM2) memory clock.
  g.base_clock_mhz = 1095;
  // [SMI facebookresearch/vissl#422]: eight idle A100-SXM4-40GB (3 MiB used, 0 %) read
  // 50-56 W at P0; 52 W is their typical reading.
  g.idle_watts = 52;
  return g;
}

GpuSpec a100_80gb() {
  GpuSpec g = a100("A100-SXM4-80GB");
  g.memory_bytes = 80 * kGiB;               // [A100-DS] 80GB HBM2e
  g.memory_bandwidth_bytes_per_s = 2039e9;  // [A100-DS] 2,039 GB/s
  // [SMI NVIDIA/DCGM#152]: A100-SXM4-80GB, 400 W, 1593 MHz HBM2e memory clock.
  g.base_clock_mhz = 1155;
  // [SMI allenai/PeerRead#40]: idle A100-SXM4-80GB (0 MiB used, 0 %) read 59-62 W at P0.
  g.idle_watts = 60;
  return g;
}

GpuSpec gh100_sxm(std::string name) {
  GpuSpec g{};
  g.name = std::move(name);
  g.architecture = "Hopper";
  g.compute_capability_major = 9;  // [CUDA-PG] H100/H200 are CC 9.0
  g.compute_capability_minor = 0;
  g.sms = 132;        // [H100-WP] H100 SXM5
  g.tpcs = 66;        // [H100-WP] H100 SXM5
  g.gpcs = 8;         // [H100-WP] H100 SXM5
  g.sms_per_tpc = 2;  // [H100-WP]
  g.sm = kCc90Limits;
  // [H100-WP] 989.4 dense TFLOPS (the datasheet's 1,979 is with sparsity). The whitepaper
  // quotes tensor peaks at 1830 MHz (132 SMs x 4096 FLOP/clk x 1830 MHz = 989.4 TFLOPS) and
  // non-tensor peaks at 1980 MHz (132 x 256 x 1980 MHz = 66.9 TFLOPS).
  // ASSUMPTION: we keep the quoted peak at the max clock, so the derived per-cycle tensor rate
  // (about 3786 FLOP/clk/SM) is an effective rate: tensor-heavy work on these boards is
  // power-limited below 1980 MHz, and the simulator reproduces the quoted peak, not more.
  g.peak_fp16_tensor_flops = 989.4e12;
  g.peak_fp32_flops = 66.9e12;  // [H100-WP] 66.9 TFLOPS (the datasheets round to 67)
  // [H100-WP] dense TF32 494.7 and FP8 1978.9 TFLOPS (the datasheet's 989 and 3,958 are with
  // sparsity), at the same clock as the FP16 figure.
  g.peak_tf32_tensor_flops = 494.7e12;
  g.peak_fp8_tensor_flops = 1978.9e12;
  // [H100-WP] fourth-generation NVLink: 18 links x 25 GB/s per direction = 450 GB/s (900 GB/s
  // both directions, as the H100 and H200 datasheets state it).
  g.nvlink_bytes_per_s = 450e9;
  // [SMI NVIDIA/DCGM#120]: an idle GH100 SXM5 board (H800, the export variant) parked at
  // 345 MHz. ASSUMPTION: the idle clock is also the lowest settable one.
  g.min_clock_mhz = 345;
  // [SMI NVIDIA/DCGM#120]: "Default Applications Clocks" and "Max Clocks" are both 1980 MHz.
  g.base_clock_mhz = 1980;
  g.boost_clock_mhz =
      1980;  // [H100-WP] clock of the non-tensor peaks; "Max Clocks" in [SMI NVIDIA/DCGM#120]
  g.green_ctx_sm_granularity = 8;  // [GREEN] CC 9.0
  g.green_ctx_min_sms = 8;         // [GREEN] CC 9.0
  g.mig_capable = true;            // [MIG]
  g.mig_max_instances = 7;         // [MIG]
  return g;
}

GpuSpec h100_sxm5_80gb() {
  GpuSpec g = gh100_sxm("H100-SXM5-80GB");
  g.memory_bytes = 80 * kGiB;                // [H100-DS] 80GB HBM3
  g.memory_bandwidth_bytes_per_s = 3.35e12;  // [H100-DS] 3.35 TB/s
  g.tdp_watts = 700;                         // [H100-DS] up to 700 W (configurable)
  // ASSUMPTION: no public idle reading of an H100 SXM5 with nothing resident was found (posted
  // readings with models loaded show 140-145 W, [SMI wilicc/gpu-burn#114]); 70 W is the typical
  // P0 idle seen on nvidia-smi screenshots, between the A100 80GB (60 W) and H200 (115 W).
  g.idle_watts = 70;
  return g;
}

GpuSpec h200_sxm_141gb() {
  // [H200-DS] lists the same compute peaks as H100 SXM; this project's device notes
  // (.library/device/KINDS.md) record PyTorch reporting 132 SMs on an H200. ASSUMPTION: the
  // TPC/GPC layout and clocks are those of the H100 SXM5 (same GH100 die and board class).
  GpuSpec g = gh100_sxm("H200-SXM-141GB");
  g.memory_bytes = 141 * kGiB;              // [H200-DS] 141GB HBM3e
  g.memory_bandwidth_bytes_per_s = 4.8e12;  // [H200-DS] 4.8 TB/s
  g.tdp_watts = 700;                        // [H200-DS] up to 700 W (configurable)
  // [SMI NVIDIA/cuda-samples#311]: idle H200 (0 MiB used, 0 %) read 115 W at P0.
  g.idle_watts = 115;
  return g;
}

// Per-SM limits of compute capability 8.9 (Ada), all [CUDA-PG]: 48 resident warps, 24 blocks,
// 100 KB of shared memory per SM and 99 KB per block.
constexpr SmLimits kCc89Limits{
    .max_threads = 1536,
    .max_blocks = 24,
    .registers = 64 * 1024,
    .max_registers_per_thread = 255,
    .shared_memory_bytes = 100 * kKiB,
    .max_shared_memory_per_block_bytes = 99 * kKiB,
    .max_threads_per_block = 1024,
};

// The GeForce board of FlexTopo's 4090 servers (arXiv 2411.11560, Fig. 2): PCIe 4.0 x16 to its
// NUMA node [4090-PP], no NVLink [4090-PP], and GeForce drivers do not enable peer-to-peer
// between boards, so GPU-to-GPU traffic is staged through host memory (workload/
// tensor_parallel.hpp times it on the host link).
GpuSpec rtx4090() {
  GpuSpec g{};
  g.name = "RTX-4090-24GB";
  g.architecture = "Ada";
  g.compute_capability_major = 8;  // [CUDA-PG] RTX 4090 is CC 8.9
  g.compute_capability_minor = 9;
  g.sms = 128;        // [ADA-WP]
  g.tpcs = 64;        // [ADA-WP]
  g.gpcs = 11;        // [ADA-WP]
  g.sms_per_tpc = 2;  // [ADA-WP]
  g.sm = kCc89Limits;
  g.memory_bytes = 24 * kGiB;               // [ADA-WP] 24 GB GDDR6X (nvidia-smi: 24564 MiB)
  g.memory_bandwidth_bytes_per_s = 1008e9;  // [ADA-WP] 1008 GB/sec
  // [ADA-WP] "Peak FP16 Tensor TFLOPS with FP32 Accumulate 165.2/330.4": GeForce Ada runs
  // FP32-accumulate tensor math at half its FP16-accumulate rate (330.3), and inference engines
  // accumulate FP16 GEMMs in FP32, so the simulator's tensor peak is the FP32-accumulate one.
  g.peak_fp16_tensor_flops = 165.2e12;
  g.peak_fp32_flops = 82.6e12;  // [ADA-WP] Peak FP32 TFLOPS (non-Tensor) 82.6
  // [ADA-WP] "Peak TF32 Tensor TFLOPS" 82.6 dense and "Peak FP8 Tensor TFLOPS with FP32
  // Accumulate" 330.3 dense (the figures with FP16 accumulate or sparsity are higher).
  g.peak_tf32_tensor_flops = 82.6e12;
  g.peak_fp8_tensor_flops = 330.3e12;
  g.nvlink_bytes_per_s = 0;  // [4090-PP] no NVLink
  // ASSUMPTION: as for the A100, the lowest entry of the 15 MHz-step list nvidia-smi prints for
  // GeForce boards; no NVIDIA document states it.
  g.min_clock_mhz = 210;
  g.base_clock_mhz = 2235;   // [4090-PP] base clock 2.23 GHz
  g.boost_clock_mhz = 2520;  // [ADA-WP] GPU Boost Clock 2520 MHz
  g.tdp_watts = 450;         // [ADA-WP] Total Graphics Power 450 W
  // ASSUMPTION: public nvidia-smi pastes show idle RTX 4090 boards (0 MiB used, 0 %) at 62-64 W
  // in P0 and 15-20 W once parked in P8; the other entries use the P0 reading, so 60 W here.
  g.idle_watts = 60;
  g.green_ctx_sm_granularity = 2;  // [GREEN] CC 8.x
  g.green_ctx_min_sms = 4;         // [GREEN] CC 8.x
  g.mig_capable = false;           // [MIG] GeForce boards are not among the supported GPUs
  g.mig_max_instances = 0;
  return g;
}

// Each catalog GPU's short name, and the words the device name a driver reports for it contains,
// in lower case ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA GeForce
// RTX 4090": cuDeviceGetName and nvmlDeviceGetName give the same string). No entry's words are a
// subset of another's, so at most one matches.
struct Alias {
  std::string_view alias;
  std::string_view name;
  std::array<std::string_view, 2> device_words;
};

constexpr std::array<Alias, 5> kAliases{{
    {"a100-40gb", "A100-SXM4-40GB", {"a100", "40gb"}},
    {"a100-80gb", "A100-SXM4-80GB", {"a100", "80gb"}},
    {"h100", "H100-SXM5-80GB", {"h100", ""}},
    {"h200", "H200-SXM-141GB", {"h200", ""}},
    {"rtx4090", "RTX-4090-24GB", {"rtx", "4090"}},
}};

bool iequals(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

double GpuSpec::fp16_tensor_flops_per_sm_per_cycle() const {
  return peak_fp16_tensor_flops / (static_cast<double>(sms) * boost_clock_mhz * 1e6);
}

double GpuSpec::fp32_flops_per_sm_per_cycle() const {
  return peak_fp32_flops / (static_cast<double>(sms) * boost_clock_mhz * 1e6);
}

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> catalog{a100_40gb(), a100_80gb(), h100_sxm5_80gb(),
                                            h200_sxm_141gb(), rtx4090()};
  return catalog;
}

std::optional<std::string_view> gpu_for_device_name(std::string_view device_name) {
  std::string name(device_name);
  std::ranges::transform(name, name.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const Alias& a : kAliases) {
    if (std::ranges::all_of(a.device_words, [&](std::string_view w) {
          return w.empty() || name.find(w) != std::string::npos;
        })) {
      return a.name;
    }
  }
  return std::nullopt;
}

core::Result<GpuSpec> find_gpu(std::string_view name) {
  std::string_view wanted = name;
  for (const Alias& a : kAliases) {
    if (iequals(name, a.alias)) wanted = a.name;
  }
  for (const GpuSpec& g : gpu_catalog()) {
    if (iequals(wanted, g.name)) return g;
  }
  std::string known;
  for (const GpuSpec& g : gpu_catalog()) {
    known += known.empty() ? g.name : ", " + g.name;
  }
  std::string aliases;
  for (const Alias& a : kAliases) {
    aliases += fmt::format("{}{}", aliases.empty() ? "" : ", ", a.alias);
  }
  return core::failf(core::Domain::kHardware, core::Code::kNotFound,
                     "unknown GPU '{}': use one of {} (or the short names {})", name, known,
                     aliases);
}

}  // namespace tessera::hw
