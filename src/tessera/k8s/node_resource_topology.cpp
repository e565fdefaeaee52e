#include "tessera/k8s/node_resource_topology.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <regex>

#include "tessera/core/try.hpp"
#include "tessera/k8s/pod_translation.hpp"

namespace tessera::k8s {
namespace {

// ACPI SLIT distances (ACPI 6.5 §5.2.17: a node's distance to itself is normalised to 10, others
// relative to it). Where the topology carries the firmware's matrix (hwloc's NUMALatency) it is
// used; where it does not (NCCL XML, presets), fixed values stand in:
//   across sockets: 21, what the 2-socket Xeon DGX-2 reports (../shared/data/topology/hwloc/
//     nvidiaDGX2.xml, NUMALatency 10 21 21 10) and what `numactl --hardware` shows on most
//     2-socket Intel servers; the POWER8 export beside it reports 40, so this is one firmware's
//     value, not a law.
//   within a socket: 12. ASSUMPTION: no file in ../shared/data has two NUMA nodes on one socket;
//     AMD EPYC firmware in NPS2/NPS4 mode reports 12 between them, Intel Sub-NUMA Clustering 11
//     or 12. Only the order (10 < same socket < across sockets) matters to NRT consumers.
constexpr std::int64_t kLocalDistance = 10;
constexpr std::int64_t kSameSocketDistance = 12;
constexpr std::int64_t kCrossSocketDistance = 21;

nlohmann::json resource(std::string_view name, const std::string& capacity,
                        const std::string& allocatable, const std::string& available) {
  return {{"name", name},
          {"capacity", capacity},
          {"allocatable", allocatable},
          {"available", available}};
}

// Logical CPUs of a core group: its PU list, or one per core when the source listed no PUs.
int logical_cpus(const hw::TopoNode& group) {
  return group.cpus.empty() ? group.cores : static_cast<int>(group.cpus.size());
}

void emit(YAML::Emitter& out, const nlohmann::json& v);

bool yaml_would_retype(const std::string& s) {
  // YAML 1.1 and 1.2 core schema plain scalars that are not strings: null, booleans, numbers.
  static const std::regex kNonString(
      R"(^(~|null|Null|NULL|true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|y|Y|n|N)$)"
      R"(|^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$)"
      R"(|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$|^0x[0-9a-fA-F]+$|^0o[0-7]+$)");
  return s.empty() || std::regex_match(s, kNonString);
}

void emit(YAML::Emitter& out, const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [key, value] : v.items()) {
        out << YAML::Key << key << YAML::Value;
        emit(out, value);
      }
      out << YAML::EndMap;
      break;
    case nlohmann::json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& item : v) emit(out, item);
      out << YAML::EndSeq;
      break;
    case nlohmann::json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      if (yaml_would_retype(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case nlohmann::json::value_t::boolean: out << v.get<bool>(); break;
    case nlohmann::json::value_t::number_integer: out << v.get<std::int64_t>(); break;
    case nlohmann::json::value_t::number_unsigned: out << v.get<std::uint64_t>(); break;
    case nlohmann::json::value_t::number_float: out << v.get<double>(); break;
    default: out << YAML::Null; break;
  }
}

}  // namespace

core::Status validate(const NrtOptions& options) {
  constexpr std::array kPolicies = {"none", "best-effort", "restricted", "single-numa-node"};
  constexpr std::array kScopes = {"container", "pod"};
  if (std::ranges::find(kPolicies, options.topology_manager_policy) == kPolicies.end()) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "topology manager policy '{}' is not one of the kubelet's: none, "
                       "best-effort, restricted, single-numa-node",
                       options.topology_manager_policy);
  }
  if (std::ranges::find(kScopes, options.topology_manager_scope) == kScopes.end()) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "topology manager scope '{}' is not one of the kubelet's: container, pod",
                       options.topology_manager_scope);
  }
  return {};
}

std::string topology_policy(const NrtOptions& options) {
  const std::string& p = options.topology_manager_policy;
  const std::string level = options.topology_manager_scope == "pod" ? "PodLevel" : "ContainerLevel";
  if (p == "single-numa-node") return "SingleNUMANode" + level;
  if (p == "restricted") return "Restricted" + level;
  if (p == "best-effort") return "BestEffort" + level;
  return "None";
}

std::int64_t numa_distance(const hw::HostTopology& topology, int i, int j) {
  if (const auto& d = topology.numa_distances(); !d.empty()) {
    const std::size_t n = topology.numa_nodes().size();
    return d[static_cast<std::size_t>(i) * n + static_cast<std::size_t>(j)];
  }
  if (i == j) return kLocalDistance;
  return topology.numa(i).socket == topology.numa(j).socket ? kSameSocketDistance
                                                            : kCrossSocketDistance;
}

std::string count_quantity(std::int64_t n) {
  return fmt::format("{}", n);
}

std::string bytes_quantity(std::int64_t bytes) {
  constexpr std::array<std::pair<std::string_view, int>, 6> kSuffixes = {
      {{"Ei", 60}, {"Pi", 50}, {"Ti", 40}, {"Gi", 30}, {"Mi", 20}, {"Ki", 10}}};
  if (bytes != 0) {
    for (const auto& [suffix, shift] : kSuffixes) {
      const std::int64_t unit = std::int64_t{1} << shift;
      if (bytes % unit == 0) return fmt::format("{}{}", bytes / unit, suffix);
    }
  }
  return fmt::format("{}", bytes);
}

core::Result<std::int64_t> parse_bytes(std::string_view text, std::string_view what) {
  const auto bad = [&](std::string_view why) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "{} '{}': {}; give bytes or a Kubernetes quantity such as 64Gi", what, text,
                       why);
  };
  auto q = parse_quantity(text);
  if (!q) return bad(q.error().message());
  if (q->negative || q->mantissa == 0) return bad("not a positive size");
  auto bytes = quantity_ceil(*q);
  if (!bytes) return bad("more than 2^63 bytes");
  return *bytes;
}

core::Status validate_object_name(std::string_view name) {
  // RFC 1123 subdomain, as Kubernetes' IsDNS1123Subdomain checks it.
  static const std::regex kSubdomain(
      R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$)");
  if (name.empty() || name.size() > 253 ||
      !std::regex_match(name.begin(), name.end(), kSubdomain)) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "node name '{}' is not a Kubernetes object name (lowercase letters, digits, "
                       "'-' and '.', starting and ending with a letter or digit, at most 253 "
                       "characters); pass the node's name as Kubernetes knows it",
                       name);
  }
  return {};
}

core::Result<nlohmann::json> node_resource_topology(const hw::HostTopology& topology,
                                                    std::string_view node_name,
                                                    const cluster::NodeState* allocation,
                                                    const NrtOptions& options) {
  TESSERA_TRY(validate(options));
  TESSERA_TRY(validate_object_name(node_name));
  if (allocation != nullptr && &allocation->topology() != &topology) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "node '{}': the allocation given is for another topology", node_name);
  }
  const int numa_count = static_cast<int>(topology.numa_nodes().size());

  nlohmann::json zones = nlohmann::json::array();
  for (int j = 0; j < numa_count; ++j) {
    const hw::TopoNode& numa = topology.numa(j);
    int cpus = 0, cpus_used = 0;
    for (int g : topology.core_groups_of_numa(j)) {
      const int n = logical_cpus(topology.core_group(g));
      cpus += n;
      if (allocation != nullptr &&
          allocation->core_group_owner()[static_cast<std::size_t>(g)] >= 0) {
        cpus_used += n;
      }
    }
    const auto gpus = static_cast<int>(topology.gpus_of_numa(j).size());
    int gpus_used = 0;
    std::int64_t memory_used = 0;
    if (allocation != nullptr) {
      for (int g : topology.gpus_of_numa(j)) {
        if (allocation->gpu_owner()[static_cast<std::size_t>(g)] >= 0) ++gpus_used;
      }
      memory_used = allocation->numa_memory_used()[static_cast<std::size_t>(j)];
    }

    nlohmann::json resources = nlohmann::json::array();
    const auto reserved_cpus = static_cast<int>(numa.reserved_cpus.size());
    resources.push_back(resource("cpu", count_quantity(cpus + reserved_cpus), count_quantity(cpus),
                                 count_quantity(cpus - cpus_used)));
    if (numa.local_memory_bytes) {
      // The builder keeps the reservation within the memory.
      const std::int64_t allocatable = *numa.local_memory_bytes - numa.reserved_memory_bytes;
      resources.push_back(
          resource("memory", bytes_quantity(*numa.local_memory_bytes), bytes_quantity(allocatable),
                   bytes_quantity(std::max<std::int64_t>(allocatable - memory_used, 0))));
    }
    if (gpus > 0) {
      resources.push_back(resource(kGpuResource, count_quantity(gpus), count_quantity(gpus),
                                   count_quantity(gpus - gpus_used)));
    }
    nlohmann::json costs = nlohmann::json::array();
    for (int k = 0; k < numa_count; ++k) {
      costs.push_back({{"name", fmt::format("node-{}", topology.numa(k).os_index)},
                       {"value", numa_distance(topology, j, k)}});
    }
    zones.push_back({{"name", fmt::format("node-{}", numa.os_index)},
                     {"type", "Node"},
                     {"costs", std::move(costs)},
                     {"resources", std::move(resources)}});
  }

  nlohmann::json attributes = nlohmann::json::array();
  // Attribute names as NFD's topology-updater and scheduler-plugins use them
  // (scheduler-plugins pkg/noderesourcetopology README, "Topology manager configuration").
  attributes.push_back(
      {{"name", "topologyManagerPolicy"}, {"value", options.topology_manager_policy}});
  attributes.push_back(
      {{"name", "topologyManagerScope"}, {"value", options.topology_manager_scope}});

  return nlohmann::json{{"apiVersion", kNrtApiVersion},
                        {"kind", kNrtKind},
                        {"metadata", {{"name", node_name}}},
                        {"topologyPolicies", nlohmann::json::array({topology_policy(options)})},
                        {"attributes", std::move(attributes)},
                        {"zones", std::move(zones)}};
}

core::Result<nlohmann::json> node_resource_topology(const cluster::NodeState& node,
                                                    const NrtOptions& options) {
  return node_resource_topology(node.topology(), node.name(), &node, options);
}

std::string to_yaml(const nlohmann::json& value) {
  YAML::Emitter out;
  emit(out, value);
  return std::string(out.c_str()) + "\n";
}

}  // namespace tessera::k8s
