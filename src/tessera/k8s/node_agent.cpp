#include "tessera/k8s/node_agent.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "tessera/core/text.hpp"
#include "tessera/core/try.hpp"
#include "tessera/hw/topology/json.hpp"

namespace tessera::k8s {
namespace {

std::unexpected<core::Error> parse_error(const std::string& path, std::string_view what) {
  return core::failf(core::Domain::kK8s, core::Code::kParse, "{}: {}", path, what);
}

// A value for an error message: scalars as written, arrays and objects by type only (dumping
// a value an attacker nested a million levels deep would recurse as deep).
std::string describe(const nlohmann::json& v) {
  if (v.is_structured()) return fmt::format("an {}", v.type_name());
  constexpr std::size_t kShown = 80;
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > kShown) text = text.substr(0, kShown) + "...";
  return text;
}

core::Result<std::vector<int>> parse_indices(const nlohmann::json& pod, const std::string& path,
                                             const char* key) {
  std::vector<int> out;
  if (!pod.contains(key)) return out;
  const auto& list = pod.at(key);
  const std::string where = fmt::format("{}.{}", path, key);
  if (!list.is_array()) {
    return parse_error(where, "expected an array of indices");
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& v = list[i];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 ||
        v.get<std::int64_t>() > std::numeric_limits<int>::max()) {
      return parse_error(fmt::format("{}[{}]", where, i),
                         fmt::format("expected a non-negative integer, got {}", describe(v)));
    }
    out.push_back(v.get<int>());
  }
  std::ranges::sort(out);
  if (const auto dup = std::ranges::adjacent_find(out); dup != out.end()) {
    return parse_error(where, fmt::format("index {} is listed twice", *dup));
  }
  return out;
}

core::Result<PodAllocation> parse_pod(const nlohmann::json& pod, const std::string& path) {
  if (!pod.is_object()) {
    return parse_error(path,
                       "expected an object {\"name\", \"gpus\", \"core_groups\", "
                       "\"memory\"}");
  }
  for (const auto& [key, value] : pod.items()) {
    if (key != "name" && key != "gpus" && key != "core_groups" && key != "memory") {
      return parse_error(fmt::format("{}.{}", path, key),
                         "unknown field; a pod has name, gpus, core_groups and memory");
    }
  }
  PodAllocation a;
  if (!pod.contains("name") || !pod.at("name").is_string() ||
      pod.at("name").get_ref<const std::string&>().empty()) {
    return parse_error(path + ".name", "expected the pod's name (a non-empty string)");
  }
  a.name = pod.at("name").get<std::string>();
  TESSERA_ASSIGN_OR_RETURN(a.assignment.gpus, parse_indices(pod, path, "gpus"));
  TESSERA_ASSIGN_OR_RETURN(a.assignment.core_groups, parse_indices(pod, path, "core_groups"));
  if (pod.contains("memory")) {
    const auto& memory = pod.at("memory");
    if (!memory.is_array()) {
      return parse_error(path + ".memory", "expected an array of {\"numa\", \"bytes\"}");
    }
    for (std::size_t i = 0; i < memory.size(); ++i) {
      const std::string where = fmt::format("{}.memory[{}]", path, i);
      const auto& m = memory[i];
      if (!m.is_object()) {
        return parse_error(
            where, fmt::format("expected {{\"numa\": index, \"bytes\": n}}, got {}", describe(m)));
      }
      const auto field = [&](const char* key, std::int64_t min, std::int64_t max,
                             const char* wanted) -> core::Result<std::int64_t> {
        const std::string at = fmt::format("{}.{}", where, key);
        if (!m.contains(key)) return parse_error(at, fmt::format("missing; expected {}", wanted));
        const auto& v = m.at(key);
        if (!v.is_number_integer() || v.get<std::int64_t>() < min || v.get<std::int64_t>() > max) {
          return parse_error(at, fmt::format("expected {}, got {}", wanted, describe(v)));
        }
        return v.get<std::int64_t>();
      };
      for (const auto& [key, value] : m.items()) {
        if (key != "numa" && key != "bytes") {
          return parse_error(fmt::format("{}.{}", where, key),
                             "unknown field; a memory entry has numa and bytes");
        }
      }
      TESSERA_ASSIGN_OR_RETURN(
          const std::int64_t numa,
          field("numa", 0, std::numeric_limits<int>::max(), "a NUMA node index >= 0"));
      TESSERA_ASSIGN_OR_RETURN(
          const std::int64_t bytes,
          field("bytes", 1, std::numeric_limits<std::int64_t>::max(), "an integer > 0"));
      a.assignment.memory.push_back({.numa = static_cast<int>(numa), .bytes = bytes});
    }
    std::ranges::sort(a.assignment.memory, {}, &cluster::Assignment::Memory::numa);
    const auto dup =
        std::ranges::adjacent_find(a.assignment.memory, {}, &cluster::Assignment::Memory::numa);
    if (dup != a.assignment.memory.end()) {
      return parse_error(
          path + ".memory",
          fmt::format("NUMA node {} is listed twice; give one entry per NUMA node", dup->numa));
    }
  }
  if (a.assignment.gpus.empty() && a.assignment.core_groups.empty() &&
      a.assignment.memory.empty()) {
    return parse_error(path, fmt::format("pod '{}' holds nothing: give gpus, core_groups or "
                                         "memory (a pod that left is omitted from the set)",
                                         a.name));
  }
  return a;
}

// The pod as the cluster state records it, checked against `t`: its request is what it holds,
// its affinity where that lies.
core::Result<cluster::Pod> holder(const hw::HostTopology& t, const PodAllocation& p,
                                  cluster::Assignment& a) {
  const auto out_of_range = [&](const char* what, int index, std::size_t count) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "pod '{}': {} {} does not exist on this node (it has {})", p.name, what,
                       index, count);
  };
  cluster::Pod pod;
  pod.name = p.name;
  const std::vector<cluster::NumaFree> allocatable = cluster::capacity_per_numa(t);
  std::set<int> numa;
  for (int g : a.gpus) {
    if (g >= static_cast<int>(t.gpus().size())) {
      return out_of_range("GPU", g, t.gpus().size());
    }
    numa.insert(t.gpu(g).numa);
  }
  for (int c : a.core_groups) {
    if (c >= static_cast<int>(t.core_groups().size())) {
      return out_of_range("core group", c, t.core_groups().size());
    }
    numa.insert(t.core_group(c).numa);
    pod.request.cpus += t.core_group(c).cores;
  }
  for (const auto& m : a.memory) {
    if (m.numa >= static_cast<int>(t.numa_nodes().size())) {
      return out_of_range("NUMA node", m.numa, t.numa_nodes().size());
    }
    if (m.bytes > allocatable[static_cast<std::size_t>(m.numa)].memory_bytes) {
      return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                         "pod '{}': {} bytes on NUMA node {}, which has {} allocatable", p.name,
                         m.bytes, m.numa,
                         allocatable[static_cast<std::size_t>(m.numa)].memory_bytes);
    }
    numa.insert(m.numa);
    if (__builtin_add_overflow(pod.request.memory_bytes, m.bytes, &pod.request.memory_bytes)) {
      return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                         "pod '{}': its memory entries add up to more than 2^63 bytes", p.name);
    }
  }
  pod.request.gpus = static_cast<int>(a.gpus.size());
  std::set<int> sockets;
  for (int j : numa) sockets.insert(t.numa(j).socket);
  a.affinity = numa.size() <= 1      ? cluster::Affinity::kSameNuma
               : sockets.size() <= 1 ? cluster::Affinity::kSameSocket
                                     : cluster::Affinity::kCrossSocket;
  return pod;
}

// Binds every pod of `pods` to node 0 of `state`; the first that does not fit is the error.
core::Status bind_all(cluster::ClusterState& state, const hw::HostTopology& t,
                      std::vector<PodAllocation>& pods) {
  for (auto& p : pods) {
    TESSERA_ASSIGN_OR_RETURN(cluster::Pod pod, holder(t, p, p.assignment));
    auto bound = state.bind(std::move(pod), 0, p.assignment);
    if (!bound) return std::unexpected(bound.error().with_context(fmt::format("pod '{}'", p.name)));
  }
  return {};
}

cluster::ClusterState fresh_state(const std::string& node,
                                  std::shared_ptr<const hw::HostTopology> topology) {
  cluster::ClusterState state;
  // Cannot fail: the only node of an empty state.
  (void)state.add_node(node, std::move(topology));
  return state;
}

// Linux numbers CPUs below NR_CPUS, at most 8192 (CONFIG_NR_CPUS_RANGE_END with MAXSMP).
constexpr int kMaxCpus = 8192;

std::unexpected<core::Error> flag_error(std::string_view flag, std::string_view text,
                                        std::string_view what) {
  return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument, "{} '{}': {}", flag, text,
                     what);
}

// A decimal number of digits only (no sign, no spaces); nullopt otherwise or past `max`.
std::optional<std::int64_t> decimal(std::string_view s, std::int64_t max) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > max) return std::nullopt;
  return v;
}

}  // namespace

core::Result<std::vector<int>> parse_cpu_list(std::string_view text) {
  constexpr std::string_view kFlag = "--reserved-cpus";
  std::set<int> cpus;
  if (text.empty()) return std::vector<int>{};
  for (std::string_view part : core::split(text, ',')) {
    const std::vector<std::string_view> ends = core::split(part, '-');
    const auto first = decimal(ends.front(), kMaxCpus - 1);
    const auto last = ends.size() == 2 ? decimal(ends.back(), kMaxCpus - 1) : first;
    if (ends.size() > 2 || !first || !last) {
      return flag_error(
          kFlag, text,
          fmt::format("'{}' is not a CPU number or a range FIRST-LAST of CPU numbers (0-{}); the "
                      "list is the kubelet's, e.g. 0-1,64-65",
                      part, kMaxCpus - 1));
    }
    if (*first > *last) {
      return flag_error(
          kFlag, text,
          fmt::format("the range '{}' runs backwards; write {}-{}", part, *last, *first));
    }
    for (std::int64_t c = *first; c <= *last; ++c) cpus.insert(static_cast<int>(c));
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

core::Result<std::map<int, std::int64_t>> parse_reserved_memory(
    const std::vector<std::string>& values) {
  constexpr std::string_view kFlag = "--reserved-memory";
  std::map<int, std::int64_t> bytes;
  for (const std::string& value : values) {
    if (value.empty()) continue;  // as the kubelet reads it: nothing reserved
    for (std::string_view entry : core::split(value, ';')) {
      const std::vector<std::string_view> numa_and_limits = core::split(entry, ':');
      const auto numa = decimal(numa_and_limits.front(), std::numeric_limits<int>::max());
      if (numa_and_limits.size() != 2 || !numa) {
        return flag_error(kFlag, value,
                          fmt::format("'{}' is not NUMA:TYPE=QUANTITY[,TYPE=QUANTITY...] (the "
                                      "kubelet's form, e.g. 0:memory=1Gi)",
                                      entry));
      }
      if (bytes.contains(static_cast<int>(*numa))) {
        return flag_error(kFlag, value,
                          fmt::format("NUMA node {} is given twice; give each once", *numa));
      }
      std::optional<std::int64_t> memory;
      for (std::string_view limit : core::split(numa_and_limits.back(), ',')) {
        const std::vector<std::string_view> kv = core::split(limit, '=');
        if (kv.size() != 2) {
          return flag_error(kFlag, value,
                            fmt::format("'{}' is not TYPE=QUANTITY (e.g. memory=1Gi)", limit));
        }
        // The kubelet also reserves hugepages per NUMA node; tessera hands out none, so they are
        // accepted and not counted.
        if (kv.front().starts_with("hugepages-")) continue;
        if (kv.front() != "memory") {
          return flag_error(
              kFlag, value,
              fmt::format("unknown memory type '{}': memory or hugepages-SIZE", kv.front()));
        }
        if (memory) {
          return flag_error(kFlag, value,
                            fmt::format("memory is given twice for NUMA node {}", *numa));
        }
        TESSERA_ASSIGN_OR_RETURN(memory, core::with_context(parse_bytes(kv.back(), "memory"),
                                                            fmt::format("{} '{}'", kFlag, value)));
      }
      bytes[static_cast<int>(*numa)] = memory.value_or(0);
    }
  }
  return bytes;
}

core::Result<std::vector<PodAllocation>> parse_allocations(const nlohmann::json& body) {
  if (!body.is_object() || !body.contains("pods") || !body.at("pods").is_array()) {
    return core::fail(core::Domain::kK8s, core::Code::kParse,
                      "expected {\"pods\": [{\"name\", \"gpus\", \"core_groups\", \"memory\"}, "
                      "...]} (the whole set of pods on this node; [] when none)");
  }
  std::vector<PodAllocation> pods;
  const auto& list = body.at("pods");
  for (std::size_t i = 0; i < list.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(PodAllocation p, parse_pod(list[i], fmt::format("pods[{}]", i)));
    pods.push_back(std::move(p));
  }
  return pods;
}

nlohmann::json allocations_json(const std::vector<PodAllocation>& pods) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : pods) {
    nlohmann::json memory = nlohmann::json::array();
    for (const auto& m : p.assignment.memory) {
      memory.push_back({{"numa", m.numa}, {"bytes", m.bytes}});
    }
    list.push_back({{"name", p.name},
                    {"gpus", p.assignment.gpus},
                    {"core_groups", p.assignment.core_groups},
                    {"memory", std::move(memory)}});
  }
  return {{"pods", std::move(list)}};
}

NodeAgent::NodeAgent(AgentOptions options, DiscoverFn discover, const core::Clock& clock)
    : options_(std::move(options)), discover_(std::move(discover)), clock_(clock) {}

core::Result<std::unique_ptr<NodeAgent>> NodeAgent::create(AgentOptions options,
                                                           DiscoverFn discover,
                                                           const core::Clock& clock) {
  TESSERA_TRY(validate_object_name(options.node_name));
  TESSERA_TRY(validate(options.nrt));
  if (options.refresh_period <= 0) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "the refresh period must be positive (e.g. 30s)");
  }
  if (!discover) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "the agent needs a discovery function");
  }
  std::unique_ptr<NodeAgent> agent(new NodeAgent(std::move(options), std::move(discover), clock));
  TESSERA_ASSIGN_OR_RETURN(hw::HostTopology first,
                           core::with_context(agent->discover_(), "discovering the node"));
  agent->topology_ = std::make_shared<const hw::HostTopology>(std::move(first));
  agent->topology_key_ = hw::to_json(*agent->topology_);
  agent->state_ = fresh_state(agent->options_.node_name, agent->topology_);
  agent->last_refresh_ = clock.now();
  return agent;
}

cluster::ClusterState NodeAgent::rebuild(const std::string& node,
                                         std::shared_ptr<const hw::HostTopology> topology,
                                         std::vector<PodAllocation>& pods,
                                         std::vector<std::string>* dropped) {
  cluster::ClusterState state = fresh_state(node, topology);
  std::vector<PodAllocation> kept;
  for (auto& p : pods) {
    std::vector<PodAllocation> one{p};
    if (bind_all(state, *topology, one)) {
      kept.push_back(std::move(one.front()));
    } else if (dropped != nullptr) {
      dropped->push_back(p.name);
    }
  }
  pods = std::move(kept);
  return state;
}

core::Result<RefreshOutcome> NodeAgent::refresh() {
  // Discovery can take a while (hwloc walks sysfs): outside the lock, so requests keep being
  // served from the topology held.
  auto found = discover_();
  std::lock_guard lock(mu_);
  last_refresh_ = clock_.now();
  if (!found) {
    last_refresh_error_ = found.error().message();
    return std::unexpected(found.error().with_context("refreshing the topology"));
  }
  last_refresh_error_.clear();
  RefreshOutcome outcome;
  nlohmann::json key = hw::to_json(*found);
  if (key != topology_key_) {
    outcome.changed = true;
    topology_ = std::make_shared<const hw::HostTopology>(std::move(*found));
    topology_key_ = std::move(key);
    state_ = rebuild(options_.node_name, topology_, pods_, &outcome.dropped_pods);
    ++generation_;
    ++topology_generation_;
  }
  outcome.generation = generation_;
  return outcome;
}

bool NodeAgent::refresh_due() const {
  return clock_.now() >= next_refresh_at();
}

core::Nanos NodeAgent::next_refresh_at() const {
  std::lock_guard lock(mu_);
  return last_refresh_ + options_.refresh_period;
}

core::Result<AllocationOutcome> NodeAgent::set_allocations(std::vector<PodAllocation> pods) {
  std::ranges::sort(pods, {}, &PodAllocation::name);
  for (std::size_t i = 1; i < pods.size(); ++i) {
    if (pods[i].name == pods[i - 1].name) {
      return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                         "pod '{}' is listed twice; list each pod once with all it holds",
                         pods[i].name);
    }
  }
  std::lock_guard lock(mu_);
  cluster::ClusterState state = fresh_state(options_.node_name, topology_);
  TESSERA_TRY(bind_all(state, *topology_, pods));
  AllocationOutcome outcome;
  if (allocations_json(pods) != allocations_json(pods_)) {
    outcome.changed = true;
    state_ = std::move(state);
    pods_ = std::move(pods);
    ++generation_;
  }
  outcome.generation = generation_;
  return outcome;
}

std::uint64_t NodeAgent::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

std::uint64_t NodeAgent::topology_generation() const {
  std::lock_guard lock(mu_);
  return topology_generation_;
}

std::shared_ptr<const hw::HostTopology> NodeAgent::topology() const {
  std::lock_guard lock(mu_);
  return topology_;
}

std::vector<PodAllocation> NodeAgent::allocations() const {
  std::lock_guard lock(mu_);
  return pods_;
}

nlohmann::json NodeAgent::topology_json() const {
  std::lock_guard lock(mu_);
  return {{"node", options_.node_name},
          {"generation", generation_},
          {"topology", cluster::node_json(state_, 0)}};
}

core::Result<nlohmann::json> NodeAgent::node_resource_topology() const {
  std::lock_guard lock(mu_);
  return k8s::node_resource_topology(state_.node(0), options_.nrt);
}

nlohmann::json NodeAgent::health() const {
  std::lock_guard lock(mu_);
  nlohmann::json h = {{"status", "ok"},
                      {"node", options_.node_name},
                      {"generation", generation_},
                      {"gpus", topology_->gpus().size()},
                      {"pods", pods_.size()},
                      {"seconds_since_refresh", core::to_seconds(clock_.now() - last_refresh_)}};
  if (!last_refresh_error_.empty()) h["last_refresh_error"] = last_refresh_error_;
  return h;
}

AgentLoop::AgentLoop(NodeAgent& agent, PushFn push, const core::Clock& clock)
    : agent_(agent), push_(std::move(push)), clock_(clock) {}

TickReport AgentLoop::tick() {
  TickReport report;
  if (agent_.refresh_due()) {
    report.refreshed = true;
    auto outcome = agent_.refresh();
    if (outcome) {
      report.refresh = std::move(*outcome);
    } else {
      report.refresh_error = outcome.error();
    }
  }
  if (!push_) return report;
  const std::uint64_t generation = agent_.topology_generation();
  const core::Nanos now = clock_.now();
  const bool new_topology =
      generation != pushed_generation_ && (!attempted_ || generation != attempted_generation_);
  const bool period_passed = attempted_ && now - last_attempt_ >= agent_.options().refresh_period;
  if (new_topology || period_passed) {
    report.pushed = true;
    attempted_ = true;
    attempted_generation_ = generation;
    last_attempt_ = now;
    const auto topology = agent_.topology();
    auto st = push_(agent_.options().node_name, *topology);
    if (st) {
      pushed_generation_ = generation;
    } else {
      report.push_error = st.error();
    }
  }
  return report;
}

core::Nanos AgentLoop::next_wake() const {
  core::Nanos wake = agent_.next_refresh_at();
  if (push_ && attempted_) wake = std::min(wake, last_attempt_ + agent_.options().refresh_period);
  if (push_ && !attempted_) wake = clock_.now();
  return wake;
}

}  // namespace tessera::k8s
