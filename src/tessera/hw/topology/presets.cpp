// Generated servers. Sources of each preset's numbers:
//   [FLEXTOPO] arXiv 2411.11560, Fig. 2: the 4090 and A100 servers, 2 sockets, 8 GPUs each.
//   [DGXA100]  NVIDIA DGX A100 datasheet: 2x AMD EPYC 7742 (64 cores each), 1 TB system memory,
//              8x A100 SXM4 on NVSwitch.
//   [DGXH100]  NVIDIA DGX H100 datasheet: 2x Intel Xeon Platinum 8480C (56 cores each), 2 TB
//              system memory, 8x H100 SXM5 on NVSwitch.
//   [NDV5]     ../shared/data/topology/nccl_azure/ndv5-topo.xml (Azure ND H100 v5): 2 NUMA nodes
//              with 4 GPUs each.
//   [PC2]      Paderborn PC2 "NVIDIA A100 40GB with NVLINK" page: on a 2x 64-core Rome HGX node in
//              NPS4, the GPUs sit on NUMA nodes 3, 1, 7, 5 (16 cores each), i.e. every second node.
// GPU models and memory come from the GPU catalog (gpu_catalog.cpp, with its own sources).
#include "tessera/hw/topology/presets.hpp"

#include <algorithm>
#include <array>

#include "tessera/core/try.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::hw {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

core::Error shape_error(const ServerShape& s, std::string what) {
  return core::Error(core::Domain::kTopology, core::Code::kInvalidArgument,
                     fmt::format("server shape '{}': {}", s.name, what));
}

core::Status check(const ServerShape& s) {
  const std::array<std::pair<const char*, int>, 6> at_least_one = {{
      {"sockets", s.sockets},
      {"numa_per_socket", s.numa_per_socket},
      {"cores_per_numa", s.cores_per_numa},
      {"cores_per_group", s.cores_per_group},
      {"threads_per_core", s.threads_per_core},
      {"gpus_per_switch + 1", s.gpus_per_switch + 1},
  }};
  for (const auto& [field, value] : at_least_one) {
    if (value < 1) {
      return std::unexpected(
          shape_error(s, fmt::format("{} is {}; it must be at least 1", field, value)));
    }
  }
  if (s.gpus_per_numa < 0 || s.memory_per_numa_bytes < 0 || s.gpu_memory_bytes < 0) {
    return std::unexpected(
        shape_error(s, "gpus_per_numa, memory_per_numa_bytes and gpu_memory_bytes must be >= 0"));
  }
  const int numas = s.sockets * s.numa_per_socket;
  if (!s.gpus_by_numa.empty() && static_cast<int>(s.gpus_by_numa.size()) != numas) {
    return std::unexpected(
        shape_error(s, fmt::format("gpus_by_numa has {} entries for {} NUMA nodes",
                                   s.gpus_by_numa.size(), numas)));
  }
  if (std::any_of(s.gpus_by_numa.begin(), s.gpus_by_numa.end(), [](int n) { return n < 0; })) {
    return std::unexpected(shape_error(s, "gpus_by_numa has a negative count"));
  }
  // Keeps CPU numbers and the graph far from int overflow.
  if (static_cast<std::int64_t>(numas) * s.cores_per_numa * s.threads_per_core > (1 << 20)) {
    return std::unexpected(shape_error(s, "more than 2^20 hardware threads"));
  }
  return {};
}

core::Result<HostTopology> build(const ServerShape& s, std::string source) {
  TESSERA_TRY(check(s));
  HostTopologyBuilder b(s.name, std::move(source));
  const int numas = s.sockets * s.numa_per_socket;
  const int total_cores = numas * s.cores_per_numa;
  int gpu = 0;
  for (int socket = 0; socket < s.sockets; ++socket) {
    b.add_socket(socket);
    for (int n = 0; n < s.numa_per_socket; ++n) {
      const int numa = b.add_numa(socket, socket * s.numa_per_socket + n, s.memory_per_numa_bytes);
      // Linux numbers the first thread of every core first, socket by socket, then the
      // siblings: core c's threads are c, c + total_cores, ...
      std::vector<int> cpus;
      int in_group = 0;
      for (int c = 0; c < s.cores_per_numa; ++c) {
        const int core = numa * s.cores_per_numa + c;
        for (int t = 0; t < s.threads_per_core; ++t) cpus.push_back(core + t * total_cores);
        if (++in_group == s.cores_per_group || c + 1 == s.cores_per_numa) {
          std::sort(cpus.begin(), cpus.end());
          b.add_core_group(numa, std::move(cpus), in_group);
          cpus.clear();
          in_group = 0;
        }
      }
      const int here =
          s.gpus_by_numa.empty() ? s.gpus_per_numa : s.gpus_by_numa[static_cast<std::size_t>(numa)];
      for (int k = 0; k < here; ++k, ++gpu) {
        TopoNode g;
        g.os_index = gpu;
        g.model = s.gpu_model;
        g.memory_bytes = s.gpu_memory_bytes;
        b.add_gpu(numa, std::move(g));
        // GPUs of this node in runs of gpus_per_switch share a switch.
        if (!s.nvlink_all && s.gpus_per_switch > 1) {
          for (int peer = gpu - k % s.gpus_per_switch; peer < gpu; ++peer) {
            b.add_gpu_link(peer, gpu, "pcie-switch");
          }
        }
      }
    }
  }
  if (s.nvlink_all) {
    for (int x = 0; x < gpu; ++x) {
      for (int y = x + 1; y < gpu; ++y) b.add_gpu_link(x, y, "nvswitch");
    }
  }
  return std::move(b).build();
}

ServerShape with_gpu(ServerShape s, std::string_view catalog_name) {
  // The catalog always has these names (gpu_catalog.cpp); a miss leaves model and memory empty,
  // which generate() accepts.
  if (auto spec = find_gpu(catalog_name)) {
    s.gpu_model = spec->name;
    s.gpu_memory_bytes = spec->memory_bytes;
  }
  return s;
}

}  // namespace

core::Result<HostTopology> generate(const ServerShape& shape) {
  return build(shape, "generated:" + shape.name);
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = {"rtx4090-2s", "rtx4090-2s2n", "a100-2s",
                                                 "a100-2s4n", "h100-2s"};
  return names;
}

core::Result<ServerShape> preset_shape(std::string_view name) {
  ServerShape s;
  s.name = std::string(name);
  s.sockets = 2;  // [FLEXTOPO] both servers; [DGXA100]; [DGXH100]
  if (name == "rtx4090-2s" || name == "rtx4090-2s2n") {
    s = with_gpu(std::move(s), "RTX-4090-24GB");
    // ASSUMPTION: the paper names no CPU; 2x 32-core parts with SMT (a common 8-GPU PCIe server
    // build, e.g. Xeon Gold 6338) and 512 GiB per socket.
    s.threads_per_core = 2;
    if (name == "rtx4090-2s") {
      s.numa_per_socket = 1;  // [FLEXTOPO] Fig. 2; the issue: 4 GPUs per NUMA node
      s.gpus_per_numa = 4;
      s.cores_per_numa = 32;
      s.memory_per_numa_bytes = 512 * kGiB;
    } else {
      s.numa_per_socket = 2;  // the same server with sub-NUMA clustering (SNC2) on
      s.gpus_per_numa = 2;
      s.cores_per_numa = 16;
      s.memory_per_numa_bytes = 256 * kGiB;
    }
    // ASSUMPTION: the GPUs hang off root ports without shared switches: the paper draws none
    // (Fig. 2), and GeForce boards get no peer-to-peer through one anyway (gpu_catalog.cpp).
    s.gpus_per_switch = 0;
    return s;
  }
  if (name == "a100-2s" || name == "a100-2s4n") {
    s = with_gpu(std::move(s), "A100-SXM4-80GB");
    s.threads_per_core = 2;  // EPYC 7742: SMT2 [DGXA100]
    s.nvlink_all = true;     // [DGXA100] NVSwitch: every pair one hop apart
    if (name == "a100-2s") {
      s.numa_per_socket = 1;  // NPS1 [FLEXTOPO] "A100-style 2-socket" (the review: 2 NUMA)
      s.gpus_per_numa = 4;
      s.cores_per_numa = 64;                 // [DGXA100] 64 cores per socket
      s.memory_per_numa_bytes = 512 * kGiB;  // [DGXA100] 1 TB over 2 sockets
    } else {
      s.numa_per_socket = 4;                 // NPS4
      s.cores_per_numa = 16;                 // [DGXA100] 64 cores / 4; [PC2] 16 cores per node
      s.memory_per_numa_bytes = 128 * kGiB;  // [DGXA100] 1 TB over 8 nodes
      // [PC2] GPUs on every second NPS4 node; ASSUMPTION: two per such node on the 8-GPU board.
      s.gpus_by_numa = {0, 2, 0, 2, 0, 2, 0, 2};
    }
    return s;
  }
  if (name == "h100-2s") {
    s = with_gpu(std::move(s), "H100-SXM5-80GB");
    s.numa_per_socket = 1;                  // [NDV5] 2 NUMA nodes
    s.gpus_per_numa = 4;                    // [NDV5] 4 GPUs each
    s.cores_per_numa = 56;                  // [DGXH100] 56 cores per socket
    s.threads_per_core = 2;                 // [DGXH100] Xeon 8480C: Hyper-Threading
    s.memory_per_numa_bytes = 1024 * kGiB;  // [DGXH100] 2 TB over 2 sockets
    s.nvlink_all = true;                    // [DGXH100] NVSwitch
    return s;
  }
  std::string known;
  for (const std::string& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  return core::failf(core::Domain::kTopology, core::Code::kNotFound,
                     "unknown topology preset '{}': use one of {}", name, known);
}

core::Result<HostTopology> preset(std::string_view name, std::string hostname) {
  TESSERA_ASSIGN_OR_RETURN(ServerShape shape, preset_shape(name));
  shape.name = std::move(hostname);
  return build(shape, fmt::format("preset:{}", name));
}

}  // namespace tessera::hw
