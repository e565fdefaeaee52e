#pragma once
// Rodinia-like scientific kernels (Che et al., "Rodinia: A Benchmark Suite for Heterogeneous
// Computing", IISWC'09), the programs of the MIGM paper's general job mixes. Each is one
// iteration of the CUDA version's main loop as a KernelSequence, built from a problem size, with
// the device memory the CUDA version allocates for that size (what a compiler analysis of its
// cudaMalloc calls finds). rodinia.cpp derives each kernel's FLOPs and DRAM bytes per block from
// the algorithm and states the launch shape it copies.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::workload {

struct ScientificKernel {
  std::string name;  // "hotspot"
  std::string description;
  std::string size_meaning;  // "grid side (cells)"
  // One iteration for problem size `size`; sizes below min_size count as min_size.
  KernelSequence (*iteration)(std::int64_t size);
  // Device memory the CUDA version allocates for `size` (sizes below min_size as min_size).
  std::int64_t (*footprint_bytes)(std::int64_t size);
  std::int64_t default_size;
  std::int64_t min_size;
  // The largest size the builders take: beyond it the grid or the footprint leaves the range a
  // GPU of the catalog can hold (the loader rejects larger sizes).
  std::int64_t max_size;
};

// hotspot, srad, pathfinder, lud, bfs, kmeans, backprop, nw.
const std::vector<ScientificKernel>& rodinia_catalog();
// By name, case-insensitive; the error lists the known names.
core::Result<ScientificKernel> find_rodinia(std::string_view name);

}  // namespace tessera::workload
