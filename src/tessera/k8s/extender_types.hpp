#pragma once
// kube-scheduler's HTTP extender protocol, k8s.io/kube-scheduler extender/v1 (types.go): the
// request and response body of each verb. The Go structs have no json tags, so the wire keys are
// the Go field names ("Pod", "NodeNames", "FailedNodes", ...); Go's encoding/json matches them
// case-insensitively on decode, and so do these parsers (an exact match wins). Serialisers emit
// exactly the Go names (../shared/data/k8s/extender/wire_examples).
//
// Embedded Kubernetes objects (the v1.Pod, the v1.NodeList, victims' pods) are kept as the JSON
// they arrived as: the extender reads what it needs from them (pod_translation.hpp) and returns
// nodes in the form they were sent.
//
// Parsers fail (Domain::kK8s, Code::kParse) naming the type and the JSON path of what is wrong
// ("ExtenderArgs.NodeNames[2]: expected a string, got number"); they never throw.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::k8s {

// extender/v1 MinExtenderPriority and MaxExtenderPriority.
inline constexpr std::int64_t kMinExtenderPriority = 0;
inline constexpr std::int64_t kMaxExtenderPriority = 10;

// Request of filter and prioritize. Nodes is sent when the extender is not node-cache-capable,
// NodeNames when it is.
struct ExtenderArgs {
  nlohmann::json pod;  // v1.Pod (null when absent)
  std::optional<nlohmann::json> nodes;
  std::optional<std::vector<std::string>> node_names;
};

struct ExtenderFilterResult {
  std::optional<nlohmann::json> nodes;  // v1.NodeList with the surviving items
  std::optional<std::vector<std::string>> node_names;
  std::map<std::string, std::string> failed_nodes;  // may become feasible by preemption
  std::map<std::string, std::string> failed_and_unresolvable_nodes;  // preemption cannot help
  std::string error;
};

struct HostPriority {
  std::string host;
  std::int64_t score = 0;
};
using HostPriorityList = std::vector<HostPriority>;

struct Victims {
  std::vector<nlohmann::json> pods;  // full v1.Pods
  std::int64_t num_pdb_violations = 0;
};
struct MetaPod {
  std::string uid;
};
struct MetaVictims {
  std::vector<MetaPod> pods;
  std::int64_t num_pdb_violations = 0;
};

struct ExtenderPreemptionArgs {
  nlohmann::json pod;  // the preemptor
  std::optional<std::map<std::string, Victims>> node_name_to_victims;
  std::optional<std::map<std::string, MetaVictims>> node_name_to_meta_victims;
};

struct ExtenderPreemptionResult {
  std::map<std::string, MetaVictims> node_name_to_meta_victims;
};

struct ExtenderBindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};

struct ExtenderBindingResult {
  std::string error;
};

core::Result<ExtenderArgs> parse_extender_args(const nlohmann::json& j);
core::Result<ExtenderFilterResult> parse_filter_result(const nlohmann::json& j);
core::Result<HostPriorityList> parse_host_priority_list(const nlohmann::json& j);
core::Result<HostPriority> parse_host_priority(const nlohmann::json& j);
core::Result<ExtenderPreemptionArgs> parse_preemption_args(const nlohmann::json& j);
core::Result<ExtenderPreemptionResult> parse_preemption_result(const nlohmann::json& j);
core::Result<ExtenderBindingArgs> parse_binding_args(const nlohmann::json& j);
core::Result<ExtenderBindingResult> parse_binding_result(const nlohmann::json& j);

nlohmann::json to_json(const ExtenderArgs& a);
nlohmann::json to_json(const ExtenderFilterResult& r);
nlohmann::json to_json(const HostPriority& p);
nlohmann::json to_json(const HostPriorityList& l);
nlohmann::json to_json(const ExtenderPreemptionArgs& a);
nlohmann::json to_json(const ExtenderPreemptionResult& r);
nlohmann::json to_json(const ExtenderBindingArgs& a);
nlohmann::json to_json(const ExtenderBindingResult& r);

// The body text parsed as JSON, failing with kParse and `what` (the type) on malformed text.
core::Result<nlohmann::json> parse_body(std::string_view body, std::string_view what);

// The candidate nodes' names, from NodeNames or else Nodes.items[].metadata.name.
std::vector<std::string> candidate_names(const ExtenderArgs& a);

// Case-insensitive member lookup as Go's encoding/json does it (exact match first); nullptr when
// absent. Exposed for pod_translation, which reads v1 objects the same tolerant way.
const nlohmann::json* find_member(const nlohmann::json& object, std::string_view key);
std::string_view json_type_name(const nlohmann::json& j);

}  // namespace tessera::k8s
