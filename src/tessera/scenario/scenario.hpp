#pragma once
// A scenario: which GPU, which tenants (model, arrivals or trace, priority, SLO), which sharing
// modes to compare, for how long. Loaded from YAML (or JSON); every error names the file, line
// and field. See examples/ and the README for the format.

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/backends/sim/gpu/sim_gpu_options.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/gpu/mode_settings.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/tenant/inference_server.hpp"
#include "tessera/tenant/training_job.hpp"
#include "tessera/workload/arrivals.hpp"

namespace tessera::scenario {

struct ArrivalSpec {
  enum class Kind { kSynthetic, kTrace };
  Kind kind = Kind::kSynthetic;
  workload::SyntheticArrivals synthetic{};  // kSynthetic: Poisson (cv 1) or Gamma (cv != 1)
  std::string trace_path;                   // kTrace: resolved against the scenario's folder
  workload::TraceOptions trace{};
};

struct TenantSpec {
  enum class Kind { kInference, kTraining };
  std::string name;
  Kind kind = Kind::kInference;
  int priority = 0;
  double sm_share = 0;
  tenant::InferenceConfig inference;  // kInference
  // kInference with a `kv_cache` key: the GPU memory it was sized from (inference.kv_cache).
  std::optional<workload::ServingMemory> memory;
  ArrivalSpec arrivals;             // kInference
  tenant::TrainingConfig training;  // kTraining
};

struct Scenario {
  std::string name;
  std::string source;  // file it came from, for messages
  hw::GpuSpec gpu;
  std::uint64_t seed = 1;
  core::Nanos duration = core::seconds(60);
  std::vector<std::string> modes;  // sharing modes to run, side by side
  // Every registered mode's options (`mode_options:`), decoded and validated when parsed.
  gpu::ModeSettings mode_options;
  // The `sim:` section: model assumptions set over each simulated GPU's calibrated defaults.
  sim::SimGpuOverrides sim_overrides;
  std::vector<TenantSpec> tenants;
};

core::Result<Scenario> load_scenario(const std::string& path);
// `base_dir` resolves relative trace paths.
core::Result<Scenario> parse_scenario(std::string_view text, const std::string& source_name,
                                      const std::string& base_dir);

}  // namespace tessera::scenario
