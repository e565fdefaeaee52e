#include "tessera/dra/resource_slice.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tessera/hw/gpu_spec.hpp"

namespace tessera::dra {

namespace {

using nlohmann::json;

json attribute(std::string value) {
  return {{"string", std::move(value)}};
}
json attribute(int value) {
  return {{"int", value}};
}
json attribute(bool value) {
  return {{"bool", value}};
}

json device(const SliceGpu& g) {
  json attributes{{"index", attribute(g.index)}, {"migCapable", attribute(g.mig_capable)}};
  if (!g.uuid.empty()) attributes["uuid"] = attribute(g.uuid);
  if (!g.model.empty()) attributes["productName"] = attribute(g.model);
  if (!g.catalog_model.empty()) attributes["model"] = attribute(g.catalog_model);
  if (g.sms > 0) attributes["smCount"] = attribute(g.sms);
  if (g.numa >= 0) attributes["numaNode"] = attribute(g.numa);
  if (!g.pci_bus_id.empty()) attributes["pciBusID"] = attribute(g.pci_bus_id);
  if (!g.pcie_root.empty()) attributes["resource.kubernetes.io/pcieRoot"] = attribute(g.pcie_root);
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

std::string slice_name(std::string_view driver, std::string_view node) {
  return fmt::format("{}-{}", node, driver);
}

json resource_slice(std::string_view driver, std::string_view node, std::int64_t generation,
                    const std::vector<SliceGpu>& gpus) {
  json devices = json::array();
  for (const auto& g : gpus) devices.push_back(device(g));
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", slice_name(driver, node)}}},
          {"spec",
           {{"driver", driver},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", generation}, {"resourceSliceCount", 1}}},
            {"devices", std::move(devices)}}}};
}

}  // namespace tessera::dra
