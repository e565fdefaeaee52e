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
  if (options.numa_memory_bytes && *options.numa_memory_bytes <= 0) {
    return core::failf(core::Domain::kTopology, core::Code::kInvalidArgument,
                       "{}: NUMA node memory of {} bytes; give a positive size", origin,
                       *options.numa_memory_bytes);
  }
  for (int c : options.reserved_cpus) {
    if (c < 0) {
      return core::failf(core::Domain::kTopology, core::Code::kInvalidArgument,
                         "{}: reserved CPU {} is not a CPU number", origin, c);
    }
  }
  for (const auto& [numa, bytes] : options.reserved_memory_bytes) {
    if (numa < 0 || bytes < 0) {
      return core::failf(core::Domain::kTopology, core::Code::kInvalidArgument,
                         "{}: {} bytes reserved on NUMA node {}; both must be >= 0", origin, bytes,
                         numa);
    }
  }
  return {};
}

std::string hostname_from_origin(const std::string& origin) {
  std::string stem = std::filesystem::path(origin).stem().string();
  return stem.empty() ? "host" : stem;
}

CoreGroups::CoreGroups(const TopologyOptions& options)
    : options_(options), reserved_(options.reserved_cpus.begin(), options.reserved_cpus.end()) {}

void CoreGroups::add(HostTopologyBuilder& builder, int numa, int os_numa,
                     const std::vector<std::vector<int>>& cores) {
  if (os_numa >= 0) numa_seen_.insert(os_numa);
  std::vector<std::vector<int>> free;
  std::vector<int> reserved;
  for (const std::vector<int>& core : cores) {
    cpus_seen_.insert(core.begin(), core.end());
    if (std::ranges::any_of(core, [&](int pu) { return reserved_.contains(pu); })) {
      reserved.insert(reserved.end(), core.begin(), core.end());
    } else {
      free.push_back(core);
    }
  }
  const std::size_t per = static_cast<std::size_t>(options_.cores_per_group);
  for (std::size_t first = 0; first < free.size(); first += per) {
    const std::size_t last = std::min(free.size(), first + per);
    std::vector<int> cpus;
    for (std::size_t c = first; c < last; ++c) {
      cpus.insert(cpus.end(), free[c].begin(), free[c].end());
    }
    std::sort(cpus.begin(), cpus.end());
    builder.add_core_group(numa, std::move(cpus), static_cast<int>(last - first));
  }
  const auto memory = options_.reserved_memory_bytes.find(os_numa);
  const std::int64_t reserved_memory =
      os_numa >= 0 && memory != options_.reserved_memory_bytes.end() ? memory->second : 0;
  if (!reserved.empty() || reserved_memory != 0) {
    builder.reserve(numa, std::move(reserved), reserved_memory);
  }
}

core::Status CoreGroups::check(const std::string& origin) const {
  for (int c : reserved_) {
    if (!cpus_seen_.contains(c)) {
      return core::failf(core::Domain::kTopology, core::Code::kInvalidArgument,
                         "{}: reserved CPU {} is not one of this host's {} CPUs", origin, c,
                         cpus_seen_.size());
    }
  }
  for (const auto& [numa, bytes] : options_.reserved_memory_bytes) {
    if (!numa_seen_.contains(numa)) {
      return core::failf(core::Domain::kTopology, core::Code::kInvalidArgument,
                         "{}: memory is reserved on NUMA node {}, which this host does not have "
                         "(as a NUMA node with CPUs)",
                         origin, numa);
    }
  }
  return {};
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
    case FileFormat::kJson: {
      if (!options.reserved_cpus.empty() || !options.reserved_memory_bytes.empty()) {
        return core::failf(core::Domain::kTopology, core::Code::kInvalidArgument,
                           "{}: reservations apply where tessera cuts the cores into groups (the "
                           "host, hwloc or NCCL XML); a tessera topology JSON has its groups cut "
                           "already: give its NUMA nodes reserved_cpus and reserved_memory_bytes",
                           path);
      }
      TESSERA_ASSIGN_OR_RETURN(HostTopology t, load_topology_json(path));
      if (options.numa_memory_bytes) {
        TESSERA_TRY(core::with_context(t.assume_numa_memory(*options.numa_memory_bytes), path));
      }
      return t;
    }
    case FileFormat::kUnknown: break;
  }
  return core::failf(core::Domain::kTopology, core::Code::kParse,
                     "{}: not a topology file tessera reads: expected an hwloc XML export "
                     "(<topology>, from `lstopo --of xml`), an NCCL topology XML (<system>, "
                     "NCCL_TOPO_FILE) or tessera's topology JSON ('{{')",
                     path);
}

}  // namespace tessera::hw
