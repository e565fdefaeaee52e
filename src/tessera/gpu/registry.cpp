#include "tessera/gpu/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "tessera/gpu/modes/cogpu/cogpu_mode.hpp"
#include "tessera/gpu/modes/exclusive/exclusive.hpp"
#include "tessera/gpu/modes/lithos/lithos_mode.hpp"
#include "tessera/gpu/modes/mig/mig_mode.hpp"
#include "tessera/gpu/modes/mps/mps.hpp"
#include "tessera/gpu/modes/priority_fill/priority_fill_mode.hpp"
#include "tessera/gpu/modes/static_partitions/static_partitions.hpp"
#include "tessera/gpu/modes/time_slicing/time_slicing.hpp"
#include "tessera/gpu/policy/cogpu_policy.hpp"
#include "tessera/gpu/policy/tpot_first_policy.hpp"

namespace tessera::gpu {

namespace {

template <class Policy>
std::unique_ptr<SharingMode> cogpu_with(const CoGpuOptions& options) {
  return std::make_unique<CoGpuMode>(options, std::make_unique<Policy>());
}

}  // namespace

const std::vector<ModeEntry>& sharing_modes() {
  static const std::vector<ModeEntry> modes = {
      mode_entry<ExclusiveMode>(
          "exclusive",
          "one tenant per GPU, with all its SMs and bandwidth (the isolation reference)"),
      mode_entry<TimeSlicingMode>(
          "time-slicing",
          "one context at a time on all SMs, round-robin slices with a context-switch cost",
          time_slicing_option_fields()),
      mode_entry<MpsMode>(
          "mps", "all tenants' blocks share all SMs and bandwidth, optional active-thread cap",
          mps_option_fields()),
      mode_entry<StaticPartitionsMode>(
          "static-partitions",
          "disjoint TPC-aligned SM sets, each with the same share of bandwidth (MIG-like)"),
      mode_entry<MigMode>("mig",
                          "a MIG GPU instance per tenant: its SMs, memory slices' bandwidth and "
                          "its own memory (A100, H100)"),
      mode_entry<CoGpuMode>(
          "cogpu",
          "virtual contexts remapped between kernels onto SLO-sized SM partitions (CoGPU default)",
          cogpu_option_fields(), cogpu_with<CoGpuPolicy>),
      mode_entry<CoGpuMode>("tpot-first",
                            "cogpu remapping that reserves SMs for decode steps and delays "
                            "prefills' share",
                            cogpu_option_fields(), cogpu_with<TpotFirstPolicy>),
      mode_entry<LithosMode>(
          "lithos", "priority TPC scheduling with stealing and kernel atomization (LithOS)",
          lithos_option_fields()),
      mode_entry<PriorityFillMode>(
          "priority-fill",
          "latency-critical tenants first at high stream priority on every SM; best-effort "
          "tenants fill the rest, held to a reserve while latency-critical work runs (tessera)",
          priority_fill_option_fields()),
  };
  return modes;
}

bool is_sharing_mode(std::string_view name) {
  for (const auto& entry : sharing_modes()) {
    if (entry.name == name) return true;
  }
  return false;
}

std::string sharing_mode_names() {
  std::string known;
  for (const auto& entry : sharing_modes()) {
    known += known.empty() ? "" : ", ";
    known += entry.name;
  }
  return known;
}

std::vector<std::string_view> mode_option_keys() {
  std::vector<std::string_view> keys;
  for (const auto& entry : sharing_modes()) {
    for (const auto& option : entry.options) {
      if (std::find(keys.begin(), keys.end(), option.key) == keys.end()) {
        keys.push_back(option.key);
      }
    }
  }
  return keys;
}

std::string sharing_modes_listing() {
  std::string out;
  for (const auto& entry : sharing_modes()) {
    out += fmt::format("  {:<18} {}\n", entry.name, entry.summary);
    for (const auto& option : entry.options) {
      out += fmt::format("      {:<30} {:<9} {}\n", option.key, option.default_value,
                         option.doc.meaning);
      out += fmt::format("      {:<30} {:<9} ({})\n", "", "", option.doc.basis);
    }
  }
  return out;
}

core::Result<std::unique_ptr<SharingMode>> make_sharing_mode(std::string_view name,
                                                             const ModeSettings& settings) {
  for (const auto& entry : sharing_modes()) {
    if (entry.name == name) return entry.make(settings.stored(name));
  }
  return core::failf(core::Domain::kGpu, core::Code::kNotFound,
                     "unknown sharing mode '{}'; known modes: {}", name, sharing_mode_names());
}

}  // namespace tessera::gpu
