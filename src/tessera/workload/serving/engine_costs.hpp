#pragma once
// The CPU time a serving engine spends on each iteration besides the GPU's: the GPU waits for it,
// as in a synchronous engine loop (vLLM's V0 engine, the one behind the public step profiles).
// Before the GPU step, the engine schedules the iteration, builds its inputs (block tables,
// positions, the prompt tokens of a prefill) and, with tensor parallelism, hands them to each
// worker; after it, it samples, detokenizes and returns each sequence's token. Each sequence's
// token is out when the step after its GPU work ends.
//
// default_engine_costs() is fitted (`tessera validate --fit`) on the splitwise-sim A100 step
// profiles (Llama-2-70B, TP 2-8, on DGX-A100) and judged on its H100 rows (docs/validate.md). For comparison, vLLM's v0.6.0 release notes
// (https://blog.vllm.ai/2024/09/05/perf-update.html) measured, for Llama-3-8B on one H100 under
// v0.5.3, 38% of the time in GPU execution, 29% in scheduling and 33% in the API server; the
// v0.6.0 engine overlaps most of this with the GPU (a scenario models it with smaller costs).

#include <string>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::workload {

struct EngineCosts {
  // Before the GPU step, every iteration: scheduling, building inputs, launching.
  core::Nanos step = 0;
  // More before a prefill iteration (its prompts' token and position tensors, new block tables).
  core::Nanos prefill = 0;
  // More per tensor-parallel worker beyond the first: the step's inputs broadcast to each.
  core::Nanos per_worker = 0;
  // After the GPU step, per sequence in the iteration: sampling, detokenizing, its output.
  core::Nanos per_sequence = 0;

  // CPU time before the GPU step of an iteration.
  core::Nanos before_step(Phase phase, int tensor_parallel) const {
    return step + (phase == Phase::kPrefill ? prefill : 0) +
           per_worker * static_cast<core::Nanos>(tensor_parallel > 1 ? tensor_parallel - 1 : 0);
  }
  // CPU time after it, for `sequences` sequences.
  core::Nanos after_step(int sequences) const {
    return per_sequence * static_cast<core::Nanos>(sequences);
  }

  bool operator==(const EngineCosts&) const = default;
};

// The fitted engine (see above).
EngineCosts default_engine_costs();
// No engine time: only the GPU's.
inline constexpr EngineCosts kNoEngineCosts{};

// Every cost >= 0 and at most a second; the error names the field.
core::Status validate(const EngineCosts& costs);

}  // namespace tessera::workload
