#include "tessera/gpu/registry.hpp"

#include <string>

#include "tessera/gpu/modes/cogpu/cogpu_mode.hpp"
#include "tessera/gpu/modes/exclusive/exclusive.hpp"
#include "tessera/gpu/modes/lithos/lithos_mode.hpp"
#include "tessera/gpu/modes/mps/mps.hpp"
#include "tessera/gpu/modes/static_partitions/static_partitions.hpp"
#include "tessera/gpu/modes/time_slicing/time_slicing.hpp"
#include "tessera/gpu/policy/cogpu_policy.hpp"
#include "tessera/gpu/policy/tpot_first_policy.hpp"

namespace tessera::gpu {

const std::vector<ModeEntry>& sharing_modes() {
  static const std::vector<ModeEntry> modes = {
      {"exclusive", "one tenant per GPU, with all its SMs and bandwidth (the isolation reference)",
       [](const ModeOptions&) -> std::unique_ptr<SharingMode> {
         return std::make_unique<ExclusiveMode>();
       }},
      {"time-slicing",
       "one context at a time on all SMs, round-robin slices with a context-switch cost",
       [](const ModeOptions& o) -> std::unique_ptr<SharingMode> {
         return std::make_unique<TimeSlicingMode>(o);
       }},
      {"mps", "all tenants' blocks share all SMs and bandwidth, optional active-thread cap",
       [](const ModeOptions& o) -> std::unique_ptr<SharingMode> {
         return std::make_unique<MpsMode>(o);
       }},
      {"static-partitions",
       "disjoint TPC-aligned SM sets, each with the same share of bandwidth (MIG-like)",
       [](const ModeOptions&) -> std::unique_ptr<SharingMode> {
         return std::make_unique<StaticPartitionsMode>();
       }},
      {"cogpu",
       "virtual contexts remapped between kernels onto SLO-sized SM partitions (CoGPU default)",
       [](const ModeOptions& o) -> std::unique_ptr<SharingMode> {
         return std::make_unique<CoGpuMode>(o, std::make_unique<CoGpuPolicy>());
       }},
      {"tpot-first",
       "cogpu remapping that reserves SMs for decode steps and delays prefills' share",
       [](const ModeOptions& o) -> std::unique_ptr<SharingMode> {
         return std::make_unique<CoGpuMode>(o, std::make_unique<TpotFirstPolicy>());
       }},
      {"lithos", "priority TPC scheduling with stealing and kernel atomization (LithOS)",
       [](const ModeOptions& o) -> std::unique_ptr<SharingMode> {
         return std::make_unique<LithosMode>(o);
       }},
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

core::Result<std::unique_ptr<SharingMode>> make_sharing_mode(std::string_view name,
                                                             const ModeOptions& options) {
  for (const auto& entry : sharing_modes()) {
    if (entry.name == name) return entry.make(options);
  }
  return core::failf(core::Domain::kGpu, core::Code::kNotFound,
                     "unknown sharing mode '{}'; known modes: {}", name, sharing_mode_names());
}

}  // namespace tessera::gpu
