#include "tessera/hw/topology/json.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "tessera/core/try.hpp"
#include "tessera/hw/topology/internal/source_util.hpp"

namespace tessera::hw {

namespace {

using nlohmann::json;

// The fields each kind of vertex carries in the JSON (beyond id and kind).
const std::map<std::string, std::set<std::string>, std::less<>>& fields_by_kind() {
  static const std::map<std::string, std::set<std::string>, std::less<>> fields = {
      {"machine", {"name"}},
      {"socket", {"name", "os_index"}},
      {"numa",
       {"name", "os_index", "socket", "memory_bytes", "reserved_cpus", "reserved_memory_bytes"}},
      {"core-group", {"name", "os_index", "socket", "numa", "cores", "cpus"}},
      {"gpu",
       {"name", "os_index", "socket", "numa", "memory_bytes", "model", "pci_bus_id", "uuid"}},
  };
  return fields;
}

json node_json(int id, const TopoNode& n) {
  json j = {{"id", id}, {"kind", to_string(n.kind)}, {"name", n.name}};
  if (n.kind == TopoKind::kMachine) return j;
  j["os_index"] = n.os_index;
  if (n.kind == TopoKind::kSocket) return j;
  j["socket"] = n.socket;
  if (n.kind != TopoKind::kNuma) j["numa"] = n.numa;
  if (n.kind == TopoKind::kCoreGroup) {
    j["cores"] = n.cores;
    j["cpus"] = n.cpus;
  } else if (n.kind == TopoKind::kNuma) {
    if (n.local_memory_bytes) j["memory_bytes"] = *n.local_memory_bytes;
    if (!n.reserved_cpus.empty()) j["reserved_cpus"] = n.reserved_cpus;
    if (n.reserved_memory_bytes != 0) j["reserved_memory_bytes"] = n.reserved_memory_bytes;
  } else {
    j["memory_bytes"] = n.memory_bytes;
  }
  if (n.kind == TopoKind::kGpu) {
    j["model"] = n.model;
    j["pci_bus_id"] = n.pci_bus_id;
    j["uuid"] = n.uuid;
  }
  return j;
}

json edge_json(const TopoEdge& e) {
  json j = {{"kind", to_string(e.kind)}, {"from", e.from}, {"to", e.to}};
  if (e.kind == TopoEdgeKind::kNearby) j["via"] = e.via;
  return j;
}

// Reads typed fields of one JSON object; errors name origin and the JSON path.
class Reader {
 public:
  Reader(const std::string& origin, std::string path, const json& obj)
      : origin_(origin), path_(std::move(path)), obj_(obj) {}

  core::Error error(std::string_view field, std::string what) const {
    return core::Error(
        core::Domain::kTopology, core::Code::kParse,
        fmt::format("{}: {}{}{}: {}", origin_, path_, field.empty() ? "" : ".", field, what));
  }
  bool has(const char* key) const { return obj_.contains(key); }
  // Absent and null both say the value is not known.
  bool known(const char* key) const { return obj_.contains(key) && !obj_.at(key).is_null(); }

  core::Result<std::int64_t> integer(const char* key, std::int64_t lo, std::int64_t hi) const {
    if (!obj_.contains(key)) return std::unexpected(error(key, "missing"));
    const json& v = obj_.at(key);
    if (!v.is_number_integer()) {
      return std::unexpected(error(key, fmt::format("expected an integer, got {}", v.dump())));
    }
    const bool is_unsigned = v.is_number_unsigned();
    const auto x = is_unsigned
                       ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                             v.get<std::uint64_t>(),
                             static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())))
                       : v.get<std::int64_t>();
    if (x < lo || x > hi) {
      return std::unexpected(
          error(key, fmt::format("{} is out of range [{}, {}]", v.dump(), lo, hi)));
    }
    return x;
  }
  core::Result<int> small(const char* key, int lo) const {
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t x,
                             integer(key, lo, std::numeric_limits<int>::max()));
    return static_cast<int>(x);
  }
  core::Result<std::string> string(const char* key) const {
    if (!obj_.contains(key)) return std::unexpected(error(key, "missing"));
    const json& v = obj_.at(key);
    if (!v.is_string()) {
      return std::unexpected(error(key, fmt::format("expected a string, got {}", v.dump())));
    }
    return v.get<std::string>();
  }
  core::Result<std::string> string_or(const char* key, std::string fallback) const {
    if (!obj_.contains(key)) return fallback;
    return string(key);
  }
  core::Result<std::vector<int>> ints(const char* key) const {
    if (!obj_.contains(key)) return std::unexpected(error(key, "missing"));
    const json& v = obj_.at(key);
    if (!v.is_array()) {
      return std::unexpected(error(key, fmt::format("expected an array, got {}", v.dump())));
    }
    std::vector<int> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < 0 ||
          v[i].get<std::int64_t>() > std::numeric_limits<int>::max()) {
        return std::unexpected(error(fmt::format("{}[{}]", key, i),
                                     fmt::format("expected a CPU number, got {}", v[i].dump())));
      }
      out.push_back(v[i].get<int>());
    }
    return out;
  }

 private:
  const std::string& origin_;
  std::string path_;
  const json& obj_;
};

using EdgeKey = std::tuple<std::string, int, int, std::string>;  // kind, from, to, via

EdgeKey key_of(const TopoEdge& e) {
  return {std::string(to_string(e.kind)), e.from, e.to, e.via};
}

std::string describe(const EdgeKey& k) {
  const auto& [kind, from, to, via] = k;
  return via.empty() ? fmt::format("{} {} -> {}", kind, from, to)
                     : fmt::format("{} {} -> {} via {}", kind, from, to, via);
}

// "numa_distances": n rows of n non-negative integers, row i for NUMA node i, flattened.
core::Result<std::vector<std::int64_t>> numa_distances_from_json(const json& rows, std::size_t n,
                                                                 const std::string& origin) {
  const auto fail = [&](std::string path, std::string what) {
    return core::failf(core::Domain::kTopology, core::Code::kParse, "{}: {}: {}", origin, path,
                       what);
  };
  if (!rows.is_array() || rows.size() != n) {
    return fail("numa_distances",
                fmt::format("expected {} rows of {} distances (one per NUMA node), got {}", n, n,
                            rows.is_array() ? fmt::format("{} rows", rows.size()) : rows.dump()));
  }
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < n; ++i) {
    const json& row = rows[i];
    if (!row.is_array() || row.size() != n) {
      return fail(fmt::format("numa_distances[{}]", i),
                  fmt::format("expected {} distances (one per NUMA node), got {}", n,
                              row.is_array() ? fmt::format("{}", row.size()) : row.dump()));
    }
    for (std::size_t k = 0; k < n; ++k) {
      // An unsigned value past int64's range reads back negative, so it is refused too.
      if (!row[k].is_number_integer() || row[k].get<std::int64_t>() < 0) {
        return fail(fmt::format("numa_distances[{}][{}]", i, k),
                    fmt::format("expected a non-negative integer, got {}", row[k].dump()));
      }
      out.push_back(row[k].get<std::int64_t>());
    }
  }
  return out;
}

}  // namespace

json to_json(const HostTopology& t) {
  json nodes = json::array();
  for (std::size_t i = 0; i < t.nodes().size(); ++i) {
    nodes.push_back(node_json(static_cast<int>(i), t.nodes()[i]));
  }
  json edges = json::array();
  for (const TopoEdge& e : t.edges()) edges.push_back(edge_json(e));
  json out = {
      {"hostname", t.hostname()}, {"source", t.source()}, {"nodes", nodes}, {"edges", edges}};
  const std::size_t n = t.numa_nodes().size();
  if (!t.numa_distances().empty()) {
    json rows = json::array();
    for (std::size_t i = 0; i < n; ++i) {
      const auto row = t.numa_distances().begin() + static_cast<std::ptrdiff_t>(i * n);
      rows.push_back(std::vector<std::int64_t>(row, row + static_cast<std::ptrdiff_t>(n)));
    }
    out["numa_distances"] = std::move(rows);
  }
  return out;
}

core::Result<HostTopology> topology_from_json(const json& j, const std::string& origin) {
  const auto fail = [&](std::string path, std::string what) {
    return core::failf(core::Domain::kTopology, core::Code::kParse, "{}: {}: {}", origin, path,
                       what);
  };
  if (!j.is_object()) return fail("(top level)", "expected an object with hostname, nodes, edges");
  for (const auto& [key, value] : j.items()) {
    if (key != "hostname" && key != "source" && key != "nodes" && key != "edges" &&
        key != "numa_distances") {
      return fail(key, "unknown field (expected hostname, source, nodes, edges, numa_distances)");
    }
  }
  const Reader top(origin, "(top level)", j);
  TESSERA_ASSIGN_OR_RETURN(std::string hostname, top.string("hostname"));
  TESSERA_ASSIGN_OR_RETURN(std::string source, top.string_or("source", "json:" + origin));
  if (!j.contains("nodes") || !j["nodes"].is_array() || j["nodes"].empty()) {
    return fail("nodes", "expected an array of vertices starting with the machine");
  }
  if (!j.contains("edges") || !j["edges"].is_array()) {
    return fail("edges", "expected an array of edges");
  }
  const json& nodes = j["nodes"];
  const json& edges = j["edges"];

  HostTopologyBuilder b(std::move(hostname), std::move(source));
  std::map<int, int> gpu_of_node;  // node id -> GPU index
  std::size_t numa_count = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string path = fmt::format("nodes[{}]", i);
    const json& n = nodes[i];
    if (!n.is_object()) return fail(path, "expected an object");
    const Reader r(origin, path, n);
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t id, r.integer("id", 0, 1LL << 40));
    if (id != static_cast<std::int64_t>(i)) {
      return fail(path + ".id", fmt::format("is {}; ids are positions in nodes, so {}", id, i));
    }
    TESSERA_ASSIGN_OR_RETURN(const std::string kind, r.string("kind"));
    const auto fields = fields_by_kind().find(kind);
    if (fields == fields_by_kind().end()) {
      return fail(path + ".kind",
                  fmt::format("'{}' is not machine, socket, numa, core-group or gpu", kind));
    }
    if ((i == 0) != (kind == "machine")) {
      return fail(path + ".kind",
                  i == 0 ? "node 0 must be the machine" : "only node 0 is the machine");
    }
    for (const auto& [key, value] : n.items()) {
      if (key != "id" && key != "kind" && !fields->second.contains(key)) {
        return fail(path + "." + key, fmt::format("unknown field for a {} vertex", kind));
      }
    }
    if (kind == "socket") {
      TESSERA_ASSIGN_OR_RETURN(const int os, r.small("os_index", -1));
      b.add_socket(os);
    } else if (kind == "numa") {
      TESSERA_ASSIGN_OR_RETURN(const int socket, r.small("socket", 0));
      TESSERA_ASSIGN_OR_RETURN(const int os, r.small("os_index", -1));
      std::optional<std::int64_t> memory;
      if (r.known("memory_bytes")) {
        TESSERA_ASSIGN_OR_RETURN(
            memory, r.integer("memory_bytes", 0, std::numeric_limits<std::int64_t>::max()));
      }
      const int numa = b.add_numa(socket, os, memory);
      ++numa_count;
      std::vector<int> reserved_cpus;
      if (r.has("reserved_cpus")) {
        TESSERA_ASSIGN_OR_RETURN(reserved_cpus, r.ints("reserved_cpus"));
      }
      std::int64_t reserved_memory = 0;
      if (r.has("reserved_memory_bytes")) {
        TESSERA_ASSIGN_OR_RETURN(
            reserved_memory,
            r.integer("reserved_memory_bytes", 0, std::numeric_limits<std::int64_t>::max()));
      }
      if (!reserved_cpus.empty() || reserved_memory != 0) {
        b.reserve(numa, std::move(reserved_cpus), reserved_memory);
      }
    } else if (kind == "core-group") {
      TESSERA_ASSIGN_OR_RETURN(const int numa, r.small("numa", 0));
      TESSERA_ASSIGN_OR_RETURN(const int cores, r.small("cores", 1));
      TESSERA_ASSIGN_OR_RETURN(std::vector<int> cpus, r.ints("cpus"));
      b.add_core_group(numa, std::move(cpus), cores);
    } else if (kind == "gpu") {
      TopoNode g;
      TESSERA_ASSIGN_OR_RETURN(const int numa, r.small("numa", 0));
      TESSERA_ASSIGN_OR_RETURN(g.os_index, r.small("os_index", -1));
      TESSERA_ASSIGN_OR_RETURN(g.name, r.string("name"));
      if (g.name.empty()) return fail(path + ".name", "a GPU needs a name");
      TESSERA_ASSIGN_OR_RETURN(
          g.memory_bytes, r.integer("memory_bytes", 0, std::numeric_limits<std::int64_t>::max()));
      TESSERA_ASSIGN_OR_RETURN(g.model, r.string_or("model", ""));
      TESSERA_ASSIGN_OR_RETURN(g.pci_bus_id, r.string_or("pci_bus_id", ""));
      TESSERA_ASSIGN_OR_RETURN(g.uuid, r.string_or("uuid", ""));
      gpu_of_node[static_cast<int>(i)] = b.add_gpu(numa, std::move(g));
    }
  }

  // GPU links are the edges the file adds; every other edge follows from the vertices and is
  // checked against what the builder derives.
  std::multiset<EdgeKey> given;
  std::map<EdgeKey, std::size_t> position;
  for (std::size_t k = 0; k < edges.size(); ++k) {
    const std::string path = fmt::format("edges[{}]", k);
    const json& e = edges[k];
    if (!e.is_object()) return fail(path, "expected an object");
    for (const auto& [key, value] : e.items()) {
      if (key != "kind" && key != "from" && key != "to" && key != "via") {
        return fail(path + "." + key, "unknown field (expected kind, from, to, via)");
      }
    }
    const Reader r(origin, path, e);
    TESSERA_ASSIGN_OR_RETURN(const std::string kind, r.string("kind"));
    TESSERA_ASSIGN_OR_RETURN(const int from, r.small("from", 0));
    TESSERA_ASSIGN_OR_RETURN(const int to, r.small("to", 0));
    TESSERA_ASSIGN_OR_RETURN(const std::string via, r.string_or("via", ""));
    if (kind != "host" && kind != "contain" && kind != "localized" && kind != "nearby") {
      return fail(path + ".kind",
                  fmt::format("'{}' is not host, contain, localized or nearby", kind));
    }
    if ((kind == "nearby") == via.empty()) {
      return fail(path + ".via", kind == "nearby" ? "a nearby edge names its link (via)"
                                                  : "only nearby edges have a via");
    }
    if (static_cast<std::size_t>(std::max(from, to)) >= nodes.size()) {
      return fail(path, fmt::format("{} -> {}: there are {} nodes", from, to, nodes.size()));
    }
    const auto a = gpu_of_node.find(from), c = gpu_of_node.find(to);
    if (kind == "nearby" && a != gpu_of_node.end() && c != gpu_of_node.end()) {
      if (from >= to) return fail(path, "a GPU link is stored with from < to");
      b.add_gpu_link(a->second, c->second, via);
    }
    const EdgeKey key{kind, from, to, via};
    given.insert(key);
    position.try_emplace(key, k);
  }

  if (j.contains("numa_distances")) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<std::int64_t> distances,
                             numa_distances_from_json(j["numa_distances"], numa_count, origin));
    b.set_numa_distances(std::move(distances));
  }

  TESSERA_ASSIGN_OR_RETURN(HostTopology t, core::with_context(std::move(b).build(), origin));

  // Derived values the file states must be the ones that follow from it.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const json built = node_json(static_cast<int>(i), t.nodes()[i]);
    for (const auto& [key, value] : nodes[i].items()) {
      // A UUID that names no GPU (zeroed, or shared) is replaced as the host is built.
      if (key == "uuid") continue;
      if (built.contains(key) && built[key] != value) {
        return fail(fmt::format("nodes[{}].{}", i, key),
                    fmt::format("is {}, but the vertex as built has {} (names, sockets and a core "
                                "group's os_index follow from its parents and CPUs)",
                                value.dump(), built[key].dump()));
      }
    }
  }
  std::multiset<EdgeKey> derived;
  for (const TopoEdge& e : t.edges()) derived.insert(key_of(e));
  for (const EdgeKey& k : given) {
    if (given.count(k) != derived.count(k)) {
      return fail(fmt::format("edges[{}]", position[k]),
                  fmt::format("{} appears {} times; the vertices imply it {} times", describe(k),
                              given.count(k), derived.count(k)));
    }
  }
  for (const EdgeKey& k : derived) {
    if (!given.contains(k)) {
      return fail("edges", fmt::format("missing {}, which the vertices imply", describe(k)));
    }
  }
  return t;
}

core::Result<HostTopology> load_topology_json(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(const std::string text, detail::read_text_file(path));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return core::failf(core::Domain::kTopology, core::Code::kParse, "{}: not valid JSON: {}", path,
                       e.what());
  }
  return topology_from_json(j, path);
}

}  // namespace tessera::hw
