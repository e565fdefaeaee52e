#include "tessera/dra/resource_slice.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tessera/hw/gpu_spec.hpp"

namespace tessera::dra {

namespace {

using nlohmann::json;

// The API's limits on a slice's devices: 128, or 64 where any consumes counters.
constexpr std::size_t kMaxDevices = 128;
constexpr std::size_t kMaxCountingDevices = 64;

json attribute(std::string value) {
  return {{"string", std::move(value)}};
}
json attribute(int value) {
  return {{"int", value}};
}
json attribute(bool value) {
  return {{"bool", value}};
}

// What every device of a GPU says of the GPU itself.
json gpu_attributes(const SliceGpu& g) {
  json attributes{{"index", attribute(g.index)}, {"migCapable", attribute(g.mig_capable)}};
  if (!g.uuid.empty()) attributes["uuid"] = attribute(g.uuid);
  if (!g.model.empty()) attributes["productName"] = attribute(g.model);
  if (!g.catalog_model.empty()) attributes["model"] = attribute(g.catalog_model);
  if (g.sms > 0) attributes["smCount"] = attribute(g.sms);
  if (g.numa >= 0) attributes["numaNode"] = attribute(g.numa);
  if (!g.pci_bus_id.empty()) attributes["pciBusID"] = attribute(g.pci_bus_id);
  if (!g.pcie_root.empty()) attributes["resource.kubernetes.io/pcieRoot"] = attribute(g.pcie_root);
  return attributes;
}

json share_device(const SliceGpu& g) {
  json attributes = gpu_attributes(g);
  attributes["type"] = attribute(std::string("share"));
  json capacity{
      {"smPercent",
       {{"value", "100"},
        {"requestPolicy",
         {{"default", "100"}, {"validRange", {{"min", "1"}, {"max", "100"}, {"step", "1"}}}}}}}};
  // Shares are whole MiB (the range's step), so the total is too: its default, the whole
  // memory, must be a step above the minimum.
  constexpr std::int64_t kMiB = 1 << 20;
  if (const std::int64_t memory = g.memory_bytes / kMiB * kMiB; memory > 0) {
    const std::string total = std::to_string(memory);
    capacity["memory"] = {
        {"value", total},
        {"requestPolicy",
         {{"default", total}, {"validRange", {{"min", "1Mi"}, {"max", total}, {"step", "1Mi"}}}}}};
  }
  return {{"name", fmt::format("gpu-{}", g.index)},
          {"allowMultipleAllocations", true},
          {"attributes", std::move(attributes)},
          {"capacity", std::move(capacity)}};
}

std::string counter_set_name(const SliceGpu& g) {
  return fmt::format("gpu-{}-mig", g.index);
}

json quantity(int n) {
  return {{"value", std::to_string(n)}};
}

// A MIG GPU's counters: each memory slice once, its compute slices, its one set of media engines.
json mig_counters() {
  json counters{{"computeSlices", quantity(hw::kMigComputeSlices)}, {"mediaEngines", quantity(1)}};
  for (int i = 0; i < hw::kMigMemorySlices; ++i)
    counters[fmt::format("memorySlice{}", i)] = quantity(1);
  return counters;
}

json mig_device(const SliceGpu& g, const hw::MigProfile& p, int start) {
  json attributes = gpu_attributes(g);
  attributes["type"] = attribute(std::string("mig"));
  attributes["profile"] = attribute(p.name);
  attributes["profileID"] = attribute(p.id);
  attributes["placementStart"] = attribute(start);
  attributes["smCount"] = attribute(p.sms);
  json consumed{{"computeSlices", quantity(p.compute_slices)}};
  for (int i = start; i < start + p.memory_slices; ++i) {
    consumed[fmt::format("memorySlice{}", i)] = quantity(1);
  }
  if (p.media_extensions) consumed["mediaEngines"] = quantity(1);
  return {{"name", mig_device_name(g.index, p.id, start)},
          {"attributes", std::move(attributes)},
          {"capacity", {{"memory", {{"value", std::to_string(p.memory_bytes)}}}}},
          {"consumesCounters",
           {{{"counterSet", counter_set_name(g)}, {"counters", std::move(consumed)}}}}};
}

}  // namespace

std::string pcie_root_of(const std::string& pci_bus_id, const std::string& sysfs_root) {
  if (pci_bus_id.empty()) return {};
  std::error_code ec;
  const auto real = std::filesystem::canonical(
      std::filesystem::path(sysfs_root) / "bus/pci/devices" / pci_bus_id, ec);
  if (ec) return {};
  for (const auto& part : real) {
    const std::string name = part.string();
    if (name.starts_with("pci") && name.size() > 3) return name;
  }
  return {};
}

std::vector<SliceGpu> slice_gpus(const hw::HostTopology& topology, const std::string& sysfs_root) {
  std::vector<SliceGpu> out;
  for (const int id : topology.gpus()) {
    const hw::TopoNode& n = topology.node(id);
    SliceGpu g;
    g.index = n.os_index >= 0 ? n.os_index : static_cast<int>(out.size());
    g.uuid = n.uuid;
    g.model = n.model;
    g.memory_bytes = n.memory_bytes;
    g.numa = n.numa;
    g.pci_bus_id = n.pci_bus_id;
    g.pcie_root = pcie_root_of(n.pci_bus_id, sysfs_root);
    if (const auto name = hw::gpu_for_device_name(n.model)) {
      if (auto spec = hw::find_gpu(*name)) {
        g.catalog_model = spec->name;
        g.sms = spec->sms;
        g.mig_capable = spec->mig_capable;
        if (g.memory_bytes == 0) g.memory_bytes = spec->memory_bytes;
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::string slice_name(std::string_view driver, std::string_view node, std::size_t i) {
  return i == 0 ? fmt::format("{}-{}", node, driver) : fmt::format("{}-{}-{}", node, driver, i + 1);
}

std::string mig_device_name(int gpu, int profile_id, int start) {
  return fmt::format("gpu-{}-mig-{}-{}", gpu, profile_id, start);
}

std::vector<json> resource_slices(std::string_view driver, std::string_view node,
                                  std::int64_t generation, const std::vector<SliceGpu>& gpus) {
  json counter_sets = json::array();
  json devices = json::array();
  for (const auto& g : gpus) {
    if (g.mig_profiles.empty()) {
      devices.push_back(share_device(g));
      continue;
    }
    counter_sets.push_back({{"name", counter_set_name(g)}, {"counters", mig_counters()}});
    for (const auto& p : g.mig_profiles) {
      for (const int start : p.placement_starts) devices.push_back(mig_device(g, p, start));
    }
  }
  const std::size_t per_slice = counter_sets.empty() ? kMaxDevices : kMaxCountingDevices;
  std::vector<json> specs;
  if (!counter_sets.empty()) specs.push_back({{"sharedCounters", std::move(counter_sets)}});
  for (std::size_t i = 0; i < devices.size(); i += per_slice) {
    json part = json::array();
    for (std::size_t j = i; j < std::min(devices.size(), i + per_slice); ++j) {
      part.push_back(std::move(devices[j]));
    }
    specs.push_back({{"devices", std::move(part)}});
  }
  if (specs.empty()) specs.push_back({{"devices", json::array()}});
  std::vector<json> out;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    json spec = std::move(specs[i]);
    spec["driver"] = driver;
    spec["nodeName"] = node;
    spec["pool"] = {{"name", node},
                    {"generation", generation},
                    {"resourceSliceCount", static_cast<std::int64_t>(specs.size())}};
    out.push_back({{"apiVersion", "resource.k8s.io/v1"},
                   {"kind", "ResourceSlice"},
                   {"metadata", {{"name", slice_name(driver, node, i)}}},
                   {"spec", std::move(spec)}});
  }
  return out;
}

}  // namespace tessera::dra
