#include "tessera/cli/topology_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <vector>

#include "tessera/core/try.hpp"
#include "tessera/hw/topology/json.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/hw/topology/sources.hpp"
#include "tessera/k8s/node_resource_topology.hpp"

namespace tessera::cli {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// "0-3,64-67" for {0,1,2,3,64,65,66,67} (cpus sorted).
std::string cpu_ranges(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

std::string memory(std::int64_t bytes) {
  return bytes > 0 ? fmt::format("{:.1f} GiB", static_cast<double>(bytes) / kGiB)
                   : std::string("memory unknown");
}

// "64.0 GiB", with the kubelet's reservation and the firmware's distances when there are any.
std::string numa_details(const hw::HostTopology& t, int j) {
  const hw::TopoNode& numa = t.numa(j);
  std::string out = numa.local_memory_bytes ? memory(*numa.local_memory_bytes) : "memory unknown";
  if (!numa.reserved_cpus.empty() || numa.reserved_memory_bytes > 0) {
    std::vector<std::string> parts;
    if (!numa.reserved_cpus.empty()) parts.push_back("cpus " + cpu_ranges(numa.reserved_cpus));
    if (numa.reserved_memory_bytes > 0) parts.push_back(memory(numa.reserved_memory_bytes));
    out += fmt::format(", reserved {}", fmt::join(parts, " and "));
  }
  const auto& d = t.numa_distances();
  if (!d.empty()) {
    const std::size_t n = t.numa_nodes().size();
    const auto row = d.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(j) * n);
    out += fmt::format(", distances {}", fmt::join(row, row + static_cast<std::ptrdiff_t>(n), " "));
  }
  return out;
}

void print_tree(const hw::HostTopology& t) {
  fmt::print("{} ({}): {} socket(s), {} NUMA node(s), {} core group(s) ({} cores), {} GPU(s)\n",
             t.hostname(), t.source(), t.sockets().size(), t.numa_nodes().size(),
             t.core_groups().size(), t.total_cores(), t.gpus().size());
  // Each GPU's links by kind: gpu3 -> {"nvlink": [gpu2], ...}.
  std::map<int, std::map<std::string, std::vector<std::string>>> links;
  for (const hw::TopoEdge& e : t.edges()) {
    if (e.kind != hw::TopoEdgeKind::kNearby || t.node(e.from).kind != hw::TopoKind::kGpu) continue;
    links[e.from][e.via].push_back(t.node(e.to).name);
    links[e.to][e.via].push_back(t.node(e.from).name);
  }
  for (int s = 0; s < static_cast<int>(t.sockets().size()); ++s) {
    fmt::print("{} (os {})\n", t.socket(s).name, t.socket(s).os_index);
    for (int j : t.numa_of_socket(s)) {
      const hw::TopoNode& numa = t.numa(j);
      fmt::print("  {} (os {}, {})\n", numa.name, numa.os_index, numa_details(t, j));
      for (int g : t.core_groups_of_numa(j)) {
        const hw::TopoNode& cg = t.core_group(g);
        fmt::print("    {:<10} {:>3} cores  cpus {}\n", cg.name, cg.cores, cpu_ranges(cg.cpus));
      }
      for (int k : t.gpus_of_numa(j)) {
        const int id = t.gpus()[static_cast<std::size_t>(k)];
        const hw::TopoNode& gpu = t.node(id);
        std::string line = fmt::format("    {:<10} {}", gpu.name,
                                       gpu.model.empty() ? "(model unknown)" : gpu.model);
        if (gpu.memory_bytes > 0) line += "  " + memory(gpu.memory_bytes);
        if (!gpu.pci_bus_id.empty()) line += "  " + gpu.pci_bus_id;
        if (!gpu.uuid.empty()) line += "  " + gpu.uuid;
        for (const auto& [via, peers] : links[id]) {
          line += fmt::format("\n               {}: {}", via, fmt::join(peers, " "));
        }
        fmt::print("{}\n", line);
      }
    }
  }
  if (t.gpus().empty()) {
    fmt::print(
        "no GPUs: {} shows no NVIDIA PCI device of class 0300 or 0302 (a machine without GPUs, a "
        "VM without passthrough, or an export without I/O objects)\n",
        t.source() == "hwloc:live" ? "hwloc" : "the source");
  }
}

}  // namespace

void add_topology_options(CLI::App& command, TopologyFlags& f) {
  command.add_option("FILE", f.file,
                     "hwloc XML (lstopo --of xml), NCCL topology XML (NCCL_TOPO_FILE) or "
                     "tessera topology JSON; none: discover this machine");
  auto* preset = command.add_option(
      "--preset", f.preset,
      fmt::format("A generated server: {}", fmt::join(hw::preset_names(), ", ")));
  preset->excludes(command.get_option("FILE"));
  command.add_option("--hostname", f.hostname, "Hostname of a preset (default: its name)")
      ->needs(preset);
  command.add_flag("--json", f.json, "Print tessera's topology JSON instead of the tree");
  f.command
      ->add_option("--cores-per-group", f.cores_per_group,
                   "Physical cores per core group (FlexTopo allocates CPUs in such groups)")
      ->check(CLI::PositiveNumber);
  f.command
      ->add_option("--numa-per-socket", f.numa_per_socket,
                   "NCCL XML only: NUMA nodes per socket (the file names no sockets; 0: one "
                   "socket per NUMA node)")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--numa-memory", f.numa_memory,
                     "Memory of each NUMA node the source gives no size for (NCCL XML), in bytes "
                     "or as a quantity (64Gi); without it it is shown as unknown");
}

Outcome run_topology_command(const TopologyFlags& f) {
  hw::TopologyOptions options;
  options.cores_per_group = f.cores_per_group;
  options.nccl_numa_per_socket = f.numa_per_socket;
  if (!f.numa_memory.empty()) {
    TESSERA_ASSIGN_OR_RETURN(options.numa_memory_bytes,
                             k8s::parse_bytes(f.numa_memory, "--numa-memory"));
  }
  core::Result<hw::HostTopology> t = [&]() -> core::Result<hw::HostTopology> {
    if (!f.preset.empty()) {
      const std::string hostname = f.hostname.empty() ? f.preset : f.hostname;
      TESSERA_ASSIGN_OR_RETURN(hw::ServerShape shape, hw::preset_shape(f.preset));
      if (shape.cores_per_group == f.cores_per_group) return hw::preset(f.preset, hostname);
      shape.cores_per_group = f.cores_per_group;  // a preset cut differently is generated
      shape.name = hostname;
      return hw::generate(shape);
    }
    if (!f.file.empty()) return hw::load_topology_file(f.file, options);
    return hw::discover_host(options);
  }();
  if (!t) return std::unexpected(t.error());
  if (f.json) {
    // Names read from a file may hold invalid UTF-8; they are printed with U+FFFD, not thrown on.
    fmt::print("{}\n",
               hw::to_json(*t).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    print_tree(*t);
  }
  return {};
}

}  // namespace tessera::cli
