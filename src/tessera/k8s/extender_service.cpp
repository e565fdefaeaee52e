#include "tessera/k8s/extender_service.hpp"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "tessera/cluster/policy/placement.hpp"
#include "tessera/cluster/registry.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/hw/topology/json.hpp"
#include "tessera/k8s/bearer_token.hpp"
#include "tessera/k8s/placement_annotation.hpp"
#include "tessera/k8s/pod_translation.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;

constexpr std::string_view kUnknownNode = "no topology reported for this node";

// "namespace/name" and the UID of a v1.Pod, from its metadata.
std::pair<std::string, std::string> pod_identity(const json& meta) {
  return {fmt::format("{}/{}", meta.value("namespace", "default"), meta.value("name", "")),
          meta.value("uid", "")};
}

bool requests_nothing(const cluster::Pod& p) {
  return p.request.gpus == 0 && p.request.cpus == 0 && p.request.memory_bytes == 0;
}

// Whether preemption could ever make room: the pod fits what the node holds when empty.
bool could_ever_fit(const cluster::NodeState& node, const cluster::Pod& pod) {
  const auto cap = cluster::capacity_per_numa(node.topology());
  const auto a = cluster::best_affinity(node.topology(), cap, pod.request);
  return a && cluster::acceptable(pod, *a);
}

std::string describe(const cluster::Pod& p) {
  return fmt::format("{} (priority {}, {}, {} GPU, {} CPU, {} B, topology {})", p.name, p.priority,
                     cluster::to_string(p.qos), p.request.gpus, p.request.cpus,
                     p.request.memory_bytes, cluster::to_string(p.topology));
}

int http_status_of(const core::Error& e) {
  switch (e.code()) {
    case core::Code::kParse:
    case core::Code::kInvalidArgument: return 400;
    case core::Code::kNotFound: return 404;
    case core::Code::kFailedPrecondition: return 409;
    default: return 500;
  }
}

HttpResponse error_response(const core::Error& e) {
  return json_error(http_status_of(e), e.message());
}

// The route pattern of a verb: prefix + "/" + verb, regex metacharacters escaped.
std::string route(const std::string& prefix, const std::string& verb) {
  std::string p = prefix;
  while (!p.empty() && p.back() == '/') p.pop_back();
  const std::string path = p + "/" + verb;
  std::string out;
  for (char c : path) {
    if (std::string_view(".^$|()[]{}*+?\\").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

ExtenderService::ExtenderService(ExtenderConfig config, std::shared_ptr<Binder> binder)
    : config_(std::move(config)), binder_(std::move(binder)) {
  if (!binder_) binder_ = std::make_shared<RecordOnlyBinder>();
}

core::Result<bool> ExtenderService::put_topology(const std::string& node,
                                                 std::shared_ptr<const hw::HostTopology> topology) {
  if (node.empty()) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument, "node name is empty");
  }
  if (config_.numa_memory_bytes && topology) {
    const auto& numa = topology->numa_nodes();
    if (std::ranges::any_of(numa, [&](int id) { return !topology->node(id).local_memory_bytes; })) {
      hw::HostTopology assumed = *topology;
      TESSERA_TRY(core::with_context(assumed.assume_numa_memory(*config_.numa_memory_bytes),
                                     "node " + node));
      topology = std::make_shared<const hw::HostTopology>(std::move(assumed));
    }
  }
  std::unique_lock lock(mu_);
  if (auto i = state_.find_node(node)) {
    auto st = state_.update_topology(*i, std::move(topology));
    if (!st) return std::unexpected(st.error().with_context("node " + node));
    return false;
  }
  TESSERA_ASSIGN_OR_RETURN(const int added, state_.add_node(node, std::move(topology)));
  if (auto waiting = awaiting_node_.extract(node)) {
    for (Restored& r : waiting.mapped()) restore_locked(std::move(r.pod), added, r.assignment);
  }
  return true;
}

void ExtenderService::restore_locked(cluster::Pod pod, int node, const cluster::Assignment& a) {
  const std::string name = pod.name;
  pod.start_seq = ++seq_;
  if (auto b = state_.bind(std::move(pod), node, a); !b) {
    core::logger().warn("restore {} on {}: {} (its placement annotation no longer fits)", name,
                        state_.node(node).name(), b.error().message());
    return;
  }
  core::logger().info("restore {} on {}: GPUs [{}], core groups [{}] (from its annotation)", name,
                      state_.node(node).name(), fmt::join(a.gpus, ","),
                      fmt::join(a.core_groups, ","));
}

// An object of the wrong shape (a field of another type) is logged and skipped: the API server's
// events must never stop the watch.
void ExtenderService::observe_pod(const json& object) {
  try {
    observe(object);
  } catch (const json::exception& e) {
    core::logger().warn("a pod event the extender cannot read: {}", e.what());
  }
}

void ExtenderService::forget_pod(const json& object) {
  try {
    forget(object);
  } catch (const json::exception& e) {
    core::logger().warn("a pod event the extender cannot read: {}", e.what());
  }
}

void ExtenderService::observe(const json& object) {
  if (!object.is_object()) return;
  const json meta = object.value("metadata", json::object());
  const auto [name, uid] = pod_identity(meta);
  const std::string phase = object.value("status", json::object()).value("phase", "");
  if (phase == "Succeeded" || phase == "Failed") {
    forget(object);
    return;
  }
  const std::string node = object.value("spec", json::object()).value("nodeName", "");
  const json annotations = meta.value("annotations", json::object());
  const auto placement =
      annotations.is_object() ? annotations.find(kPlacementAnnotation) : annotations.end();
  if (node.empty() || placement == annotations.end() || !placement->is_string()) return;
  {
    std::shared_lock lock(mu_);
    if (auto i = state_.find_pod(name); i && state_.pod(*i).pod.uid == uid) return;
  }
  auto pod = translate_pod(object);
  if (!pod) {
    core::logger().warn("restore {}: {}", name, pod.error().message());
    return;
  }
  auto a = parse_placement_annotation(placement->get<std::string>());
  if (!a) {
    core::logger().warn("restore {}: {}", name, a.error().message());
    return;
  }
  pod->name = name;
  std::unique_lock lock(mu_);
  if (auto i = state_.find_pod(name)) {
    if (state_.pod(*i).pod.uid == uid) return;
    state_.evict(*i);  // an older pod of this name is gone
  }
  if (auto n = state_.find_node(node)) {
    restore_locked(std::move(*pod), *n, *a);
    return;
  }
  auto& waiting = awaiting_node_[node];
  std::erase_if(waiting, [&](const Restored& r) { return r.pod.name == name; });
  waiting.push_back({std::move(*pod), std::move(*a)});
}

void ExtenderService::forget(const json& object) {
  if (!object.is_object()) return;
  const auto [name, uid] = pod_identity(object.value("metadata", json::object()));
  std::unique_lock lock(mu_);
  for (auto& [node, waiting] : awaiting_node_) {
    std::erase_if(waiting, [&](const Restored& r) { return r.pod.name == name; });
  }
  const auto i = state_.find_pod(name);
  if (!i || (!uid.empty() && state_.pod(*i).pod.uid != uid)) return;
  state_.evict(*i);
  core::logger().info("release {}: the API server says it is gone or finished", name);
}

std::int64_t ExtenderService::list_mark() const {
  std::shared_lock lock(mu_);
  return seq_;
}

void ExtenderService::resync(const json& items, std::int64_t mark) {
  std::unordered_set<std::string> listed;
  if (items.is_array()) {
    for (const json& pod : items) {
      observe_pod(pod);
      if (!pod.is_object()) continue;
      const auto meta = pod.find("metadata");
      if (meta == pod.end() || !meta->is_object()) continue;
      const auto uid = meta->find("uid");
      if (uid != meta->end() && uid->is_string()) listed.insert(uid->get<std::string>());
    }
  }
  std::unique_lock lock(mu_);
  std::vector<int> gone;
  for (int i = 0; i < static_cast<int>(state_.pods().size()); ++i) {
    const auto& bp = state_.pod(i);
    if (bp.node >= 0 && bp.pod.start_seq <= mark && !listed.contains(bp.pod.uid)) {
      gone.push_back(i);
    }
  }
  for (int i : gone) {
    core::logger().info("release {}: not in the API server's pod list", state_.pod(i).pod.name);
    state_.evict(i);
  }
}

void ExtenderService::remember(const cluster::Pod& pod) {
  if (pod.uid.empty()) return;
  std::lock_guard lock(seen_mu_);
  auto [it, inserted] = seen_.insert_or_assign(pod.uid, pod);
  if (!inserted) return;
  seen_order_.push_back(pod.uid);
  while (seen_order_.size() > std::max<std::size_t>(1, config_.remembered_pods)) {
    seen_.erase(seen_order_.front());
    seen_order_.pop_front();
  }
}

std::optional<cluster::Pod> ExtenderService::recall(const std::string& uid) const {
  std::lock_guard lock(seen_mu_);
  auto it = seen_.find(uid);
  if (it == seen_.end()) return std::nullopt;
  return it->second;
}

core::Result<cluster::Pod> ExtenderService::translate_and_remember(const json& pod) {
  if (pod.is_null()) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "the request has no Pod; kube-scheduler always sends the pod being "
                      "scheduled");
  }
  TESSERA_ASSIGN_OR_RETURN(auto p, translate_pod(pod));
  remember(p);
  return p;
}

core::Result<ExtenderFilterResult> ExtenderService::filter(const ExtenderArgs& args) {
  TESSERA_ASSIGN_OR_RETURN(auto pod, translate_and_remember(args.pod));
  const auto names = candidate_names(args);
  std::vector<bool> keep(names.size(), false);
  ExtenderFilterResult r;
  {
    std::shared_lock lock(mu_);
    std::vector<int> known;
    std::vector<std::size_t> known_at;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (auto n = state_.find_node(names[i])) {
        known.push_back(*n);
        known_at.push_back(i);
      } else {
        r.failed_nodes[names[i]] = std::string(kUnknownNode);
      }
    }
    if (requests_nothing(pod)) {
      // Nothing tessera allocates: every node it knows passes.
      for (std::size_t i : known_at) keep[i] = true;
    } else if (!known.empty()) {
      const auto verdicts = cluster::filter_nodes(state_, pod, known);
      for (std::size_t k = 0; k < verdicts.size() && k < known_at.size(); ++k) {
        const auto& v = verdicts[k];
        const std::string& name = names[known_at[k]];
        const bool ok = v.fits && v.affinity && cluster::acceptable(pod, *v.affinity);
        if (ok) {
          keep[known_at[k]] = true;
        } else if (could_ever_fit(state_.node(v.node), pod)) {
          r.failed_nodes[name] = v.reason.empty() ? "does not fit now" : v.reason;
        } else {
          r.failed_and_unresolvable_nodes[name] =
              fmt::format("cannot fit even when empty{}", v.reason.empty() ? "" : ": " + v.reason);
        }
      }
    }
  }
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (keep[i]) kept.push_back(names[i]);
  }
  if (args.node_names) r.node_names = kept;
  if (args.nodes) {
    json list = *args.nodes;
    json items = json::array();
    if (const json* all = find_member(*args.nodes, "items"); all && all->is_array()) {
      for (std::size_t i = 0; i < all->size() && i < keep.size(); ++i) {
        if (keep[i]) items.push_back((*all)[i]);
      }
    }
    list["items"] = std::move(items);
    r.nodes = std::move(list);
  }
  core::logger().info("filter {}: {} of {} nodes fit ({} failed, {} unresolvable)", describe(pod),
                      kept.size(), names.size(), r.failed_nodes.size(),
                      r.failed_and_unresolvable_nodes.size());
  return r;
}

core::Result<HostPriorityList> ExtenderService::prioritize(const ExtenderArgs& args) {
  TESSERA_ASSIGN_OR_RETURN(auto pod, translate_and_remember(args.pod));
  const auto names = candidate_names(args);
  HostPriorityList out;
  out.reserve(names.size());
  std::shared_lock lock(mu_);
  for (const auto& name : names) {
    HostPriority hp;
    hp.host = name;
    const auto n = state_.find_node(name);
    if (n && !requests_nothing(pod)) {
      const int node[] = {*n};
      const auto v = cluster::filter_nodes(state_, pod, node);
      if (!v.empty() && v.front().fits) {
        hp.score = std::clamp<std::int64_t>(cluster::score_node(state_, pod, *n),
                                            kMinExtenderPriority, kMaxExtenderPriority);
      }
    }
    out.push_back(std::move(hp));
  }
  core::logger().info("prioritize {}: {} nodes scored", describe(pod), out.size());
  return out;
}

core::Result<ExtenderPreemptionResult> ExtenderService::preempt(
    const ExtenderPreemptionArgs& args) {
  TESSERA_ASSIGN_OR_RETURN(auto pod, translate_and_remember(args.pod));
  std::vector<std::string> proposed;
  if (args.node_name_to_meta_victims) {
    for (const auto& [node, v] : *args.node_name_to_meta_victims) proposed.push_back(node);
  }
  if (args.node_name_to_victims) {
    for (const auto& [node, v] : *args.node_name_to_victims) proposed.push_back(node);
  }
  std::sort(proposed.begin(), proposed.end());
  proposed.erase(std::unique(proposed.begin(), proposed.end()), proposed.end());

  ExtenderPreemptionResult r;
  std::unique_lock lock(mu_);
  cluster::PreemptionConfig cfg = config_.preemption;
  cfg.nodes.clear();
  for (const auto& name : proposed) {
    if (auto n = state_.find_node(name)) cfg.nodes.push_back(*n);
  }
  std::sort(cfg.nodes.begin(), cfg.nodes.end());
  if (cfg.nodes.empty()) {
    core::logger().info(
        "preempt {}: none of the {} proposed nodes has a reported topology; "
        "vetoing all",
        describe(pod), proposed.size());
    return r;
  }
  const auto d = cluster::preempt(state_, pod, config_.method, cfg, preemption_workspace_);
  if (d.status == cluster::DecisionStatus::kInvalid) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "preempt {} ({}): the request cannot be searched: {}", describe(pod),
                       cluster::to_string(config_.method), d.reason);
  }
  if (!d.chosen) {
    core::logger().info("preempt {} ({}): no candidate on {} proposed nodes: {}", describe(pod),
                        cluster::to_string(config_.method), cfg.nodes.size(), d.reason);
    return r;
  }
  const auto& c = *d.chosen;
  const std::string& node = state_.node(c.node).name();
  MetaVictims mv;
  std::vector<std::string> victim_names;
  for (int v : c.victims) {
    const auto& bp = state_.pod(v);
    mv.pods.push_back(MetaPod{bp.pod.uid});
    victim_names.push_back(bp.pod.name);
  }
  // kube-scheduler deletes the victims it is told of. With the API server's pod events they
  // leave the state when they are gone (their GPUs are busy until then); without them, now, so
  // that the preemptor's next filter sees the room.
  if (!config_.pod_events) {
    for (int v : c.victims) state_.evict(v);
  }
  r.node_name_to_meta_victims.emplace(node, std::move(mv));
  core::logger().info(
      "preempt {} ({}, alpha {}): node {}, victims [{}], affinity {}, score {:.4f}, "
      "{} sets evaluated",
      describe(pod), cluster::to_string(config_.method), cfg.alpha, node,
      fmt::join(victim_names, ", "), cluster::to_string(c.affinity), c.score, d.sets_evaluated);
  return r;
}

ExtenderBindingResult ExtenderService::bind(const ExtenderBindingArgs& args) {
  ExtenderBindingResult r;
  const std::string name = fmt::format(
      "{}/{}", args.pod_namespace.empty() ? "default" : args.pod_namespace, args.pod_name);
  auto fail = [&](std::string why) {
    r.error = fmt::format("tessera cannot bind {} to {}: {}", name, args.node, why);
    core::logger().warn("{}", r.error);
    return r;
  };
  if (args.pod_name.empty() || args.node.empty()) return fail("PodName and Node are required");
  auto pod = recall(args.pod_uid);
  if (!pod) {
    return fail(
        fmt::format("pod UID '{}' was not seen by filter, so its requests are unknown; "
                    "kube-scheduler will filter it again",
                    args.pod_uid));
  }
  pod->name = name;
  std::optional<int> bound;
  std::string placement;
  if (!requests_nothing(*pod)) {
    std::unique_lock lock(mu_);
    const auto n = state_.find_node(args.node);
    if (!n) return fail(std::string(kUnknownNode));
    if (auto old = state_.find_pod(name)) {
      const auto& bp = state_.pod(*old);
      if (bp.pod.uid == pod->uid && bp.node == *n) {
        return r;  // a retried bind that already went through
      }
      // Live pod names are unique: an older pod of this name is gone.
      state_.evict(*old);
    }
    const auto a = cluster::best_assignment(state_.node(*n), pod->request);
    if (!a) return fail("it does not fit there now");
    if (!cluster::acceptable(*pod, a->affinity)) {
      return fail(
          fmt::format("the best placement there is {}, which its topology requirement "
                      "{} does not accept",
                      cluster::to_string(a->affinity), cluster::to_string(pod->topology)));
    }
    pod->start_seq = ++seq_;
    auto b = state_.bind(*pod, *n, *a);
    if (!b) return fail(b.error().message());
    bound = *b;
    placement = placement_annotation(*a);
    core::logger().info("bind {} -> {}: GPUs [{}], core groups [{}], {}", describe(*pod), args.node,
                        fmt::join(a->gpus, ","), fmt::join(a->core_groups, ","),
                        cluster::to_string(a->affinity));
  }
  // The API call runs without the lock: a slow API server must not stall filter calls.
  BindingTarget t;
  t.pod_namespace = args.pod_namespace.empty() ? "default" : args.pod_namespace;
  t.pod_name = args.pod_name;
  t.pod_uid = args.pod_uid;
  t.node = args.node;
  t.placement = std::move(placement);
  if (auto st = binder_->bind(t); !st) {
    if (bound) {
      std::unique_lock lock(mu_);
      state_.evict(*bound);
    }
    return fail(st.error().message());
  }
  return r;
}

bool ExtenderService::release(const std::string& pod_name) {
  std::unique_lock lock(mu_);
  auto i = state_.find_pod(pod_name);
  if (!i) return false;
  state_.evict(*i);
  core::logger().info("release {}: resources freed", pod_name);
  return true;
}

HttpResponse ExtenderService::standby() {
  return json_error(503,
                    "this extender replica is a standby (leader election): kube-scheduler "
                    "reaches the leader through the Service once this one is not ready");
}

HttpResponse ExtenderService::handle_filter(std::string_view body) {
  auto j = parse_body(body, "ExtenderArgs");
  if (!j) return error_response(j.error());
  auto args = parse_extender_args(*j);
  if (!args) return error_response(args.error());
  auto r = filter(*args);
  if (!r) return error_response(r.error());
  return json_response(to_json(*r));
}

HttpResponse ExtenderService::handle_prioritize(std::string_view body) {
  auto j = parse_body(body, "ExtenderArgs");
  if (!j) return error_response(j.error());
  auto args = parse_extender_args(*j);
  if (!args) return error_response(args.error());
  auto r = prioritize(*args);
  if (!r) return error_response(r.error());
  return json_response(to_json(*r));
}

HttpResponse ExtenderService::handle_preempt(std::string_view body) {
  auto j = parse_body(body, "ExtenderPreemptionArgs");
  if (!j) return error_response(j.error());
  auto args = parse_preemption_args(*j);
  if (!args) return error_response(args.error());
  auto r = preempt(*args);
  if (!r) return error_response(r.error());
  return json_response(to_json(*r));
}

HttpResponse ExtenderService::handle_bind(std::string_view body) {
  auto j = parse_body(body, "ExtenderBindingArgs");
  if (!j) return error_response(j.error());
  auto args = parse_binding_args(*j);
  if (!args) return error_response(args.error());
  return json_response(to_json(bind(*args)));
}

HttpResponse ExtenderService::handle_put_topology(const std::string& node, std::string_view body) {
  auto j = parse_body(body, "topology push");
  if (!j) return error_response(j.error());
  if (!j->is_object()) {
    return json_error(400, fmt::format("topology push: expected an object {{\"node\": NAME, "
                                       "\"topology\": {{...}}}}, got {}",
                                       json_type_name(*j)));
  }
  const json* n = find_member(*j, "node");
  if (!n || !n->is_string() || n->get<std::string>() != node) {
    return json_error(400, fmt::format("topology push: \"node\" must be the node named in the "
                                       "path ('{}')",
                                       node));
  }
  const json* t = find_member(*j, "topology");
  if (!t || !t->is_object()) {
    return json_error(400, "topology push: \"topology\" must be an object (hw::to_json's form)");
  }
  auto topo = hw::topology_from_json(*t, fmt::format("PUT /tessera/v1/nodes/{}/topology", node));
  if (!topo) return json_error(400, topo.error().message());
  const int gpus = static_cast<int>(topo->gpus().size());
  auto added = put_topology(node, std::make_shared<const hw::HostTopology>(std::move(*topo)));
  if (!added) return error_response(added.error());
  core::logger().info("topology of node {} {} ({} GPUs)", node, *added ? "added" : "updated", gpus);
  return json_response(
      json{{"node", node}, {"result", *added ? "added" : "updated"}, {"gpus", gpus}});
}

nlohmann::json ExtenderService::nodes_json() const {
  std::shared_lock lock(mu_);
  json nodes = json::array();
  for (int i = 0; i < static_cast<int>(state_.nodes().size()); ++i) {
    nodes.push_back(cluster::node_json(state_, i));
  }
  return json{{"nodes", std::move(nodes)}};
}

std::size_t ExtenderService::node_count() const {
  std::shared_lock lock(mu_);
  return state_.nodes().size();
}

cluster::ClusterState ExtenderService::snapshot() const {
  std::shared_lock lock(mu_);
  return state_;
}

bool ExtenderService::authorized(const HttpRequest& request) const {
  return config_.write_token.empty() || carries_bearer_token(request, config_.write_token);
}

HttpResponse ExtenderService::unauthorized() {
  return json_error(401,
                    "this route needs 'Authorization: Bearer <token>' with the token of the "
                    "extender's --write-token-file");
}

void ExtenderService::register_routes(HttpServer& server) {
  const auto& c = config_;
  const auto verb = [this](HttpResponse (ExtenderService::*handle)(std::string_view)) {
    return [this, handle](const HttpRequest& r) {
      if (!leading()) return standby();
      return (this->*handle)(r.body);
    };
  };
  server.post(route(c.url_prefix, c.filter_verb), verb(&ExtenderService::handle_filter));
  server.post(route(c.url_prefix, c.prioritize_verb), verb(&ExtenderService::handle_prioritize));
  server.post(route(c.url_prefix, c.preempt_verb), verb(&ExtenderService::handle_preempt));
  server.post(route(c.url_prefix, c.bind_verb), verb(&ExtenderService::handle_bind));
  server.get("/healthz", [this](const HttpRequest&) {
    return json_response(json{{"status", "ok"}, {"nodes", node_count()}});
  });
  server.get("/readyz", [this](const HttpRequest&) {
    if (!leading()) return standby();
    return json_response(json{{"status", "ready"}, {"nodes", node_count()}});
  });
  server.get("/tessera/v1/nodes",
             [this](const HttpRequest&) { return json_response(nodes_json()); });
  server.put("/tessera/v1/nodes/([^/]+)/topology", [this](const HttpRequest& r) {
    if (!authorized(r)) return unauthorized();
    return handle_put_topology(r.matches.at(1), r.body);
  });
  server.del("/tessera/v1/pods/([^/]+)/([^/]+)", [this](const HttpRequest& r) {
    if (!authorized(r)) return unauthorized();
    const std::string name = r.matches.at(1) + "/" + r.matches.at(2);
    if (!release(name)) return json_error(404, fmt::format("pod {} is not bound", name));
    return json_response(json{{"pod", name}, {"result", "released"}});
  });
}

}  // namespace tessera::k8s
