// HostTopology from hwloc: the live machine (discover_host) or an `lstopo --of xml` export
// (parse_hwloc_xml), both through libhwloc itself so the XML is read exactly as hwloc writes it.
//
// Mapping (hwloc object -> FlexTopo vertex):
//   Package                -> socket (none: one socket for the machine)
//   NUMANode with CPUs     -> NUMA node, in the socket of its Package ancestor (memory-only nodes,
//                             e.g. GPU memory or CXL exposed as NUMA nodes, are not CPU NUMA nodes)
//   Core (or a PU without one: reduced exports such as the DGX-2 file)
//                          -> a core, grouped in order into core groups of one NUMA node
//   PCIDev 10de:0300/0302  -> GPU; name, UUID and memory from its CUDA/NVML OS devices (without
//                             one, the model from the PCI device id: pci_ids.hpp)
// A NUMA node's memory is hwloc's local_memory (0, which hwloc reports when it could not read
// it, is unknown); the firmware's NUMA distances are hwloc's NUMALatency matrix.
// Links: GPUs whose nearest common PCI ancestor is a PCI-to-PCI bridge (a switch port, so their
// traffic stays below the host bridge: nvidia-smi's PIX/PXB) -> "pcie-switch"; a nonzero entry of
// hwloc's "NVLinkBandwidth" distances between two GPUs -> "nvlink", both to one NVSwitch ->
// "nvswitch".
#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <pugixml.hpp>
#include <set>
#include <sstream>
#include <tuple>
#include <type_traits>

#include "tessera/core/try.hpp"
#include "tessera/hw/pci_ids.hpp"
#include "tessera/hw/topology/internal/child_process.hpp"
#include "tessera/hw/topology/internal/source_util.hpp"
#include "tessera/hw/topology/json.hpp"
#include "tessera/hw/topology/sources.hpp"

namespace tessera::hw {
namespace {

// PCI class ids (PCI SIG: 0x0300 VGA, 0x0302 3D controller, 0x0680 other bridge, which is how
// NVSwitches enumerate).
constexpr unsigned kClassVga = 0x0300;
constexpr unsigned kClass3d = 0x0302;
constexpr unsigned kClassOtherBridge = 0x0680;

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct BitmapDeleter {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using BitmapPtr = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

core::Error topo_error(core::Code code, std::string message) {
  return core::Error(core::Domain::kTopology, code, std::move(message));
}

std::string bus_id(hwloc_obj_t pci) {
  const hwloc_obj_attr_u::hwloc_pcidev_attr_s& a = pci->attr->pcidev;
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", a.domain, a.bus, a.dev, a.func);
}

bool is_nvidia_gpu(hwloc_obj_t obj) {
  if (obj == nullptr || obj->type != HWLOC_OBJ_PCI_DEVICE) return false;
  const hwloc_obj_attr_u::hwloc_pcidev_attr_s& a = obj->attr->pcidev;
  return a.vendor_id == kNvidiaPciVendor && (a.class_id == kClassVga || a.class_id == kClass3d);
}

// "16671616KiB" (hwloc's CUDAGlobalMemorySize) in bytes; 0 when absent or malformed.
std::int64_t kib_to_bytes(const char* value) {
  if (value == nullptr) return 0;
  char* end = nullptr;
  const long long kib = std::strtoll(value, &end, 10);
  if (end == value || kib <= 0 || std::string_view(end) != "KiB" || kib > LLONG_MAX / 1024) {
    return 0;
  }
  return static_cast<std::int64_t>(kib) * 1024;
}

// Whether a bridge's upstream side is PCI (a switch port) rather than a host bridge. Read as raw
// bytes: hwloc stores whatever number an XML file gives into the enum, and loading an enum
// outside its values is undefined in C++ (UBSan flags it).
bool pci_upstream(hwloc_obj_t bridge) {
  std::underlying_type_t<hwloc_obj_bridge_type_t> raw;
  static_assert(sizeof raw == sizeof bridge->attr->bridge.upstream_type);
  std::memcpy(&raw, &bridge->attr->bridge.upstream_type, sizeof raw);
  return raw == HWLOC_OBJ_BRIDGE_PCI;
}

// "cuda3" -> 3 for prefix "cuda"; -1 otherwise.
int numbered(const char* name, std::string_view prefix) {
  if (name == nullptr) return -1;
  const std::string_view n(name);
  if (!n.starts_with(prefix) || n.size() == prefix.size() || n.size() > prefix.size() + 6) {
    return -1;
  }
  int v = 0;
  for (char c : n.substr(prefix.size())) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

// hwloc's unsigned OS index as the graph's int: -1 for HWLOC_UNKNOWN_INDEX or anything that does
// not fit.
int os_number(unsigned os_index) {
  return os_index > static_cast<unsigned>(INT_MAX) ? -1 : static_cast<int>(os_index);
}

struct GpuFound {
  hwloc_obj_t pci = nullptr;
  TopoNode node;
  int cuda = -1, nvml = -1;
  int numa = -1;  // index into the NUMA list
};

// The OS devices hwloc hangs under a GPU (cudaN, nvmlN, openclXdY) carry its model, UUID and
// memory; the PCI device itself only has ids.
void read_os_devices(GpuFound& g) {
  for (hwloc_obj_t c = g.pci->io_first_child; c != nullptr; c = c->next_sibling) {
    if (c->type != HWLOC_OBJ_OS_DEVICE) continue;
    if (const int i = numbered(c->name, "cuda"); i >= 0) g.cuda = i;
    if (const int i = numbered(c->name, "nvml"); i >= 0) g.nvml = i;
    if (const char* m = hwloc_obj_get_info_by_name(c, "GPUModel"); m && g.node.model.empty()) {
      g.node.model = m;
    }
    if (const char* u = hwloc_obj_get_info_by_name(c, "NVIDIAUUID"); u && g.node.uuid.empty()) {
      g.node.uuid = u;
    }
    if (g.node.memory_bytes == 0) {
      g.node.memory_bytes = kib_to_bytes(hwloc_obj_get_info_by_name(c, "CUDAGlobalMemorySize"));
    }
  }
}

// The GPU a distance-matrix object stands for: the GPU's PCI device or one of its OS devices.
hwloc_obj_t gpu_of(hwloc_obj_t obj) {
  if (obj != nullptr && obj->type == HWLOC_OBJ_OS_DEVICE) obj = obj->parent;
  return is_nvidia_gpu(obj) ? obj : nullptr;
}

bool is_nvswitch(hwloc_obj_t obj) {
  if (obj != nullptr && obj->type == HWLOC_OBJ_OS_DEVICE) obj = obj->parent;
  return obj != nullptr && obj->type == HWLOC_OBJ_PCI_DEVICE &&
         obj->attr->pcidev.vendor_id == kNvidiaPciVendor &&
         obj->attr->pcidev.class_id == kClassOtherBridge;
}

// Nearest common ancestor of two objects (hwloc_get_common_ancestor_obj compares depths, which
// I/O objects do not have).
hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b) {
  std::set<hwloc_obj_t> above;
  for (hwloc_obj_t p = a->parent; p != nullptr; p = p->parent) above.insert(p);
  for (hwloc_obj_t p = b->parent; p != nullptr; p = p->parent) {
    if (above.contains(p)) return p;
  }
  return nullptr;
}

// Linux's numa_node of a PCI device (-1: none or unreadable).
int sysfs_numa_node(const std::string& bus_id) {
  std::ifstream in("/sys/bus/pci/devices/" + bus_id + "/numa_node");
  int node = -1;
  if (!(in >> node)) return -1;
  return node;
}

// hwloc's NUMA latency matrix over `numa` (tessera's NUMA nodes in order), row-major; nullopt when
// hwloc has none or it leaves one of them out (a NUMA node tessera added for a package without
// one), so the caller falls back on distances derived from the sockets.
std::optional<std::vector<std::int64_t>> numa_latencies(hwloc_topology_t topo,
                                                        const std::vector<hwloc_obj_t>& numa) {
  unsigned nr = 0;
  if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, nullptr,
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0 ||
      nr == 0) {
    return std::nullopt;
  }
  std::vector<hwloc_distances_s*> all(nr, nullptr);
  if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, all.data(),
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0) {
    return std::nullopt;
  }
  all.resize(std::min<std::size_t>(nr, all.size()));
  if (all.empty()) return std::nullopt;
  // The OS's own matrix (hwloc names it NUMALatency) over one a user or a tool added.
  hwloc_distances_s* d = all.front();
  for (hwloc_distances_s* candidate : all) {
    const char* name = hwloc_distances_get_name(topo, candidate);
    if (name != nullptr && std::string_view(name) == "NUMALatency") d = candidate;
  }
  std::optional<std::vector<std::int64_t>> out;
  std::vector<int> at(numa.size(), -1);
  for (std::size_t j = 0; j < numa.size(); ++j) {
    if (numa[j] != nullptr) at[j] = hwloc_distances_obj_index(d, numa[j]);
  }
  if (std::ranges::none_of(at, [](int i) { return i < 0; })) {
    out.emplace();
    const auto n = static_cast<std::size_t>(d->nbobjs);
    for (int i : at) {
      for (int k : at) {
        const hwloc_uint64_t v =
            d->values[static_cast<std::size_t>(i) * n + static_cast<std::size_t>(k)];
        out->push_back(v > static_cast<hwloc_uint64_t>(LLONG_MAX) ? LLONG_MAX
                                                                  : static_cast<std::int64_t>(v));
      }
    }
  }
  for (hwloc_distances_s* m : all) hwloc_distances_release(topo, m);
  return out;
}

struct Options {
  TopologyOptions topology;
  bool live = false;  // sysfs may be asked where hwloc's locality is the whole machine
};

core::Result<HostTopology> convert(hwloc_topology_t topo, std::string hostname, std::string source,
                                   const std::string& origin, const Options& opt) {
  HostTopologyBuilder b(std::move(hostname), std::move(source));
  const hwloc_obj_t root = hwloc_get_root_obj(topo);

  // Sockets.
  std::map<hwloc_obj_t, int> socket_of_package;
  const int packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  for (int i = 0; i < packages; ++i) {
    hwloc_obj_t p = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, static_cast<unsigned>(i));
    socket_of_package[p] = b.add_socket(os_number(p->os_index));
  }
  if (packages == 0) b.add_socket(0);

  // NUMA nodes with CPUs, each in the socket of its package (or the one whose CPUs it shares
  // when hwloc attached it above the packages).
  std::vector<hwloc_obj_t> numa_objs;
  const int numas = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  std::vector<bool> socket_has_numa(static_cast<std::size_t>(std::max(packages, 1)), false);
  for (int i = 0; i < numas; ++i) {
    hwloc_obj_t n = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    if (n->cpuset == nullptr || hwloc_bitmap_iszero(n->cpuset)) continue;
    int socket = 0;
    if (hwloc_obj_t p = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, n)) {
      socket = socket_of_package[p];
    } else {
      for (const auto& [pkg, s] : socket_of_package) {
        if (hwloc_bitmap_intersects(pkg->cpuset, n->cpuset)) {
          socket = s;
          break;
        }
      }
    }
    const auto memory = static_cast<std::int64_t>(n->attr->numanode.local_memory);
    b.add_numa(socket, os_number(n->os_index),
               memory > 0 ? std::optional(memory) : opt.topology.numa_memory_bytes);
    socket_has_numa[static_cast<std::size_t>(socket)] = true;
    numa_objs.push_back(n);
  }
  // A package no CPU NUMA node lies in (hwloc put one node above several packages): it gets a NUMA
  // node of its own with no memory known, so its cores still have a place.
  std::vector<int> numa_of_socket(socket_has_numa.size(), -1);
  for (std::size_t s = 0; s < socket_has_numa.size(); ++s) {
    if (socket_has_numa[s]) continue;
    numa_of_socket[s] = static_cast<int>(numa_objs.size());
    b.add_numa(static_cast<int>(s), -1, opt.topology.numa_memory_bytes);
    numa_objs.push_back(nullptr);
  }

  // Cores, in PU order, each in the first NUMA node holding its first PU.
  std::vector<std::vector<std::vector<int>>> cores(numa_objs.size());
  std::map<hwloc_obj_t, std::pair<std::size_t, std::size_t>> core_slot;  // -> (numa, position)
  const int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  for (int i = 0; i < pus; ++i) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, static_cast<unsigned>(i));
    hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu);
    if (core == nullptr) core = pu;  // a PU without a core object counts as a core
    const int cpu = os_number(pu->os_index);
    if (cpu < 0) continue;  // a PU without an OS number cannot be bound to
    if (auto it = core_slot.find(core); it != core_slot.end()) {
      cores[it->second.first][it->second.second].push_back(cpu);
      continue;
    }
    std::size_t numa = numa_objs.size();
    for (std::size_t j = 0; j < numa_objs.size() && numa == numa_objs.size(); ++j) {
      if (numa_objs[j] != nullptr && hwloc_bitmap_isset(numa_objs[j]->cpuset, pu->os_index)) {
        numa = j;
      }
    }
    if (numa == numa_objs.size()) {  // outside every NUMA node: its package's added node
      hwloc_obj_t p = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pu);
      const int s = p != nullptr ? socket_of_package[p] : 0;
      if (numa_of_socket[static_cast<std::size_t>(s)] < 0) continue;  // hwloc gave it no node
      numa = static_cast<std::size_t>(numa_of_socket[static_cast<std::size_t>(s)]);
    }
    core_slot[core] = {numa, cores[numa].size()};
    cores[numa].push_back({cpu});
  }
  detail::CoreGroups groups(opt.topology);
  for (std::size_t j = 0; j < cores.size(); ++j) {
    const int os = numa_objs[j] != nullptr ? os_number(numa_objs[j]->os_index) : -1;
    groups.add(b, static_cast<int>(j), os, cores[j]);
  }
  TESSERA_TRY(groups.check(origin));
  if (auto distances = numa_latencies(topo, numa_objs)) b.set_numa_distances(std::move(*distances));

  // GPUs, in PCI bus order (NVML's order, and CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID).
  std::vector<GpuFound> gpus;
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(topo, pci)) {
    if (!is_nvidia_gpu(pci)) continue;
    GpuFound g;
    g.pci = pci;
    g.node.pci_bus_id = bus_id(pci);
    read_os_devices(g);
    if (const auto model = nvidia_gpu_model(pci->attr->pcidev.device_id);
        model && g.node.model.empty()) {
      g.node.model = *model;
    }
    // Locality: the NUMA nodes of the nearest CPU-side ancestor; where that is the whole machine
    // on a live host, Linux's numa_node in sysfs.
    hwloc_obj_t local = hwloc_get_non_io_ancestor_obj(topo, pci);
    if (opt.live && local == root && numa_objs.size() > 1) {
      const int os = sysfs_numa_node(g.node.pci_bus_id);
      for (std::size_t j = 0; j < numa_objs.size(); ++j) {
        if (numa_objs[j] != nullptr && os_number(numa_objs[j]->os_index) == os) {
          g.numa = static_cast<int>(j);
        }
      }
    }
    // ASSUMPTION: a GPU whose locality is still the whole machine (an export from a VM or a
    // firmware that reports none) is placed on the machine's first NUMA node; the graph needs one.
    for (std::size_t j = 0; j < numa_objs.size() && g.numa < 0; ++j) {
      if (numa_objs[j] != nullptr && local->nodeset != nullptr &&
          hwloc_bitmap_isset(local->nodeset, numa_objs[j]->os_index)) {
        g.numa = static_cast<int>(j);
      }
    }
    if (g.numa < 0) g.numa = 0;
    gpus.push_back(std::move(g));
  }
  const auto bus_key = [](const GpuFound& g) {
    const hwloc_obj_attr_u::hwloc_pcidev_attr_s& a = g.pci->attr->pcidev;
    return std::make_tuple(a.domain, a.bus, a.dev, a.func);
  };
  std::sort(gpus.begin(), gpus.end(),
            [&](const GpuFound& x, const GpuFound& y) { return bus_key(x) < bus_key(y); });
  std::map<hwloc_obj_t, int> gpu_index;
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    GpuFound& g = gpus[k];
    g.node.os_index = g.cuda >= 0 ? g.cuda : g.nvml >= 0 ? g.nvml : static_cast<int>(k);
    gpu_index[g.pci] = b.add_gpu(g.numa, g.node);
  }

  // Links.
  detail::GpuLinks links;
  for (std::size_t x = 0; x < gpus.size(); ++x) {
    for (std::size_t y = x + 1; y < gpus.size(); ++y) {
      hwloc_obj_t a = common_ancestor(gpus[x].pci, gpus[y].pci);
      if (a != nullptr && a->type == HWLOC_OBJ_BRIDGE && pci_upstream(a)) {
        links.add(static_cast<int>(x), static_cast<int>(y), "pcie-switch");
      }
    }
  }
  unsigned nr = 1;
  hwloc_distances_s* d = nullptr;
  if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, &d, 0) == 0 && nr == 1) {
    const unsigned n = d->nbobjs;
    const auto value = [&](unsigned i, unsigned j) { return d->values[i * n + j]; };
    // NVSwitches linked to each other form one fabric (union-find over matrix positions); the
    // GPUs attached to one fabric reach each other through it.
    std::vector<unsigned> fabric(n);
    for (unsigned i = 0; i < n; ++i) fabric[i] = i;
    const auto find = [&](unsigned i) {
      while (fabric[i] != i) i = fabric[i] = fabric[fabric[i]];
      return i;
    };
    for (unsigned i = 0; i < n; ++i) {
      for (unsigned j = 0; j < n; ++j) {
        if (i != j && value(i, j) != 0 && is_nvswitch(d->objs[i]) && is_nvswitch(d->objs[j])) {
          fabric[find(i)] = find(j);
        }
      }
    }
    std::map<unsigned, std::set<int>> by_fabric;  // GPUs attached to each NVSwitch fabric
    for (unsigned i = 0; i < n; ++i) {
      hwloc_obj_t gi = gpu_of(d->objs[i]);
      for (unsigned j = 0; j < n && gi != nullptr; ++j) {
        if (i == j || (value(i, j) == 0 && value(j, i) == 0)) continue;
        if (hwloc_obj_t gj = gpu_of(d->objs[j]); gj != nullptr && gj != gi) {
          links.add(gpu_index[gi], gpu_index[gj], "nvlink");
        } else if (is_nvswitch(d->objs[j])) {
          by_fabric[find(j)].insert(gpu_index[gi]);
        }
      }
    }
    for (const auto& [root_switch, group] : by_fabric) {
      for (auto x = group.begin(); x != group.end(); ++x) {
        for (auto y = std::next(x); y != group.end(); ++y) links.add(*x, *y, "nvswitch");
      }
    }
    hwloc_distances_release(topo, d);
  }
  links.apply(b);
  return core::with_context(std::move(b).build(), origin);
}

// A topology handle with PCI bridges, devices and OS devices kept (hwloc drops I/O by default).
core::Result<TopologyPtr> new_topology(const std::string& origin) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    return std::unexpected(
        topo_error(core::Code::kInternal, fmt::format("{}: hwloc could not start", origin)));
  }
  TopologyPtr topo(raw);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  return topo;
}

// Whitespace-separated words in the text of `node`'s children named `child`.
std::size_t words_in(pugi::xml_node node, const char* child) {
  std::size_t n = 0;
  for (pugi::xml_node c : node.children(child)) {
    std::istringstream in(c.text().get());
    for (std::string word; in >> word;) ++n;
  }
  return n;
}

// What is wrong with `n` when it is a distance matrix (v2's <distances2> and <distances2hetero>,
// v1's <distances>) not of nbobjs x nbobjs values for nbobjs objects; empty otherwise. hwloc
// refuses such a file without saying why, so this says it for hwloc.
std::string distance_matrix_problem(pugi::xml_node n) {
  const std::string_view tag = n.name();
  const bool v2 = tag == "distances2" || tag == "distances2hetero";
  if (!v2 && tag != "distances") return {};
  const unsigned long long objects = n.attribute("nbobjs").as_ullong();
  // v2 writes the values as text, v1 one <latency value=.../> element each.
  const auto latencies = n.children("latency");
  const std::size_t values =
      v2 ? words_in(n, "u64values")
         : static_cast<std::size_t>(std::distance(latencies.begin(), latencies.end()));
  const std::size_t indexes = v2 ? words_in(n, "indexes") : objects;
  const std::string name = n.attribute("name").empty()
                               ? std::string()
                               : fmt::format(" name=\"{}\"", n.attribute("name").value());
  if (objects == 0 || objects > (1ULL << 16) || indexes != objects || values != objects * objects) {
    return fmt::format(
        "<{}{}> is a distance matrix of {} objects with {} indexes and {} values; it needs {} "
        "indexes and {} values ({} x {})",
        tag, name, objects, indexes, values, objects, objects * objects, objects, objects);
  }
  return {};
}

// The XML libhwloc imports, and the first malformed distance matrix in it (empty: none), which
// explains hwloc's refusal should it refuse.
struct PreparedXml {
  std::string text;
  std::string distance_problem;
};

// What is handed to libhwloc's XML import, read with pugixml first for two reasons.
//
// hwloc 3.0 writes XML version 3.0, which hwloc 2.x (Debian 12 ships 2.9) refuses outright; the
// hwloc regression files in ../shared/data are 3.0. The differences that matter are the ones
// hwloc 3.0's own exporter undoes when asked for v2 XML (HWLOC_TOPOLOGY_EXPORT_XML_FLAG_V2 in
// hwloc/topology-xml.c), so the same conversion is applied here before the import:
//   osdev_type    a bitmask (STORAGE 1, MEMORY 2, GPU 4, COPROC 8, NETWORK 16, OPENFABRICS 32,
//                 DMA 64) -> v2's single value (Block 0, GPU 1, Net 2, OFED 3, DMA 4, CoProc 5)
//   distances     kind VALUE_HOPS (32) -> MEANS_LATENCY (4)
//   <info> under <topology> (topology-wide, e.g. HostName) -> the root object's, before its
//                 children, as v2 had it
//   id="objN"     attributes v2 does not have, dropped
//
// And hwloc 2.9's importer trusts its input: an object with a cpuset but no complete_cpuset
// dereferences NULL (found by tests/fuzz/topology_fuzz.cpp, reproduced in plain C against
// Debian's libhwloc.so.15). hwloc's exporter always writes the four sets together, so an object
// with some but not all of them is refused here with a message instead.
core::Result<PreparedXml> prepare_for_hwloc(std::string_view xml, const std::string& origin) {
  PreparedXml prepared;
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_buffer(
      xml.data(), xml.size(), pugi::parse_default | pugi::parse_declaration | pugi::parse_doctype);
  if (!parsed) {
    return std::unexpected(
        topo_error(core::Code::kParse, fmt::format("{}: not well-formed XML at byte {}: {}", origin,
                                                   parsed.offset, parsed.description())));
  }
  pugi::xml_node top = doc.document_element();
  if (std::string_view(top.name()) != "topology") {
    return std::unexpected(
        topo_error(core::Code::kParse,
                   fmt::format("{}: root element is <{}>; an hwloc XML export's is <topology>",
                               origin, top.name())));
  }
  constexpr std::array<const char*, 4> kSets = {"cpuset", "complete_cpuset", "nodeset",
                                                "complete_nodeset"};
  std::vector<pugi::xml_node> stack{top};
  while (!stack.empty()) {
    pugi::xml_node n = stack.back();
    stack.pop_back();
    for (pugi::xml_node c : n.children()) stack.push_back(c);
    if (prepared.distance_problem.empty()) prepared.distance_problem = distance_matrix_problem(n);
    if (std::string_view(n.name()) != "object") continue;
    const auto present = std::count_if(kSets.begin(), kSets.end(),
                                       [&](const char* a) { return !n.attribute(a).empty(); });
    if (present != 0 && present != static_cast<long>(kSets.size())) {
      return std::unexpected(topo_error(
          core::Code::kParse,
          fmt::format("{}: {} object (gp_index {}) has {} of cpuset, complete_cpuset, nodeset and "
                      "complete_nodeset; hwloc writes all four or none",
                      origin, n.attribute("type").value(), n.attribute("gp_index").value(),
                      present)));
    }
  }
  // What hwloc gets is pugixml's UTF-8 rendering without the original declaration or doctype:
  // libxml2 (the parser of hwloc's plugin) refuses encodings it does not know, and hwloc 2.9's
  // plugin then leaks its parser state; hwloc's built-in parser (used when libhwloc-plugins is not
  // installed) skips such headers only up to a newline, which a raw rendering has none of.
  for (pugi::xml_node n = doc.first_child(); n;) {
    const pugi::xml_node next = n.next_sibling();
    if (n.type() == pugi::node_declaration || n.type() == pugi::node_doctype) doc.remove_child(n);
    n = next;
  }
  const bool convert = std::string_view(top.attribute("version").value()).starts_with("3.") &&
                       hwloc_get_api_version() < 0x30000;
  if (convert) top.attribute("version").set_value("2.0");
  pugi::xml_node root = top.child("object");
  stack.assign(1, top);
  while (convert && !stack.empty()) {
    pugi::xml_node n = stack.back();
    stack.pop_back();
    for (pugi::xml_node c : n.children()) stack.push_back(c);
    n.remove_attribute("id");
    if (std::string_view(n.name()) == "object" &&
        std::string_view(n.attribute("type").value()) == "OSDev") {
      const unsigned long types = n.attribute("osdev_type").as_ullong();
      const std::string_view name = n.attribute("name").value();
      const char* v2 = "5";  // CoProc
      if (types & (1 | 2)) {
        v2 = "0";
      } else if (types & 32) {
        v2 = "3";
      } else if (types & 16) {
        v2 = std::string_view(n.attribute("subtype").value()) == "BXI" ? "3" : "2";
      } else if (types & 64) {
        v2 = "4";
      } else if (types & 8) {
        v2 = name.starts_with("nvml") || name.starts_with("rsmi") ? "1" : "5";
      } else if (types & 4) {
        v2 = "1";
      }
      n.attribute("osdev_type").set_value(v2);
    }
    const std::string_view tag = n.name();
    if ((tag == "distances2" || tag == "distances2hetero") &&
        (n.attribute("kind").as_ullong() & 32)) {
      n.attribute("kind").set_value((n.attribute("kind").as_ullong() & ~32ULL) | 4ULL);
    }
  }
  if (convert && root) {
    std::vector<pugi::xml_node> infos;
    for (pugi::xml_node info : top.children("info")) infos.push_back(info);
    const pugi::xml_node first_child = root.child("object");  // infos precede children
    for (pugi::xml_node info : infos) {
      if (first_child) {
        root.insert_copy_before(info, first_child);
      } else {
        root.append_copy(info);
      }
      top.remove_child(info);
    }
  }
  std::ostringstream out;
  doc.save(out, "", pugi::format_raw | pugi::format_no_declaration);
  prepared.text = out.str();
  return prepared;
}

std::string root_info(hwloc_topology_t topo, const char* name) {
  const char* v = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), name);
  return v == nullptr ? std::string() : std::string(v);
}

// libhwloc 2.9's XML import trusts its input beyond what prepare_for_hwloc can check: a few
// changed bytes of a real export make it abort on an assertion (a nodeset of ",x00000002", in
// hwloc_bitmap_sscanf) or dereference NULL inside hwloc_topology_load. So the
// import and the conversion run in a child process (child_process.hpp), which sends back the
// graph in tessera's JSON or the error it met; a crash, a hang or a runaway allocation ends only
// the child. The limits are far above what any real export needs (a DGX-2 file loads in
// milliseconds and a few MiB).
constexpr detail::ChildLimits kImportLimits{.memory_bytes = 2ULL << 30,
                                            .cpu_seconds = 20,
                                            .wall_seconds = 30,
                                            .max_output_bytes = 256 << 20};

// In the child: hwloc's import of `text` and the conversion; the reply is {"topology": <to_json>}
// or {"error": {"code": N, "message": "..."}}.
std::string import_in_child(hwloc_topology_t topo, const PreparedXml& xml,
                            const std::string& origin, const TopologyOptions& options) {
  const auto error_reply = [](core::Code code, const std::string& message) {
    const nlohmann::json reply = {
        {"error", {{"code", static_cast<int>(code)}, {"message", message}}}};
    return reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  // hwloc wants the terminating NUL inside `size`. Imported XML never describes this machine
  // (hwloc sets is_thissystem only when HWLOC_THISSYSTEM=1 asks), so nothing is bound.
  const std::string& text = xml.text;
  if (hwloc_topology_set_xmlbuffer(topo, text.c_str(), static_cast<int>(text.size() + 1)) != 0 ||
      hwloc_topology_load(topo) != 0) {
    if (!xml.distance_problem.empty()) {
      return error_reply(core::Code::kParse,
                         fmt::format("{}: hwloc could not import it as an hwloc XML topology: {}",
                                     origin, xml.distance_problem));
    }
    return error_reply(core::Code::kParse,
                       fmt::format("{}: hwloc could not import it as an hwloc XML topology ({}); "
                                   "export one with `lstopo --of xml FILE`",
                                   origin, std::strerror(errno)));
  }
  std::string hostname = root_info(topo, "HostName");
  if (hostname.empty()) hostname = detail::hostname_from_origin(origin);
  Options opt;
  opt.topology = options;
  auto t = convert(topo, std::move(hostname), "hwloc-xml:" + origin, origin, opt);
  if (!t) return error_reply(t.error().code(), t.error().message());
  try {
    return nlohmann::json{{"topology", to_json(*t)}}.dump();
  } catch (const nlohmann::json::type_error&) {
    return error_reply(core::Code::kParse,
                       fmt::format("{}: names in the file (host, GPU models, UUIDs) are not valid "
                                   "UTF-8",
                                   origin));
  }
}

// The parent's side of import_in_child: the topology is rebuilt and checked by
// topology_from_json like any JSON file, so the child's output is trusted no more than the file.
core::Result<HostTopology> read_child_reply(const std::string& reply, const std::string& origin) {
  const auto j = nlohmann::json::parse(reply, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("topology")) return topology_from_json(j["topology"], origin);
  if (j.is_object() && j.contains("error")) {
    const nlohmann::json& e = j["error"];
    if (e.is_object() && e.contains("code") && e["code"].is_number_integer() &&
        e.contains("message") && e["message"].is_string()) {
      const auto code = e["code"].get<std::int64_t>();
      if (code >= 0 && code <= static_cast<std::int64_t>(core::Code::kInternal)) {
        return std::unexpected(
            topo_error(static_cast<core::Code>(code), e["message"].get<std::string>()));
      }
    }
  }
  return std::unexpected(topo_error(
      core::Code::kInternal,
      fmt::format("{}: the process importing it with hwloc sent a reply tessera cannot read",
                  origin)));
}

}  // namespace

core::Result<HostTopology> parse_hwloc_xml(std::string_view xml, const std::string& origin,
                                           const TopologyOptions& options) {
  TESSERA_TRY(detail::check_options(options, origin));
  if (xml.size() >= static_cast<std::size_t>(INT_MAX)) {
    return std::unexpected(topo_error(core::Code::kInvalidArgument,
                                      fmt::format("{}: {} bytes is too large for hwloc's XML "
                                                  "import",
                                                  origin, xml.size())));
  }
  TESSERA_ASSIGN_OR_RETURN(const PreparedXml prepared, prepare_for_hwloc(xml, origin));
  // The handle is made here: hwloc's setup of its components takes a process-wide lock, which
  // another thread of this process may hold at the moment of the fork, so the child never takes
  // it.
  TESSERA_ASSIGN_OR_RETURN(TopologyPtr topo, new_topology(origin));
  const auto reply = detail::run_in_child(
      [&] { return import_in_child(topo.get(), prepared, origin, options); }, kImportLimits);
  if (!reply) {
    const detail::ChildFailure& f = reply.error();
    return std::unexpected(topo_error(
        core::Code::kParse,
        fmt::format("{}: hwloc {} importing this file{}; export one with `lstopo --of xml FILE`",
                    origin, f.what,
                    f.printed.empty() ? "" : fmt::format(" (it printed: {})", f.printed))));
  }
  return read_child_reply(*reply, origin);
}

core::Result<HostTopology> load_hwloc_xml(const std::string& path, const TopologyOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(const std::string text, detail::read_text_file(path));
  return parse_hwloc_xml(text, path, options);
}

core::Result<HostTopology> discover_host(const TopologyOptions& options) {
  const std::string origin = "this host";
  TESSERA_TRY(detail::check_options(options, origin));
  TESSERA_ASSIGN_OR_RETURN(TopologyPtr topo, new_topology(origin));
  hwloc_topology_set_io_types_filter(topo.get(), HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topo.get()) != 0) {
    return std::unexpected(
        topo_error(core::Code::kUnsupported,
                   fmt::format("{}: hwloc could not read the machine's topology ({})", origin,
                               std::strerror(errno))));
  }
  char name[256] = {};
  std::string hostname = gethostname(name, sizeof(name) - 1) == 0 ? name : "";
  if (hostname.empty()) hostname = root_info(topo.get(), "HostName");
  Options opt;
  opt.topology = options;
  opt.live = true;
  return convert(topo.get(), hostname.empty() ? "localhost" : hostname, "hwloc:live", origin, opt);
}

}  // namespace tessera::hw
