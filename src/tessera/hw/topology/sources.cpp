// load_topology_file (which of the three file formats a file is) and the loaders' shared helpers.
#include "tessera/hw/topology/sources.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "tessera/core/file_read.hpp"
#include "tessera/core/try.hpp"
#include "tessera/hw/topology/internal/source_util.hpp"
#include "tessera/hw/topology/json.hpp"

namespace tessera::hw {
namespace detail {

core::Result<std::string> read_text_file(const std::string& path) {
  return core::read_file(path, {.what = "topology file",
                                .domain = core::Domain::kTopology,
                                .max_bytes = core::kMaxDocumentBytes});
}

core::Status check_options(const TopologyOptions& options, const std::string& origin) {
  if (options.cores_per_group < 1) {
    return core::failf(core::Domain::kTopology, core::Code::kInvalidArgument,
                       "{}: cores per group is {}; it must be at least 1", origin,
                       options.cores_per_group);
  }
  if (options.nccl_numa_per_socket < 0) {
    return core::failf(core::Domain::kTopology, core::Code::kInvalidArgument,
                       "{}: NUMA nodes per socket is {}; give 0 (one socket per NUMA node) or more",
                       origin, options.nccl_numa_per_socket);
  }
  return {};
}

std::string hostname_from_origin(const std::string& origin) {
  std::string stem = std::filesystem::path(origin).stem().string();
  return stem.empty() ? "host" : stem;
}

void add_core_groups(HostTopologyBuilder& builder, int numa,
                     const std::vector<std::vector<int>>& cores, int cores_per_group) {
  const std::size_t per = static_cast<std::size_t>(cores_per_group);
  for (std::size_t first = 0; first < cores.size(); first += per) {
    const std::size_t last = std::min(cores.size(), first + per);
    std::vector<int> cpus;
    for (std::size_t c = first; c < last; ++c) {
      cpus.insert(cpus.end(), cores[c].begin(), cores[c].end());
    }
    std::sort(cpus.begin(), cpus.end());
    builder.add_core_group(numa, std::move(cpus), static_cast<int>(last - first));
  }
}

namespace {
int link_strength(const std::string& via) {
  if (via == "nvswitch") return 3;
  if (via == "nvlink") return 2;
  if (via == "pcie-switch") return 1;
  return 0;
}
}  // namespace

void GpuLinks::add(int a, int b, const std::string& via) {
  const std::pair<int, int> key{std::min(a, b), std::max(a, b)};
  auto [it, inserted] = links_.try_emplace(key, via);
  if (!inserted && link_strength(via) > link_strength(it->second)) it->second = via;
}

void GpuLinks::apply(HostTopologyBuilder& builder) const {
  for (const auto& [pair, via] : links_) builder.add_gpu_link(pair.first, pair.second, via);
}

}  // namespace detail

namespace {

enum class FileFormat { kHwloc, kNccl, kNcclGraph, kJson, kUnknown };

// The first element's name after the XML declaration, DOCTYPE and comments; or '{' for JSON.
FileFormat sniff(std::string_view text) {
  std::size_t i = 0;
  if (text.starts_with("\xEF\xBB\xBF")) i = 3;  // UTF-8 byte order mark
  const auto skip_space = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  skip_space();
  if (i < text.size() && text[i] == '{') return FileFormat::kJson;
  while (i < text.size() && text[i] == '<') {
    const std::string_view rest = text.substr(i + 1);
    if (rest.starts_with("?") || rest.starts_with("!")) {
      const std::string_view end = rest.starts_with("!--") ? "-->" : ">";
      const std::size_t close = text.find(end, i + 1);
      if (close == std::string_view::npos) return FileFormat::kUnknown;
      i = close + end.size();
      skip_space();
      continue;
    }
    std::size_t n = 0;
    while (n < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[n])) ||
                               rest[n] == '_' || rest[n] == '-' || rest[n] == ':')) {
      ++n;
    }
    const std::string_view name = rest.substr(0, n);
    if (name == "topology") return FileFormat::kHwloc;
    if (name == "system") return FileFormat::kNccl;
    if (name == "graphs" || name == "graph") return FileFormat::kNcclGraph;
    return FileFormat::kUnknown;
  }
  return FileFormat::kUnknown;
}

}  // namespace

core::Result<HostTopology> load_topology_file(const std::string& path,
                                              const TopologyOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(const std::string text, detail::read_text_file(path));
  switch (sniff(text)) {
    case FileFormat::kHwloc: return parse_hwloc_xml(text, path, options);
    case FileFormat::kNccl:
    case FileFormat::kNcclGraph:  // parse_nccl_xml says why a graph file is not a topology
      return parse_nccl_xml(text, path, options);
    case FileFormat::kJson: return load_topology_json(path);
    case FileFormat::kUnknown: break;
  }
  return core::failf(core::Domain::kTopology, core::Code::kParse,
                     "{}: not a topology file tessera reads: expected an hwloc XML export "
                     "(<topology>, from `lstopo --of xml`), an NCCL topology XML (<system>, "
                     "NCCL_TOPO_FILE) or tessera's topology JSON ('{{')",
                     path);
}

}  // namespace tessera::hw
