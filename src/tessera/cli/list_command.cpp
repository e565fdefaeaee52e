#include "tessera/cli/list_command.hpp"

#include <fmt/format.h>

#include "tessera/cli/experiment_command.hpp"
#include "tessera/cluster/registry.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/mig/registry.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::cli {

void add_list_options(CLI::App& /*command*/, ListFlags& /*flags*/) {}

Outcome run_list_command(const ListFlags& /*flags*/) {
  fmt::print("GPUs:\n");
  for (const auto& g : hw::gpu_catalog()) {
    fmt::print("  {:<18} {} SMs, {:.0f} GiB, {:.2f} TB/s, {:.0f} W\n", g.name, g.sms,
               static_cast<double>(g.memory_bytes) / (1ull << 30),
               g.memory_bandwidth_bytes_per_s / 1e12, g.tdp_watts);
  }
  fmt::print("Inference models:\n");
  for (const auto& m : workload::model_catalog()) {
    fmt::print("  {:<18} {:.2f} B parameters, {} layers\n", m.name, m.parameters() / 1e9, m.layers);
  }
  fmt::print("Training models:\n");
  for (const auto& m : workload::training_catalog()) {
    fmt::print("  {:<18} {} (default batch {})\n", m.name, m.description, m.default_batch);
  }
  fmt::print("Sharing modes:\n");
  fmt::print("{}", gpu::sharing_modes_listing());
  fmt::print("MIG schemes (tessera mig plan|run --scheme):\n");
  fmt::print("{}", mig::schemes_listing());
  fmt::print("Preemption methods (tessera extender|cluster-sim --method):\n");
  fmt::print("{}", cluster::preemption_methods_listing());
  fmt::print("Experiments (tessera experiment NAME):\n");
  print_experiments();
  return {};
}

}  // namespace tessera::cli
