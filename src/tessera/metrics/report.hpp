#pragma once
// The results of a run: per sharing mode, per tenant. Written as a table for people and as JSON
// for programs. Nothing here depends on wall-clock time, so a fixed seed gives identical output.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/device/gpu_device.hpp"
#include "tessera/metrics/latency.hpp"

namespace tessera::metrics {

// An inference tenant's GPU memory as its serving engine laid it out (bytes), and what its
// paged KV cache went through in the run.
struct MemoryReport {
  double budget = 0;  // gpu_memory_utilization of the board
  double weights = 0;
  double activations = 0;
  double kv_cache = 0;
  std::int64_t kv_blocks = 0;
  int block_size = 0;
  std::int64_t peak_used_blocks = 0;
  std::uint64_t preemptions = 0;
  std::size_t rejected = 0;  // prompts larger than the whole cache
};

// Each request's latency (ms), for plots of their distribution. Kept only when the run asks for
// it (scenario::RunOptions::keep_samples); to_json and format_table leave it out.
struct LatencySamples {
  std::vector<double> ttft_ms;  // requests with a first token, as InferenceSummary::ttft_ms
  std::vector<double> tpot_ms;  // completed requests, as InferenceSummary::tpot_ms
};

struct TenantReport {
  std::string name;
  std::string kind;  // "inference" or "training"
  std::string model;
  Slo slo;
  std::optional<InferenceSummary> inference;
  std::optional<TrainingSummary> training;
  std::optional<MemoryReport> memory;  // inference tenants with a sized KV cache
  // Inference tenants' per-request latencies, when the run kept them.
  std::optional<LatencySamples> samples;
  // Why the tenant did not run: its GPU's memory could not hold it beside the tenants before it.
  std::optional<std::string> out_of_memory;
};

struct ModeReport {
  std::string mode;
  core::Nanos simulated = 0;
  int gpus = 1;                // exclusive mode gives each tenant its own GPU
  device::DeviceStats device;  // summed energy, mean utilization over the mode's GPUs
  std::vector<TenantReport> tenants;
  // The mode's own figures (gpu::SharingMode::counters), name with unit -> value, summed over
  // its GPUs; empty for the baselines.
  std::vector<std::pair<std::string, double>> counters;
};

struct RunReport {
  std::string scenario;
  std::string gpu;
  // Where the figures come from: "simulator" (tessera's GPU model) or "cuda" (a real GPU).
  std::string backend = "simulator";
  std::uint64_t seed = 0;
  std::vector<ModeReport> modes;
};

// Keys carry their units (ttft_ms, energy_j, simulated_s); doubles are rounded to 6 significant
// digits so golden files are stable; an unset SLO target is null; object keys are sorted.
nlohmann::json to_json(const RunReport& report);
// A double as to_json writes it: to 6 significant digits (0 for a non-finite value).
double round6(double x);
// A number as format_table writes it: three significant-ish digits without exponents (0.42,
// 12.3, 4567).
std::string format_number(double x);
// A side-by-side table: one row per (mode, tenant), a device line per mode and a legend; sized to
// its content so that typical reports fit a 120-column terminal.
std::string format_table(const RunReport& report);

}  // namespace tessera::metrics
