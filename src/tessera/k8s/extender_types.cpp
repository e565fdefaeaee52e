#include "tessera/k8s/extender_types.hpp"

#include <cctype>
#include <limits>
#include <utility>

#include "tessera/core/try.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::unexpected<core::Error> bad(const std::string& path, std::string_view expected,
                                 const json& got) {
  return core::failf(core::Domain::kK8s, core::Code::kParse, "{}: expected {}, got {}", path,
                     expected, json_type_name(got));
}

core::Status expect_object(const json& j, const std::string& path) {
  if (!j.is_object()) return bad(path, "an object", j);
  return {};
}

// Go decodes null into a zero value; these treat null like an absent member.
const json* member(const json& obj, std::string_view key) {
  const json* m = find_member(obj, key);
  return (m && !m->is_null()) ? m : nullptr;
}

core::Result<std::string> get_string(const json& obj, std::string_view key,
                                     const std::string& path) {
  const json* m = member(obj, key);
  if (!m) return std::string{};
  if (!m->is_string()) return bad(path + "." + std::string(key), "a string", *m);
  return m->get<std::string>();
}

core::Result<std::int64_t> get_int64(const json& obj, std::string_view key,
                                     const std::string& path) {
  const json* m = member(obj, key);
  if (!m) return std::int64_t{0};
  if (m->is_number_integer()) {
    if (m->is_number_unsigned() &&
        m->get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return bad(path + "." + std::string(key), "an int64", *m);
    }
    return m->get<std::int64_t>();
  }
  return bad(path + "." + std::string(key), "an integer", *m);
}

core::Result<std::vector<std::string>> get_strings(const json& arr, const std::string& path) {
  if (!arr.is_array()) return bad(path, "an array of strings", arr);
  std::vector<std::string> out;
  out.reserve(arr.size());
  for (std::size_t i = 0; i < arr.size(); ++i) {
    if (!arr[i].is_string()) return bad(fmt::format("{}[{}]", path, i), "a string", arr[i]);
    out.push_back(arr[i].get<std::string>());
  }
  return out;
}

core::Result<std::map<std::string, std::string>> get_string_map(const json& obj,
                                                                std::string_view key,
                                                                const std::string& path) {
  std::map<std::string, std::string> out;
  const json* m = member(obj, key);
  if (!m) return out;
  const std::string p = path + "." + std::string(key);
  if (!m->is_object()) return bad(p, "an object of strings", *m);
  for (const auto& [k, v] : m->items()) {
    if (!v.is_string()) return bad(p + "." + k, "a string", v);
    out.emplace(k, v.get<std::string>());
  }
  return out;
}

// A Kubernetes object the extender passes through: an object (or null).
core::Result<json> get_object(const json& obj, std::string_view key, const std::string& path) {
  const json* m = member(obj, key);
  if (!m) return json(nullptr);
  if (!m->is_object()) return bad(path + "." + std::string(key), "an object", *m);
  return *m;
}

core::Result<std::optional<json>> get_node_list(const json& obj, const std::string& path) {
  const json* m = member(obj, "Nodes");
  if (!m) return std::optional<json>{};
  const std::string p = path + ".Nodes";
  if (!m->is_object()) return bad(p, "a v1.NodeList object", *m);
  if (const json* items = member(*m, "items")) {
    if (!items->is_array()) return bad(p + ".items", "an array", *items);
    for (std::size_t i = 0; i < items->size(); ++i) {
      const json& node = (*items)[i];
      const std::string ip = fmt::format("{}.items[{}]", p, i);
      if (!node.is_object()) return bad(ip, "a v1.Node object", node);
      const json* meta = member(node, "metadata");
      if (meta && !meta->is_object()) return bad(ip + ".metadata", "an object", *meta);
      if (meta) TESSERA_TRY(get_string(*meta, "name", ip + ".metadata"));
    }
  }
  return std::optional<json>(*m);
}

core::Result<std::optional<std::vector<std::string>>> get_node_names(const json& obj,
                                                                     const std::string& path) {
  const json* m = member(obj, "NodeNames");
  if (!m) return std::optional<std::vector<std::string>>{};
  TESSERA_ASSIGN_OR_RETURN(auto names, get_strings(*m, path + ".NodeNames"));
  return std::optional<std::vector<std::string>>(std::move(names));
}

core::Result<MetaVictims> get_meta_victims(const json& v, const std::string& path) {
  TESSERA_TRY(expect_object(v, path));
  MetaVictims out;
  if (const json* pods = member(v, "Pods")) {
    if (!pods->is_array()) return bad(path + ".Pods", "an array", *pods);
    for (std::size_t i = 0; i < pods->size(); ++i) {
      const std::string pp = fmt::format("{}.Pods[{}]", path, i);
      TESSERA_TRY(expect_object((*pods)[i], pp));
      TESSERA_ASSIGN_OR_RETURN(auto uid, get_string((*pods)[i], "UID", pp));
      out.pods.push_back(MetaPod{std::move(uid)});
    }
  }
  TESSERA_ASSIGN_OR_RETURN(out.num_pdb_violations, get_int64(v, "NumPDBViolations", path));
  return out;
}

core::Result<Victims> get_victims(const json& v, const std::string& path) {
  TESSERA_TRY(expect_object(v, path));
  Victims out;
  if (const json* pods = member(v, "Pods")) {
    if (!pods->is_array()) return bad(path + ".Pods", "an array", *pods);
    for (std::size_t i = 0; i < pods->size(); ++i) {
      const std::string pp = fmt::format("{}.Pods[{}]", path, i);
      TESSERA_TRY(expect_object((*pods)[i], pp));
      out.pods.push_back((*pods)[i]);
    }
  }
  TESSERA_ASSIGN_OR_RETURN(out.num_pdb_violations, get_int64(v, "NumPDBViolations", path));
  return out;
}

template <typename T, typename F>
core::Result<std::optional<std::map<std::string, T>>> get_victim_map(const json& obj,
                                                                     std::string_view key,
                                                                     const std::string& path,
                                                                     F&& parse_one) {
  const json* m = member(obj, key);
  if (!m) return std::optional<std::map<std::string, T>>{};
  const std::string p = path + "." + std::string(key);
  if (!m->is_object()) return bad(p, "an object keyed by node name", *m);
  std::map<std::string, T> out;
  for (const auto& [node, v] : m->items()) {
    TESSERA_ASSIGN_OR_RETURN(auto parsed, parse_one(v, p + "." + node));
    out.emplace(node, std::move(parsed));
  }
  return std::optional<std::map<std::string, T>>(std::move(out));
}

json meta_victims_json(const MetaVictims& v) {
  json pods = json::array();
  for (const auto& p : v.pods) pods.push_back(json{{"UID", p.uid}});
  return json{{"Pods", std::move(pods)}, {"NumPDBViolations", v.num_pdb_violations}};
}

json string_map_json(const std::map<std::string, std::string>& m) {
  json out = json::object();
  for (const auto& [k, v] : m) out[k] = v;
  return out;
}

}  // namespace

std::string_view json_type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "object";
    case json::value_t::array: return "array";
    case json::value_t::string: return "string";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    default: return "binary";
  }
}

const json* find_member(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  if (auto it = object.find(key); it != object.end()) return &*it;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (iequals(it.key(), key)) return &*it;
  }
  return nullptr;
}

core::Result<json> parse_body(std::string_view body, std::string_view what) {
  // Copying and destroying a json value recurses once per level, so a body of a few MB of '['
  // would overflow the stack of the thread serving it. Kubernetes objects nest about 10 deep.
  constexpr int kMaxDepth = 64;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) {
        return core::failf(core::Domain::kK8s, core::Code::kParse,
                           "{}: the request body nests deeper than {} levels", what, kMaxDepth);
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return core::failf(core::Domain::kK8s, core::Code::kParse,
                       "{}: the request body is not valid JSON ({} bytes)", what, body.size());
  }
  return j;
}

core::Result<ExtenderArgs> parse_extender_args(const json& j) {
  const std::string path = "ExtenderArgs";
  TESSERA_TRY(expect_object(j, path));
  ExtenderArgs a;
  TESSERA_ASSIGN_OR_RETURN(a.pod, get_object(j, "Pod", path));
  TESSERA_ASSIGN_OR_RETURN(a.nodes, get_node_list(j, path));
  TESSERA_ASSIGN_OR_RETURN(a.node_names, get_node_names(j, path));
  return a;
}

core::Result<ExtenderFilterResult> parse_filter_result(const json& j) {
  const std::string path = "ExtenderFilterResult";
  TESSERA_TRY(expect_object(j, path));
  ExtenderFilterResult r;
  TESSERA_ASSIGN_OR_RETURN(r.nodes, get_node_list(j, path));
  TESSERA_ASSIGN_OR_RETURN(r.node_names, get_node_names(j, path));
  TESSERA_ASSIGN_OR_RETURN(r.failed_nodes, get_string_map(j, "FailedNodes", path));
  TESSERA_ASSIGN_OR_RETURN(r.failed_and_unresolvable_nodes,
                           get_string_map(j, "FailedAndUnresolvableNodes", path));
  TESSERA_ASSIGN_OR_RETURN(r.error, get_string(j, "Error", path));
  return r;
}

core::Result<HostPriority> parse_host_priority(const json& j) {
  const std::string path = "HostPriority";
  TESSERA_TRY(expect_object(j, path));
  HostPriority p;
  TESSERA_ASSIGN_OR_RETURN(p.host, get_string(j, "Host", path));
  TESSERA_ASSIGN_OR_RETURN(p.score, get_int64(j, "Score", path));
  return p;
}

core::Result<HostPriorityList> parse_host_priority_list(const json& j) {
  if (j.is_null()) return HostPriorityList{};
  if (!j.is_array()) return bad("HostPriorityList", "an array", j);
  HostPriorityList out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    auto p = parse_host_priority(j[i]);
    if (!p) return std::unexpected(p.error().with_context(fmt::format("HostPriorityList[{}]", i)));
    out.push_back(std::move(*p));
  }
  return out;
}

core::Result<ExtenderPreemptionArgs> parse_preemption_args(const json& j) {
  const std::string path = "ExtenderPreemptionArgs";
  TESSERA_TRY(expect_object(j, path));
  ExtenderPreemptionArgs a;
  TESSERA_ASSIGN_OR_RETURN(a.pod, get_object(j, "Pod", path));
  TESSERA_ASSIGN_OR_RETURN(a.node_name_to_victims,
                           get_victim_map<Victims>(j, "NodeNameToVictims", path, get_victims));
  TESSERA_ASSIGN_OR_RETURN(
      a.node_name_to_meta_victims,
      get_victim_map<MetaVictims>(j, "NodeNameToMetaVictims", path, get_meta_victims));
  return a;
}

core::Result<ExtenderPreemptionResult> parse_preemption_result(const json& j) {
  const std::string path = "ExtenderPreemptionResult";
  TESSERA_TRY(expect_object(j, path));
  TESSERA_ASSIGN_OR_RETURN(
      auto m, get_victim_map<MetaVictims>(j, "NodeNameToMetaVictims", path, get_meta_victims));
  ExtenderPreemptionResult r;
  if (m) r.node_name_to_meta_victims = std::move(*m);
  return r;
}

core::Result<ExtenderBindingArgs> parse_binding_args(const json& j) {
  const std::string path = "ExtenderBindingArgs";
  TESSERA_TRY(expect_object(j, path));
  ExtenderBindingArgs a;
  TESSERA_ASSIGN_OR_RETURN(a.pod_name, get_string(j, "PodName", path));
  TESSERA_ASSIGN_OR_RETURN(a.pod_namespace, get_string(j, "PodNamespace", path));
  TESSERA_ASSIGN_OR_RETURN(a.pod_uid, get_string(j, "PodUID", path));
  TESSERA_ASSIGN_OR_RETURN(a.node, get_string(j, "Node", path));
  return a;
}

core::Result<ExtenderBindingResult> parse_binding_result(const json& j) {
  const std::string path = "ExtenderBindingResult";
  TESSERA_TRY(expect_object(j, path));
  ExtenderBindingResult r;
  TESSERA_ASSIGN_OR_RETURN(r.error, get_string(j, "Error", path));
  return r;
}

// Serialisers: the Go field names, in the Go structs' order (nlohmann::ordered_json would keep
// it, but key order carries no meaning on the wire; goldens compare as values).
json to_json(const ExtenderArgs& a) {
  json j = json::object();
  j["Pod"] = a.pod;
  if (a.nodes) j["Nodes"] = *a.nodes;
  if (a.node_names) j["NodeNames"] = *a.node_names;
  return j;
}

json to_json(const ExtenderFilterResult& r) {
  json j = json::object();
  if (r.nodes) j["Nodes"] = *r.nodes;
  if (r.node_names) j["NodeNames"] = *r.node_names;
  j["FailedNodes"] = string_map_json(r.failed_nodes);
  j["FailedAndUnresolvableNodes"] = string_map_json(r.failed_and_unresolvable_nodes);
  j["Error"] = r.error;
  return j;
}

json to_json(const HostPriority& p) {
  return json{{"Host", p.host}, {"Score", p.score}};
}

json to_json(const HostPriorityList& l) {
  json j = json::array();
  for (const auto& p : l) j.push_back(to_json(p));
  return j;
}

json to_json(const ExtenderPreemptionArgs& a) {
  json j = json::object();
  j["Pod"] = a.pod;
  if (a.node_name_to_victims) {
    json m = json::object();
    for (const auto& [node, v] : *a.node_name_to_victims) {
      m[node] = json{{"Pods", v.pods}, {"NumPDBViolations", v.num_pdb_violations}};
    }
    j["NodeNameToVictims"] = std::move(m);
  }
  if (a.node_name_to_meta_victims) {
    json m = json::object();
    for (const auto& [node, v] : *a.node_name_to_meta_victims) m[node] = meta_victims_json(v);
    j["NodeNameToMetaVictims"] = std::move(m);
  }
  return j;
}

json to_json(const ExtenderPreemptionResult& r) {
  json m = json::object();
  for (const auto& [node, v] : r.node_name_to_meta_victims) m[node] = meta_victims_json(v);
  return json{{"NodeNameToMetaVictims", std::move(m)}};
}

json to_json(const ExtenderBindingArgs& a) {
  return json{{"PodName", a.pod_name},
              {"PodNamespace", a.pod_namespace},
              {"PodUID", a.pod_uid},
              {"Node", a.node}};
}

json to_json(const ExtenderBindingResult& r) {
  return json{{"Error", r.error}};
}

std::vector<std::string> candidate_names(const ExtenderArgs& a) {
  if (a.node_names) return *a.node_names;
  std::vector<std::string> out;
  if (!a.nodes) return out;
  const json* items = member(*a.nodes, "items");
  if (!items) return out;
  for (const auto& node : *items) {
    const json* meta = member(node, "metadata");
    const json* name = meta ? member(*meta, "name") : nullptr;
    out.push_back(name && name->is_string() ? name->get<std::string>() : std::string{});
  }
  return out;
}

}  // namespace tessera::k8s
