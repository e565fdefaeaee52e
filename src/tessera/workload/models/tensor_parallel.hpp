#pragma once
// A decoder sharded over `degree` GPUs, Megatron-style as vLLM runs it (Shoeybi et al. 2019,
// "Megatron-LM", Sec. 3; vLLM's ColumnParallelLinear / RowParallelLinear): the fused QKV and
// gate/up projections are column-parallel, the output and down projections row-parallel, so each
// GPU holds heads / degree query heads, kv_heads / degree key/value heads and intermediate /
// degree of the MLP, and the layer's two row-parallel outputs are summed over the GPUs by an
// all-reduce of tokens x hidden activations. The embedding is vocab-parallel (one more
// all-reduce) and the LM head column-parallel over the vocabulary, its logits gathered to the
// first GPU, which samples (vllm/model_executor/layers/vocab_parallel_embedding.py,
// logits_processor.py).
//
// The GPUs are symmetric, so one GPU's kernels time a step: the builders return the first GPU's
// sequence. Collectives are kernels of KernelClass::kCommunication whose bytes cross the host
// link (Kernel::host_link_bytes_per_block): on GPUs without NVLink and without peer-to-peer
// (GeForce RTX 4090), NCCL stages every transfer through host memory, so an all-reduce is bound
// by PCIe and by where the two GPUs sit in the host's topology. A ring all-reduce of S bytes over
// n GPUs sends and receives 2(n-1)/n x S bytes per GPU (Patarasuk and Yuan 2009, "Bandwidth
// optimal all-reduce algorithms"); its link time is that over the link rate, times the
// topology penalty of the placement.

#include <cstdint>
#include <span>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/workload/kernels/kernel.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::workload {

// PCIe 4.0 x16, one direction: 16 GT/s x 16 lanes / 8 bits = 32 GB/s raw (PCI-SIG, PCI Express
// Base Specification 4.0: 16.0 GT/s per lane). The RTX 4090 is a PCIe 4.0 x16 board (hw catalog).
inline constexpr double kPcie4x16RawBytesPerS = 32e9;
// PCIe 5.0 x16, one direction: 32 GT/s x 16 lanes / 8 bits = 64 GB/s raw (PCI Express Base
// Specification 5.0: 32.0 GT/s per lane); the H100 PCIe and H100 NVL boards are PCIe 5.0 x16.
inline constexpr double kPcie5x16RawBytesPerS = 64e9;
// ASSUMPTION: the share of the raw rate a GPU-to-GPU transfer staged through pinned host memory
// reaches: 128b/130b encoding leaves 98.5%, packet headers and flow control take roughly another
// 10-15%, and the copy into and out of the host buffer costs the rest. Pinned host-device copies
// on PCIe 4.0 x16 are commonly seen at 24-26 GB/s (CUDA's bandwidthTest sample); 0.75 (24 GB/s)
// is taken, not measured here.
inline constexpr double kHostStagedLinkEfficiency = 0.75;

// Communication penalty of a placement, relative to both GPUs under one NUMA node: FlexTopo
// (arXiv 2411.11560, Sec. 2.2) measured 1.2x for GPUs under different NUMA nodes of one socket
// and 3.2x across sockets on its 4090 servers (2x across sockets on its A100 servers). Applied to
// the link time only.
struct TopologyPenalty {
  double same_numa = 1.0;
  double same_socket = 1.2;
  double cross_socket = 3.2;
};

struct TensorParallel {
  int degree = 1;  // GPUs the model is sharded over; 1: one GPU, no collectives
  // Rate of the host link per direction as the collectives see it, before the penalty.
  double link_bytes_per_s = kPcie4x16RawBytesPerS * kHostStagedLinkEfficiency;
  double penalty = 1.0;  // topology penalty of the placement (>= 1: slower than same-NUMA)
};

// Rejects a degree below 1, head or MLP sizes the degree does not divide, and (for degree > 1) a
// link rate or penalty that is not a finite positive number, naming the field and the value.
core::Status validate(const ModelConfig& m, const TensorParallel& tp);

// What one GPU holds: heads, kv_heads and intermediate divided by `degree` (the rest unchanged).
// Expects validate() to pass.
ModelConfig shard(const ModelConfig& m, int degree);

// One collective as the first GPU runs it, over a tensor of `elements` values of `elem_bytes`
// each: the tensor being summed (all-reduce) or the first GPU's whole gathered result (gather).
// Expects tp.degree > 1.
Kernel all_reduce(std::string_view name, std::int64_t elements, int elem_bytes,
                  const TensorParallel& tp);
Kernel gather_to_first(std::string_view name, std::int64_t elements, int elem_bytes,
                       const TensorParallel& tp);

// The first GPU's kernels for one prefill batch or one decode step (see transformer.hpp for the
// unsharded builders and their arguments). Degree 1 gives exactly prefill_step / decode_step.
// Expect validate() to pass.
KernelSequence tp_prefill_step(const ModelConfig& m, const TensorParallel& tp,
                               std::span<const int> prompt_lengths);
KernelSequence tp_decode_step(const ModelConfig& m, const TensorParallel& tp,
                              std::span<const int> context_lengths);

}  // namespace tessera::workload
