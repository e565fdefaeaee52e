#pragma once
// A model whose kernels compute real outputs, for the determinism harness: the decode
// step of a small language model (embedding, LM-head GEMM, softmax, greedy argmax) and a
// GEMM-plus-reduction training-like step. Policies see a step as an ordinary KernelSequence (each
// kernel's grid, block shape, FLOPs and bytes describe the real kernel); a backend that runs real
// work calls run_kernel when a kernel of the sequence is launched, naming where it runs. Two
// implementations: on a GPU, cuBLASLt and tessera's kernels enqueued on the launch's stream
// (src/tessera/backends/cuda/decode_step.hpp); on the host, a reference that computes the same step
// in C++ and models how the result depends on the partition
// (src/tessera/experiment/determinism_reference.hpp), so the harness runs on the simulated GPU too.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::workload {

// Where one launch of a model kernel runs, as the backend reports it to the model.
struct ComputeSite {
  int partition_sms = 0;         // SMs of the partition (green context) the launch runs in
  void* stream = nullptr;        // the backend's native stream (CUstream); null on the host
  std::int64_t block_begin = 0;  // the launch's block range (the whole grid unless an atom)
  std::int64_t block_end = 0;
};

// What one step produced, read back after its last kernel completed.
struct StepOutput {
  std::vector<std::int32_t> tokens;  // one per sequence of the batch (decode); empty otherwise
  // A checksum of each kernel's output in launch order, so a mismatch can be traced to the
  // kernel where it first appears.
  std::vector<std::pair<std::string, std::uint64_t>> kernel_checksums;
};

class ComputeModel {
 public:
  virtual ~ComputeModel() = default;
  virtual std::string_view name() const = 0;
  // Puts the model back at step 0 with inputs and weights generated from `seed` (same seed, same
  // bits on every backend).
  virtual core::Status reset(std::uint64_t seed) = 0;
  // The next step's kernels. Kernel names are unique within the model (they bind the payloads)
  // and point at string literals, as workload::Kernel requires.
  virtual KernelSequencePtr step_sequence() const = 0;
  // Runs (or enqueues on site.stream) the kernel named `kernel` of the current step.
  virtual core::Status run_kernel(std::string_view kernel, const ComputeSite& site) = 0;
  // After every kernel of the step completed: reads the step's output back (may synchronise) and
  // advances to the next step (a decode step feeds its tokens to the next one).
  virtual core::Result<StepOutput> finish_step() = 0;
};

}  // namespace tessera::workload
