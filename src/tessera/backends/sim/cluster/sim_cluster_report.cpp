// What the cluster simulator reports: the summary, its table and JSON.

#include <fmt/format.h>

#include <map>

#include "tessera/backends/sim/cluster/internal/sim_cluster_util.hpp"
#include "tessera/backends/sim/cluster/sim_cluster.hpp"
#include "tessera/cluster/registry.hpp"

namespace tessera::sim {

ClusterSimSummary summarize(const ClusterSimResult& r) {
  ClusterSimSummary s;
  std::int64_t victims = 0;
  for (const auto& p : r.preemptions) {
    ++s.attempts;
    if (!p.preempted) continue;
    ++s.preemptions;
    s.hits += p.hit ? 1 : 0;
    victims += static_cast<std::int64_t>(p.victims.size());
  }
  if (s.preemptions > 0) {
    s.hit_rate = static_cast<double>(s.hits) / static_cast<double>(s.preemptions);
    s.victims_per_preemption = static_cast<double>(victims) / static_cast<double>(s.preemptions);
  }
  s.evicted_gpu_hours = r.evicted_gpu_hours;
  std::vector<double> waits;
  waits.reserve(r.pending.size());
  for (const auto& w : r.pending) waits.push_back(core::to_seconds(w.wait));
  s.pending_p50_s = detail::percentile(waits, 50);
  s.pending_p99_s = detail::percentile(waits, 99);
  for (const auto& u : r.utilisation) {
    s.gpu_utilisation_mean += u.gpu;
    s.cpu_utilisation_mean += u.cpu;
  }
  if (!r.utilisation.empty()) {
    s.gpu_utilisation_mean /= static_cast<double>(r.utilisation.size());
    s.cpu_utilisation_mean /= static_cast<double>(r.utilisation.size());
  }
  return s;
}

nlohmann::json to_json(const PreemptionRecord& r) {
  nlohmann::json j;
  j["time_s"] = core::to_seconds(r.time);
  j["sequence"] = r.sequence;
  j["preemptor"] = r.preemptor;
  j["class"] = r.preemptor_class;
  j["priority"] = r.priority;
  j["qos"] = cluster::to_string(r.qos);
  j["requirement"] = cluster::to_string(r.requirement);
  j["request"] = {
      {"gpus", r.request.gpus}, {"cpus", r.request.cpus}, {"memory_bytes", r.request.memory_bytes}};
  j["method"] = cluster::to_string(r.method);
  j["preempted"] = r.preempted;
  j["placed"] = r.placed;
  if (r.node >= 0) j["node"] = r.node_name;
  if (r.placed) {
    j["gpus"] = r.assignment.gpus;
    j["core_groups"] = r.assignment.core_groups;
  }
  j["victims"] = r.victims;
  j["victim_priorities"] = r.victim_priorities;
  j["victim_gpus"] = r.victim_gpus;
  j["affinity"] = r.affinity ? nlohmann::json(cluster::to_string(*r.affinity)) : nlohmann::json();
  j["hit"] = r.hit;
  j["nodes_examined"] = r.nodes_examined;
  j["sets_evaluated"] = r.sets_evaluated;
  if (!r.reason.empty()) j["reason"] = r.reason;
  return j;
}

nlohmann::json to_json(const ClusterSimResult& r) {
  const ClusterSimSummary s = summarize(r);
  nlohmann::json j;
  j["scenario"] = r.scenario;
  j["method"] = cluster::to_string(r.method);
  j["alpha"] = r.alpha;
  j["seed"] = r.seed;
  j["duration_s"] = core::to_seconds(r.duration);
  j["nodes"] = r.nodes;
  j["gpus"] = r.total_gpus;
  j["summary"] = {{"preemptions", s.preemptions},
                  {"attempts", s.attempts},
                  {"hits", s.hits},
                  {"hit_rate", s.hit_rate},
                  {"victims_per_preemption", s.victims_per_preemption},
                  {"evicted_gpu_hours", s.evicted_gpu_hours},
                  {"pending_p50_s", s.pending_p50_s},
                  {"pending_p99_s", s.pending_p99_s},
                  {"gpu_utilisation_mean", s.gpu_utilisation_mean},
                  {"cpu_utilisation_mean", s.cpu_utilisation_mean},
                  {"pods_created", r.pods_created},
                  {"pods_completed", r.pods_completed},
                  {"unschedulable", r.unschedulable},
                  {"guaranteed_bound_below_requirement", r.bound_below_requirement},
                  {"evictions", r.evictions},
                  {"requeued", r.requeued},
                  {"lost", r.lost}};
  // Pending time per workload.
  std::map<std::string, std::vector<double>> waits;
  std::map<std::string, int> censored;
  for (const auto& w : r.pending) {
    waits[w.workload].push_back(core::to_seconds(w.wait));
    censored[w.workload] += w.censored ? 1 : 0;
  }
  nlohmann::json per = nlohmann::json::object();
  for (const auto& [name, v] : waits) {
    per[name] = {{"pods", v.size()},
                 {"p50_s", detail::percentile(v, 50)},
                 {"p99_s", detail::percentile(v, 99)},
                 {"still_pending", censored[name]}};
  }
  j["pending"] = per;
  nlohmann::json util = nlohmann::json::array();
  for (const auto& u : r.utilisation) {
    util.push_back({{"time_s", core::to_seconds(u.time)},
                    {"gpu", u.gpu},
                    {"cpu", u.cpu},
                    {"pending", u.pending}});
  }
  j["utilisation"] = std::move(util);
  nlohmann::json pre = nlohmann::json::array();
  for (const auto& p : r.preemptions) pre.push_back(to_json(p));
  j["preemptions"] = std::move(pre);
  return j;
}

std::string summary_table(const ClusterSimResult& r) {
  const ClusterSimSummary s = summarize(r);
  std::string out;
  out += fmt::format(
      "scenario {}: {} nodes, {} GPUs, {:.1f} h simulated, method {}, alpha {}, "
      "seed {}\n",
      r.scenario, r.nodes, r.total_gpus, core::to_seconds(r.duration) / 3600.0,
      cluster::to_string(r.method), r.alpha, r.seed);
  auto row = [&out](std::string_view k, const std::string& v) {
    out += fmt::format("  {:<40} {}\n", k, v);
  };
  row("preemptions (attempts)", fmt::format("{} ({})", s.preemptions, s.attempts));
  row("topology-affinity hit rate",
      s.preemptions > 0 ? fmt::format("{:.1f}% ({}/{})", 100.0 * s.hit_rate, s.hits, s.preemptions)
                        : std::string("-"));
  row("guaranteed pods bound below requirement", fmt::format("{}", r.bound_below_requirement));
  row("victims per preemption", fmt::format("{:.2f}", s.victims_per_preemption));
  row("evictions (requeued, lost)", fmt::format("{} ({}, {})", r.evictions, r.requeued, r.lost));
  row("evicted GPU-hours", fmt::format("{:.1f}", s.evicted_gpu_hours));
  row("pending P50 / P99", fmt::format("{:.1f} s / {:.1f} s", s.pending_p50_s, s.pending_p99_s));
  row("GPU / CPU allocation (mean)",
      fmt::format("{:.1f}% / {:.1f}%", 100.0 * s.gpu_utilisation_mean,
                  100.0 * s.cpu_utilisation_mean));
  row("pods created (completed, unschedulable)",
      fmt::format("{} ({}, {})", r.pods_created, r.pods_completed, r.unschedulable));
  return out;
}

}  // namespace tessera::sim
