// HostTopology from an NCCL topology XML (NCCL_TOPO_FILE), read with pugixml:
//   <system version="1">
//     <cpu numaid="0" affinity="00000000,00ffffff" arch="x86_64" vendor=... >
//       <pci busid="ffff:ff:01.0" class="0x060400" ...>            a PCIe switch (nests)
//         <pci busid="0003:00:00.0" class="0x030200" ...>           a GPU
//           <gpu dev="0" ...><nvlink target="0004:00:00.0" count="12" tclass="0x030200"/></gpu>
//         </pci>
//       </pci>
//     </cpu>
//   </system>
// Each <cpu> is a NUMA node (numaid) whose CPUs are its affinity mask. NCCL lists logical CPUs,
// not cores: each is taken as one core (ASSUMPTION, true of the Azure files this was written
// against: ND A100 v4 and ND H100 v5 have 96 vCPUs that Microsoft Learn's size pages call "96
// physical" cores, i.e. SMT is off in those VMs). The file names no sockets:
// TopologyOptions::nccl_numa_per_socket groups NUMA nodes (in numaid order) into sockets.
// Links: GPUs whose nearest common ancestor is a <pci> element (a switch) -> "pcie-switch";
// <nvlink target=GPU> -> "nvlink"; GPUs with NVLinks to the same NVSwitch (tclass 0x068000) ->
// "nvswitch". An NVLink to the GPU itself (NC A100 v4's file has them) is ignored.
// NCCL files name no GPU model and no memory size: a GPU's model comes from its PCI device id
// (pci_ids.hpp) and NUMA nodes' memory stays unknown unless TopologyOptions gives it.
#include <algorithm>
#include <cctype>
#include <map>
#include <pugixml.hpp>
#include <set>

#include "tessera/core/try.hpp"
#include "tessera/hw/pci_ids.hpp"
#include "tessera/hw/topology/internal/source_util.hpp"
#include "tessera/hw/topology/sources.hpp"

namespace tessera::hw {
namespace {

core::Error nccl_error(core::Code code, std::string message) {
  return core::Error(core::Domain::kTopology, code, std::move(message));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "0x030200" -> 0x030200; -1 when not hex.
long hex_value(std::string_view s) {
  if (s.starts_with("0x") || s.starts_with("0X")) s.remove_prefix(2);
  if (s.empty() || s.size() > 8) return -1;
  long v = 0;
  for (char c : s) {
    const int d = std::isdigit(static_cast<unsigned char>(c))
                      ? c - '0'
                      : (std::isxdigit(static_cast<unsigned char>(c))
                             ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10
                             : -1);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// PCI class code's base class and subclass (0x0302 for "0x030200"; NCCL writes the 24-bit code,
// a 16-bit one is accepted too).
long class_and_subclass(std::string_view attr) {
  const long v = hex_value(attr);
  if (v < 0) return -1;
  std::string_view digits = attr;
  if (digits.starts_with("0x") || digits.starts_with("0X")) digits.remove_prefix(2);
  return digits.size() > 4 ? v >> 8 : v;
}

constexpr long kClassVga = 0x0300, kClass3d = 0x0302;  // PCI SIG class codes
constexpr long kClassOtherBridge = 0x0680;             // how NVSwitches enumerate

// Linux's largest configurable CPU count (NR_CPUS, CONFIG_NR_CPUS_RANGE_END on x86_64 with
// MAXSMP) is 8192: 256 groups of 32.
constexpr std::size_t kMaxCpumaskGroups = 256;

// Linux cpumask ("00000000,0000ffff,ff000000": 32-bit hex groups, most significant first) to CPU
// numbers in increasing order.
core::Result<std::vector<int>> parse_cpumask(std::string_view mask, const std::string& where) {
  std::vector<std::string_view> groups;
  for (std::size_t start = 0;;) {
    const std::size_t comma = mask.find(',', start);
    groups.push_back(mask.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (groups.size() > kMaxCpumaskGroups) {
    return std::unexpected(nccl_error(
        core::Code::kInvalidArgument,
        fmt::format("{}: affinity has {} 32-bit groups; more than {} CPUs is not a real machine",
                    where, groups.size(), 32 * kMaxCpumaskGroups)));
  }
  std::vector<int> cpus;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::string_view group = groups[groups.size() - 1 - g];  // least significant first
    const long bits = group.size() <= 8 && !group.starts_with("0x") ? hex_value(group) : -1;
    if (bits < 0) {
      return std::unexpected(nccl_error(
          core::Code::kParse,
          fmt::format("{}: affinity '{}' is not a Linux cpumask (comma-separated groups of up to "
                      "8 hex digits, most significant first)",
                      where, mask)));
    }
    for (int b = 0; b < 32; ++b) {
      if ((static_cast<unsigned long>(bits) >> b) & 1UL) {
        cpus.push_back(static_cast<int>(g) * 32 + b);
      }
    }
  }
  return cpus;
}

struct GpuFound {
  pugi::xml_node pci;
  TopoNode node;
  int numa = -1;  // index of its <cpu> in numaid order
};

struct Cpu {
  pugi::xml_node xml;
  int numaid = 0;
  std::vector<int> cpus;
};

void collect_gpus(pugi::xml_node parent, int numa, std::vector<GpuFound>& gpus) {
  for (pugi::xml_node pci : parent.children("pci")) {
    const long cls = class_and_subclass(pci.attribute("class").value());
    const pugi::xml_attribute vendor = pci.attribute("vendor");
    const bool nvidia = !vendor || hex_value(vendor.value()) == kNvidiaPciVendor;
    if ((cls == kClass3d || cls == kClassVga) && nvidia) {
      GpuFound g;
      g.pci = pci;
      g.numa = numa;
      g.node.pci_bus_id = lower(pci.attribute("busid").value());
      g.node.os_index = pci.child("gpu").attribute("dev").as_int(-1);
      const long device = hex_value(pci.attribute("device").value());
      if (const auto model =
              device >= 0 ? nvidia_gpu_model(static_cast<unsigned>(device)) : std::nullopt) {
        g.node.model = *model;
      }
      gpus.push_back(std::move(g));
    }
    collect_gpus(pci, numa, gpus);
  }
}

pugi::xml_node common_ancestor(pugi::xml_node a, pugi::xml_node b) {
  std::set<pugi::xml_node> above;
  for (pugi::xml_node p = a.parent(); p; p = p.parent()) above.insert(p);
  for (pugi::xml_node p = b.parent(); p; p = p.parent()) {
    if (above.contains(p)) return p;
  }
  return {};
}

}  // namespace

core::Result<HostTopology> parse_nccl_xml(std::string_view xml, const std::string& origin,
                                          const TopologyOptions& options) {
  TESSERA_TRY(detail::check_options(options, origin));
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size());
  if (!parsed) {
    return std::unexpected(
        nccl_error(core::Code::kParse, fmt::format("{}: not well-formed XML at byte {}: {}", origin,
                                                   parsed.offset, parsed.description())));
  }
  const pugi::xml_node root = doc.document_element();
  const std::string_view root_name = root.name();
  if (root_name == "graphs" || root_name == "graph") {
    return std::unexpected(nccl_error(
        core::Code::kInvalidArgument,
        fmt::format("{}: this is an NCCL graph file (<{}>: the rings and trees NCCL_GRAPH_FILE "
                    "pins), not a topology; give the machine's NCCL_TOPO_FILE (<system>) instead",
                    origin, root_name)));
  }
  if (root_name != "system") {
    return std::unexpected(
        nccl_error(core::Code::kParse,
                   fmt::format("{}: root element is <{}>; an NCCL topology file's is <system>",
                               origin, root_name)));
  }

  // NUMA nodes, in numaid order.
  std::vector<Cpu> cpus;
  std::set<int> seen_numa;
  for (pugi::xml_node cpu : root.children("cpu")) {
    const std::string where = fmt::format("{}: <cpu> #{}", origin, cpus.size());
    const pugi::xml_attribute numaid = cpu.attribute("numaid");
    char* end = nullptr;
    const long id = numaid ? std::strtol(numaid.value(), &end, 10) : -1;
    if (!numaid || end == numaid.value() || *end != '\0' || id < 0 || id > 4095) {
      return std::unexpected(nccl_error(
          core::Code::kParse, fmt::format("{}: numaid '{}' is not a NUMA node number (0-4095)",
                                          where, numaid ? numaid.value() : "(missing)")));
    }
    if (!seen_numa.insert(static_cast<int>(id)).second) {
      return std::unexpected(nccl_error(core::Code::kInvalidArgument,
                                        fmt::format("{}: numaid {} appears twice", where, id)));
    }
    const pugi::xml_attribute affinity = cpu.attribute("affinity");
    if (!affinity) {
      return std::unexpected(nccl_error(
          core::Code::kParse,
          fmt::format("{} (numaid {}): no affinity mask, so its CPUs are unknown", where, id)));
    }
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<int> mask,
        parse_cpumask(affinity.value(), fmt::format("{} (numaid {})", where, id)));
    cpus.push_back(Cpu{cpu, static_cast<int>(id), std::move(mask)});
  }
  if (cpus.empty()) {
    return std::unexpected(
        nccl_error(core::Code::kInvalidArgument,
                   fmt::format("{}: <system> has no <cpu> element, so no NUMA node", origin)));
  }
  std::sort(cpus.begin(), cpus.end(),
            [](const Cpu& a, const Cpu& b) { return a.numaid < b.numaid; });

  HostTopologyBuilder b(detail::hostname_from_origin(origin), "nccl-xml:" + origin);
  const std::size_t per_socket =
      options.nccl_numa_per_socket > 0 ? static_cast<std::size_t>(options.nccl_numa_per_socket) : 1;
  int socket = -1;
  detail::CoreGroups groups(options);
  for (std::size_t j = 0; j < cpus.size(); ++j) {
    if (j % per_socket == 0) socket = b.add_socket(static_cast<int>(j / per_socket));
    b.add_numa(socket, cpus[j].numaid, options.numa_memory_bytes);
    std::vector<std::vector<int>> cores;
    for (int c : cpus[j].cpus) cores.push_back({c});
    groups.add(b, static_cast<int>(j), cpus[j].numaid, cores);
  }
  TESSERA_TRY(groups.check(origin));

  // GPUs, in document order within NUMA order.
  std::vector<GpuFound> gpus;
  for (std::size_t j = 0; j < cpus.size(); ++j)
    collect_gpus(cpus[j].xml, static_cast<int>(j), gpus);
  std::map<std::string, int> by_bus;
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    if (gpus[k].node.os_index < 0) gpus[k].node.os_index = static_cast<int>(k);
    by_bus.emplace(gpus[k].node.pci_bus_id, static_cast<int>(k));
    b.add_gpu(gpus[k].numa, gpus[k].node);
  }

  detail::GpuLinks links;
  for (std::size_t x = 0; x < gpus.size(); ++x) {
    for (std::size_t y = x + 1; y < gpus.size(); ++y) {
      if (std::string_view(common_ancestor(gpus[x].pci, gpus[y].pci).name()) == "pci") {
        links.add(static_cast<int>(x), static_cast<int>(y), "pcie-switch");
      }
    }
  }
  std::map<std::string, std::vector<int>> by_nvswitch;
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    for (pugi::xml_node link : gpus[k].pci.child("gpu").children("nvlink")) {
      const std::string target = lower(link.attribute("target").value());
      const long tclass = class_and_subclass(link.attribute("tclass").value());
      if (tclass == kClassOtherBridge) {
        by_nvswitch[target].push_back(static_cast<int>(k));
      } else if (auto it = by_bus.find(target);
                 it != by_bus.end() && it->second != static_cast<int>(k)) {
        links.add(static_cast<int>(k), it->second, "nvlink");
      }
    }
  }
  for (const auto& [sw, group] : by_nvswitch) {
    for (std::size_t x = 0; x < group.size(); ++x) {
      for (std::size_t y = x + 1; y < group.size(); ++y) {
        if (group[x] != group[y]) links.add(group[x], group[y], "nvswitch");
      }
    }
  }
  links.apply(b);
  return core::with_context(std::move(b).build(), origin);
}

core::Result<HostTopology> load_nccl_xml(const std::string& path, const TopologyOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(const std::string text, detail::read_text_file(path));
  return parse_nccl_xml(text, path, options);
}

}  // namespace tessera::hw
