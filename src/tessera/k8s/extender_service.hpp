#pragma once
// `tessera extender`'s service: kube-scheduler's four extender verbs answered by the cluster
// level's policies (FlexTopo's filter, score and topology-aware preemption) on a
// cluster::ClusterState that node agents keep current, plus the routes the agents and operators
// use. One mutex-guarded state; every verb is safe to call from many server threads.
//
// Routes (the verbs under a configurable prefix, as the scheduler config's urlPrefix + verb):
//   POST {prefix}/filter      ExtenderArgs -> ExtenderFilterResult
//   POST {prefix}/prioritize  ExtenderArgs -> HostPriorityList (0-10)
//   POST {prefix}/preempt     ExtenderPreemptionArgs -> ExtenderPreemptionResult
//   POST {prefix}/bind        ExtenderBindingArgs -> ExtenderBindingResult
//   GET  /healthz                                 alive (liveness)
//   GET  /readyz                                  200 when this replica serves the verbs, 503 on a
//                                                 standby (leader election)
//   GET  /tessera/v1/nodes                       every node's topology with its allocation
//   PUT  /tessera/v1/nodes/{node}/topology       agent push: {"node": NAME, "topology": <hw JSON>}
//   DELETE /tessera/v1/pods/{namespace}/{name}   release a pod that finished or was deleted
//
// What the extender knows of pods: those it bound (bind verb), remembered with the resources
// the filter/prioritize/preempt calls showed for their UID, and recorded on each pod as its
// tessera.io/placement annotation (placement_annotation.hpp). With the API server's pod events
// (observe_pod, forget_pod, resync: k8s::PodWatcher), a restarted extender takes its pods back
// from their annotations, and a pod leaves the state when the API server says it finished or is
// gone; victims of a preemption stay until then. Pods bound by another scheduler hold nothing in
// its state, so it can neither count on the room they take nor free it by preempting them.

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tessera/cluster/policy/preemption.hpp"
#include "tessera/cluster/state/cluster_state.hpp"
#include "tessera/hw/topology/host_topology.hpp"
#include "tessera/k8s/binder.hpp"
#include "tessera/k8s/extender_types.hpp"
#include "tessera/k8s/http_server.hpp"

namespace tessera::k8s {

struct ExtenderConfig {
  cluster::PreemptionMethod method = cluster::PreemptionMethod::kIncremental;
  // alpha, T's values and the victim-set bound; `nodes` is set per request from the candidates
  // kube-scheduler proposes.
  cluster::PreemptionConfig preemption;
  // Path prefix of the four verbs: urlPrefix's path in the scheduler config ("" or "/tessera").
  std::string url_prefix;
  std::string filter_verb = "filter";
  std::string prioritize_verb = "prioritize";
  std::string preempt_verb = "preempt";
  std::string bind_verb = "bind";
  // Pods seen by filter/prioritize/preempt, remembered by UID until their bind (the bind request
  // carries no resources). Oldest forgotten first.
  std::size_t remembered_pods = 4096;
  // Memory of each NUMA node whose topology does not give it (NCCL XML): put_topology fills it
  // in. Unset: such memory stays unknown and the filter does not count it.
  std::optional<std::int64_t> numa_memory_bytes;
  // When set, the routes that change state from outside the scheduler (an agent's topology PUT,
  // a pod's release) answer 401 unless the request carries "Authorization: Bearer <token>".
  // kube-scheduler's verbs are not covered: its extender client sends no token (its tlsConfig
  // gives a client certificate instead).
  std::string write_token;
  // Whether the API server's pod events reach the service (a PodWatcher runs). Without them, the
  // victims of a preemption are freed when the extender names them, since nothing else would.
  bool pod_events = false;
};

class ExtenderService {
 public:
  ExtenderService(ExtenderConfig config, std::shared_ptr<Binder> binder);

  // Adds the node or replaces its topology (an agent's refresh), with config().numa_memory_bytes
  // for NUMA nodes of unknown memory. Fails with kFailedPrecondition when pods bound there no
  // longer fit the new topology. Returns true when the node is new.
  core::Result<bool> put_topology(const std::string& node,
                                  std::shared_ptr<const hw::HostTopology> topology);

  // The verbs on parsed bodies. Fail (kInvalidArgument/kParse) on a pod they cannot translate;
  // preempt also on a pod or preemption settings the search refuses as invalid (a preemptor
  // that no node can take now is an empty result, as kube-scheduler expects).
  core::Result<ExtenderFilterResult> filter(const ExtenderArgs& args);
  core::Result<HostPriorityList> prioritize(const ExtenderArgs& args);
  core::Result<ExtenderPreemptionResult> preempt(const ExtenderPreemptionArgs& args);
  // Binding errors are answered in the result (kube-scheduler retries), not as failures.
  ExtenderBindingResult bind(const ExtenderBindingArgs& args);
  // Frees what pod "namespace/name" holds; false when it is not bound.
  bool release(const std::string& pod_name);

  // A v1.Pod as the API server has it (listed, added or modified). A pod bound to a node with a
  // tessera.io/placement annotation that the state lacks is put back (held until its node's
  // topology arrives, if it has not); a pod that has Succeeded or Failed leaves the state.
  void observe_pod(const nlohmann::json& pod);
  // A v1.Pod the API server deleted: it leaves the state (when the UID matches).
  void forget_pod(const nlohmann::json& pod);
  // A mark to pass to resync, taken before the list is asked for.
  std::int64_t list_mark() const;
  // The API server's whole pod list: each observed, then pods the state holds that the list does
  // not have leave it, unless they were bound after `mark` (after the list was asked for).
  void resync(const nlohmann::json& items, std::int64_t mark);

  // The verbs on raw bodies, as the server calls them: 400 with a reason on a malformed body.
  HttpResponse handle_filter(std::string_view body);
  HttpResponse handle_prioritize(std::string_view body);
  HttpResponse handle_preempt(std::string_view body);
  HttpResponse handle_bind(std::string_view body);
  HttpResponse handle_put_topology(const std::string& node, std::string_view body);

  // {"nodes": [cluster::node_json(...), ...]}
  nlohmann::json nodes_json() const;
  std::size_t node_count() const;
  // A copy of the state, for tests and inspection.
  cluster::ClusterState snapshot() const;

  // With leader election: a standby (not leading) answers the verbs 503 and is not ready, so the
  // Service sends kube-scheduler to the leader; it keeps its state current meanwhile (pod events,
  // topology pushes), to take over at once. Leading until told otherwise.
  void set_leading(bool leading) { leading_.store(leading); }
  bool leading() const { return leading_.load(); }

  void register_routes(HttpServer& server);
  const ExtenderConfig& config() const { return config_; }

 private:
  // config().write_token's check on a state-changing route, and its refusal.
  bool authorized(const HttpRequest& request) const;
  static HttpResponse unauthorized();
  static HttpResponse standby();

  void remember(const cluster::Pod& pod);
  std::optional<cluster::Pod> recall(const std::string& uid) const;
  core::Result<cluster::Pod> translate_and_remember(const nlohmann::json& pod);
  void observe(const nlohmann::json& pod);
  void forget(const nlohmann::json& pod);
  // Binds a restored pod on its node; mu_ held.
  void restore_locked(cluster::Pod pod, int node, const cluster::Assignment& assignment);

  ExtenderConfig config_;
  std::shared_ptr<Binder> binder_;

  mutable std::shared_mutex mu_;  // guards state_, seq_ and preemption_workspace_
  cluster::ClusterState state_;
  cluster::PreemptionWorkspace preemption_workspace_;
  std::int64_t seq_ = 0;
  // Restored pods whose node has not reported its topology yet, by node name.
  struct Restored {
    cluster::Pod pod;
    cluster::Assignment assignment;
  };
  std::unordered_map<std::string, std::vector<Restored>> awaiting_node_;

  std::atomic<bool> leading_{true};

  mutable std::mutex seen_mu_;  // guards seen_ and seen_order_
  std::unordered_map<std::string, cluster::Pod> seen_;
  std::deque<std::string> seen_order_;
};

}  // namespace tessera::k8s
