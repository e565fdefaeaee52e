#pragma once
// Small generated servers for the node agent's and the NRT export's tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tessera/hw/topology/presets.hpp"

namespace tessera::k8s::testing {

inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// `sockets` sockets x `numa_per_socket` NUMA nodes, each with 8 cores (2 groups of 4, 2 threads
// per core: 16 logical CPUs), 64 GiB and `gpus_per_numa` GPUs.
inline hw::HostTopology small_server(const std::string& host, int gpus_per_numa = 2,
                                     int sockets = 2, int numa_per_socket = 1) {
  hw::ServerShape s;
  s.name = host;
  s.sockets = sockets;
  s.numa_per_socket = numa_per_socket;
  s.gpus_per_numa = gpus_per_numa;
  s.cores_per_numa = 8;
  s.cores_per_group = 4;
  s.threads_per_core = 2;
  s.memory_per_numa_bytes = 64 * kGiB;
  s.gpu_model = "NVIDIA A100-SXM4-80GB";
  s.gpu_memory_bytes = 80 * kGiB;
  auto t = hw::generate(s);
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.error().message());
  return std::move(*t);
}

}  // namespace tessera::k8s::testing
