// Scenario files for `tessera cluster-sim` and the trace loaders behind them (docs/cluster.md,
// "Cluster simulator").
//
// The openb pod list (Alibaba clusterdata, cluster-trace-gpu-v2023) maps to the cluster level so:
// - qos: LS (latency-sensitive) and Guaranteed -> priority 1000, guaranteed QoS; Burstable ->
//   priority 500, best-effort; BE -> priority 0, best-effort. ASSUMPTION: the trace gives a QoS
//   class but no priority value; these three levels mirror the paper's workloads A/B/C (online
//   service > other services > batch).
// - topology: ASSUMPTION, the trace has none. Guaranteed pods of 1-2 GPUs need one NUMA node and
//   of 4 GPUs one socket (the paper's LLM services ask for the tightest level their size can
//   get on its servers); larger pods and best-effort pods ask for nothing.
// - GPUs: num_gpu whole GPUs; a pod with gpu_milli < 1000 (a share of one GPU) is rounded up to
//   one whole GPU, because the cluster level hands out whole GPUs (sharing inside a GPU is the
//   MIG and intra-GPU levels' business). Pods with num_gpu 0 are skipped: they hold no GPU, and
//   this simulator studies GPU placement.
// - cpu_milli -> whole cores (rounded up), memory_mib -> bytes.
// - lifetime: deletion_time - creation_time (trace seconds); rows without a later deletion are
//   skipped.
//
// The openb node list maps to generated servers (hw::generate). ASSUMPTION: the trace gives each
// node's CPUs, memory, GPU count and model, no topology. Two sockets of one NUMA node each (one
// socket when the CPU count is odd), the CPUs, memory and GPUs split evenly between them (the odd
// GPU on the first); cpu_milli counts the CPUs pods ask for, so each is a core of its own group
// (one thread, allocated singly, as kubelet's static CPU manager hands out CPUs); no links between
// GPUs; the GPU model as the trace names it, its memory unknown (0).

#include "tessera/backends/sim/cluster/cluster_workload.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "tessera/cluster/registry.hpp"
#include "tessera/core/file_read.hpp"
#include "tessera/core/try.hpp"
#include "tessera/hw/topology/presets.hpp"

namespace tessera::sim {

namespace {

using core::ConfigNode;
using core::Nanos;

constexpr std::int64_t kGiB = std::int64_t{1024} * 1024 * 1024;
constexpr std::int64_t kMiB = std::int64_t{1024} * 1024;

// openb QoS -> priority (see the top of the file).
constexpr std::int32_t kPriorityLatencySensitive = 1000;
constexpr std::int32_t kPriorityBurstable = 500;
constexpr std::int32_t kPriorityBestEffort = 0;

std::string resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || base_dir.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

core::Result<PodClass> parse_pod_class(const ConfigNode& n, std::string fallback_name) {
  PodClass c;
  TESSERA_ASSIGN_OR_RETURN(c.name, n.string_or("name", std::move(fallback_name)));
  TESSERA_ASSIGN_OR_RETURN(c.weight, n.double_or("weight", 1.0));
  if (!(c.weight > 0)) return std::unexpected(n.error("weight must be > 0"));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t priority, n.int_or("priority", 0));
  if (priority < -2'000'000'000 || priority > 2'000'000'000) {
    return std::unexpected(n.error("priority must be within +-2e9 (Kubernetes' range)"));
  }
  c.priority = static_cast<std::int32_t>(priority);
  TESSERA_ASSIGN_OR_RETURN(const std::string qos, n.string_or("qos", "best-effort"));
  auto q = cluster::parse_qos(qos);
  if (!q) return std::unexpected(n.error(q.error().message()));
  c.qos = *q;
  TESSERA_ASSIGN_OR_RETURN(const std::string topo, n.string_or("topology", "none"));
  auto t = cluster::parse_topology_requirement(topo);
  if (!t) return std::unexpected(n.error(t.error().message()));
  c.topology = *t;
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t gpus, n.int_or("gpus", 0));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t cpus, n.int_or("cpus", 0));
  TESSERA_ASSIGN_OR_RETURN(const double memory_gib, n.double_or("memory_gib", 0.0));
  if (gpus < 0 || gpus > 1024 || cpus < 0 || cpus > 100'000 || memory_gib < 0 || memory_gib > 1e6) {
    return std::unexpected(
        n.error("gpus, cpus and memory_gib must be non-negative (and at most 1024, 100000, 1e6)"));
  }
  if (gpus == 0 && cpus == 0 && memory_gib == 0) {
    return std::unexpected(n.error("a pod must request something: set gpus, cpus or memory_gib"));
  }
  c.request.gpus = static_cast<int>(gpus);
  c.request.cpus = static_cast<int>(cpus);
  c.request.memory_bytes = static_cast<std::int64_t>(std::llround(memory_gib * kGiB));
  return c;
}

// Pod-class keys, shared by services, batch shapes and the experiments' mixes.
#define TESSERA_POD_CLASS_KEYS \
  "name", "weight", "priority", "qos", "topology", "gpus", "cpus", "memory_gib"

core::Result<ServiceSpec> parse_service(const ConfigNode& n, int index) {
  TESSERA_TRY(n.check_keys({TESSERA_POD_CLASS_KEYS, "replicas", "load", "autoscale_interval"}));
  ServiceSpec s;
  TESSERA_ASSIGN_OR_RETURN(s.replica, parse_pod_class(n, fmt::format("service{}", index)));
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode replicas, n.at("replicas"));
  TESSERA_TRY(replicas.check_keys({"min", "max"}));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t lo, replicas.get_int("min"));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t hi, replicas.get_int("max"));
  if (lo < 0 || hi < lo || hi > 100'000) {
    return std::unexpected(replicas.error("need 0 <= min <= max <= 100000"));
  }
  s.min_replicas = static_cast<int>(lo);
  s.max_replicas = static_cast<int>(hi);
  if (auto load = n.find("load")) {
    TESSERA_TRY(
        load->check_keys({"mean", "amplitude", "period", "peak_at", "noise", "per_replica"}));
    TESSERA_ASSIGN_OR_RETURN(s.mean_load, load->get_double("mean"));
    TESSERA_ASSIGN_OR_RETURN(s.amplitude, load->double_or("amplitude", 0.0));
    TESSERA_ASSIGN_OR_RETURN(s.period, load->duration_or("period", s.period));
    TESSERA_ASSIGN_OR_RETURN(s.peak_at, load->duration_or("peak_at", s.peak_at));
    TESSERA_ASSIGN_OR_RETURN(s.noise, load->double_or("noise", 0.0));
    TESSERA_ASSIGN_OR_RETURN(s.target_load_per_replica, load->get_double("per_replica"));
    if (!(s.mean_load >= 0) || !(s.amplitude >= 0 && s.amplitude < 1) ||
        !(s.noise >= 0 && s.noise < 1) || !(s.target_load_per_replica > 0) || s.period <= 0) {
      return std::unexpected(load->error(
          "need mean >= 0, 0 <= amplitude < 1, 0 <= noise < 1, per_replica > 0, period > 0"));
    }
  } else {
    // No load curve: a flat service at its minimum replica count (the paper's workload B).
    s.mean_load = s.min_replicas;
    s.target_load_per_replica = 1.0;
  }
  TESSERA_ASSIGN_OR_RETURN(s.autoscale_interval,
                           n.duration_or("autoscale_interval", s.autoscale_interval));
  if (s.autoscale_interval <= 0) {
    return std::unexpected(n.error("autoscale_interval must be > 0"));
  }
  return s;
}

core::Result<bool> parse_on_eviction(const ConfigNode& n) {
  TESSERA_ASSIGN_OR_RETURN(const std::string v, n.string_or("on_eviction", "requeue"));
  if (v == "requeue") return true;
  if (v == "lost") return false;
  return std::unexpected(
      n.error(fmt::format("on_eviction must be 'requeue' or 'lost', got '{}'", v)));
}

core::Result<BatchSpec> parse_batch(const ConfigNode& n, int index, const std::string& base) {
  TESSERA_TRY(n.check_keys({"name", "shapes", "arrivals_per_hour", "durations", "on_eviction"}));
  BatchSpec b;
  TESSERA_ASSIGN_OR_RETURN(b.name, n.string_or("name", fmt::format("batch{}", index)));
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode shapes, n.at("shapes"));
  TESSERA_ASSIGN_OR_RETURN(const auto items, shapes.items());
  if (items.empty()) return std::unexpected(shapes.error("needs at least one shape"));
  for (std::size_t i = 0; i < items.size(); ++i) {
    TESSERA_TRY(items[i].check_keys({TESSERA_POD_CLASS_KEYS}));
    TESSERA_ASSIGN_OR_RETURN(auto c, parse_pod_class(items[i], fmt::format("{}-{}", b.name, i)));
    b.shapes.push_back(std::move(c));
  }
  TESSERA_ASSIGN_OR_RETURN(b.arrivals_per_hour, n.get_double("arrivals_per_hour"));
  if (!(b.arrivals_per_hour >= 0 && b.arrivals_per_hour <= 1e6)) {
    return std::unexpected(n.error("arrivals_per_hour must be in [0, 1e6]"));
  }
  if (auto d = n.find("durations")) {
    TESSERA_TRY(d->check_keys({"source", "mean", "csv", "min", "max"}));
    TESSERA_ASSIGN_OR_RETURN(const std::string source, d->string_or("source", "exponential"));
    if (source == "exponential") {
      b.durations = DurationSource::kExponential;
      TESSERA_ASSIGN_OR_RETURN(b.mean_duration, d->get_duration("mean"));
      if (b.mean_duration <= 0) return std::unexpected(d->error("mean must be > 0"));
    } else if (source == "philly") {
      b.durations = DurationSource::kPhilly;
      TESSERA_ASSIGN_OR_RETURN(const std::string csv, d->get_string("csv"));
      b.philly_runtime_csv = resolve(base, csv);
    } else {
      return std::unexpected(
          d->error(fmt::format("source must be 'exponential' or 'philly', got '{}'", source)));
    }
    TESSERA_ASSIGN_OR_RETURN(b.min_duration, d->duration_or("min", b.min_duration));
    TESSERA_ASSIGN_OR_RETURN(b.max_duration, d->duration_or("max", b.max_duration));
    if (b.min_duration <= 0 || b.max_duration < b.min_duration) {
      return std::unexpected(d->error("need 0 < min <= max"));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(b.requeue_evicted, parse_on_eviction(n));
  return b;
}

core::Result<cluster::PreemptionConfig> parse_preemption(const ConfigNode& n,
                                                         cluster::PreemptionMethod& method) {
  TESSERA_TRY(n.check_keys({"method", "alpha", "max_victims", "topology_scores"}));
  cluster::PreemptionConfig c;
  TESSERA_ASSIGN_OR_RETURN(const std::string m, n.string_or("method", "incremental"));
  auto pm = cluster::parse_preemption_method(m);
  if (!pm) return std::unexpected(n.error(pm.error().message()));
  method = *pm;
  TESSERA_ASSIGN_OR_RETURN(c.alpha, n.double_or("alpha", c.alpha));
  if (!(c.alpha >= 0 && c.alpha <= 1)) return std::unexpected(n.error("alpha must be in [0, 1]"));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t mv, n.int_or("max_victims", c.max_victims));
  if (mv < 1 || mv > 16) return std::unexpected(n.error("max_victims must be in [1, 16]"));
  c.max_victims = static_cast<int>(mv);
  if (auto t = n.find("topology_scores")) {
    TESSERA_TRY(t->check_keys({"same_numa", "same_socket", "cross_socket"}));
    TESSERA_ASSIGN_OR_RETURN(c.topology.same_numa, t->double_or("same_numa", 1.0));
    TESSERA_ASSIGN_OR_RETURN(c.topology.same_socket,
                             t->double_or("same_socket", c.topology.same_socket));
    TESSERA_ASSIGN_OR_RETURN(c.topology.cross_socket,
                             t->double_or("cross_socket", c.topology.cross_socket));
  }
  return c;
}

}  // namespace

core::Result<ClusterScenario> parse_cluster_scenario(const core::ConfigNode& root) {
  TESSERA_TRY(root.check_keys({"name", "seed", "duration", "sample_interval", "nodes", "services",
                               "batches", "trace", "preemption"}));
  ClusterScenario s;
  const std::filesystem::path src(root.source());
  s.base_dir = src.has_parent_path() ? src.parent_path().string() : std::string(".");
  TESSERA_ASSIGN_OR_RETURN(s.name, root.string_or("name", src.stem().string()));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t seed, root.int_or("seed", 1));
  if (seed < 0) return std::unexpected(root.error("seed must be >= 0"));
  s.seed = static_cast<std::uint64_t>(seed);
  TESSERA_ASSIGN_OR_RETURN(s.duration, root.get_duration("duration"));
  TESSERA_ASSIGN_OR_RETURN(s.sample_interval,
                           root.duration_or("sample_interval", s.sample_interval));
  if (s.duration <= 0 || s.sample_interval <= 0) {
    return std::unexpected(root.error("duration and sample_interval must be > 0"));
  }

  TESSERA_ASSIGN_OR_RETURN(const ConfigNode nodes, root.at("nodes"));
  TESSERA_ASSIGN_OR_RETURN(const auto pools, nodes.items());
  if (pools.empty()) return std::unexpected(nodes.error("needs at least one node pool"));
  for (std::size_t i = 0; i < pools.size(); ++i) {
    const ConfigNode& p = pools[i];
    TESSERA_TRY(p.check_keys(
        {"name_prefix", "count", "preset", "topology_file", "openb_node_csv", "numa_memory_gib"}));
    NodePool pool;
    TESSERA_ASSIGN_OR_RETURN(pool.name_prefix,
                             p.string_or("name_prefix", fmt::format("pool{}", i)));
    TESSERA_ASSIGN_OR_RETURN(pool.preset, p.string_or("preset", ""));
    TESSERA_ASSIGN_OR_RETURN(const std::string file, p.string_or("topology_file", ""));
    pool.topology_file = resolve(s.base_dir, file);
    TESSERA_ASSIGN_OR_RETURN(const std::string node_csv, p.string_or("openb_node_csv", ""));
    pool.openb_node_csv = resolve(s.base_dir, node_csv);
    const int sources = static_cast<int>(!pool.preset.empty()) +
                        static_cast<int>(!pool.topology_file.empty()) +
                        static_cast<int>(!pool.openb_node_csv.empty());
    if (sources != 1) {
      return std::unexpected(
          p.error("give exactly one of 'preset', 'topology_file' and 'openb_node_csv'"));
    }
    if (const auto memory = p.find("numa_memory_gib")) {
      TESSERA_ASSIGN_OR_RETURN(const double gib, memory->as_double());
      if (pool.topology_file.empty() || !(gib > 0) || gib > 1e6) {
        return std::unexpected(memory->error(
            "numa_memory_gib sizes the NUMA nodes of a 'topology_file' that gives none: a number "
            "of GiB in (0, 1e6]"));
      }
      pool.numa_memory_bytes = static_cast<std::int64_t>(std::llround(gib * kGiB));
    }
    if (pool.openb_node_csv.empty()) {
      TESSERA_ASSIGN_OR_RETURN(const std::int64_t count, p.get_int("count"));
      if (count < 1 || count > 100'000) {
        return std::unexpected(p.error("count must be in [1, 100000]"));
      }
      pool.count = static_cast<int>(count);
    } else {
      TESSERA_ASSIGN_OR_RETURN(const std::int64_t count, p.int_or("count", 0));
      if (count < 0 || count > 100'000) {
        return std::unexpected(p.error("count must be in [0, 100000] (0: every row)"));
      }
      pool.count = static_cast<int>(count);
    }
    s.nodes.push_back(std::move(pool));
  }

  if (auto services = root.find("services")) {
    TESSERA_ASSIGN_OR_RETURN(const auto items, services->items());
    for (std::size_t i = 0; i < items.size(); ++i) {
      TESSERA_ASSIGN_OR_RETURN(auto svc, parse_service(items[i], static_cast<int>(i)));
      s.services.push_back(std::move(svc));
    }
  }
  if (auto batches = root.find("batches")) {
    TESSERA_ASSIGN_OR_RETURN(const auto items, batches->items());
    for (std::size_t i = 0; i < items.size(); ++i) {
      TESSERA_ASSIGN_OR_RETURN(auto b, parse_batch(items[i], static_cast<int>(i), s.base_dir));
      s.batches.push_back(std::move(b));
    }
  }
  if (auto trace = root.find("trace")) {
    TESSERA_TRY(
        trace->check_keys({"openb_pod_csv", "start_s", "time_scale", "max_pods", "on_eviction"}));
    TraceSpec t;
    TESSERA_ASSIGN_OR_RETURN(const std::string csv, trace->get_string("openb_pod_csv"));
    t.openb_pod_csv = resolve(s.base_dir, csv);
    TESSERA_ASSIGN_OR_RETURN(t.start_s, trace->double_or("start_s", 0.0));
    if (!(t.start_s >= 0)) return std::unexpected(trace->error("start_s must be >= 0"));
    TESSERA_ASSIGN_OR_RETURN(t.time_scale, trace->double_or("time_scale", 1.0));
    if (!(t.time_scale > 0 && t.time_scale <= 1e6)) {
      return std::unexpected(trace->error("time_scale must be in (0, 1e6]"));
    }
    TESSERA_ASSIGN_OR_RETURN(t.max_pods, trace->int_or("max_pods", -1));
    TESSERA_ASSIGN_OR_RETURN(t.requeue_evicted, parse_on_eviction(*trace));
    s.trace = std::move(t);
  }
  if (s.services.empty() && s.batches.empty() && !s.trace) {
    return std::unexpected(root.error("nothing to run: add services, batches or a trace"));
  }
  if (auto p = root.find("preemption")) {
    TESSERA_ASSIGN_OR_RETURN(s.preemption, parse_preemption(*p, s.method));
  }
  return s;
}

core::Result<ClusterScenario> load_cluster_scenario(const std::string& file) {
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode root, ConfigNode::load_file(file));
  return parse_cluster_scenario(root);
}

namespace {

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

bool to_double(const std::string& s, double& v) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && p == end;
}

// The whole table (core::read_file's cap for tables), to be read line by line.
core::Result<std::istringstream> open_csv(const std::string& path, std::string_view what) {
  auto text = core::read_file(
      path, {.what = what, .domain = core::Domain::kWorkload, .max_bytes = core::kMaxTableBytes});
  if (!text && text.error().code() == core::Code::kNotFound) {
    return core::failf(core::Domain::kWorkload, core::Code::kNotFound,
                       "{} (relative paths resolve against the scenario file's folder)",
                       text.error().message());
  }
  if (!text) return std::unexpected(text.error());
  return std::istringstream(std::move(*text));
}

// One of the openb tables (openb_pod_list, openb_node_list), row by row: the header must have
// the columns asked for, and every row at least the header's fields.
class OpenbTable {
 public:
  static core::Result<OpenbTable> open(const std::string& path, std::string_view what,
                                       std::string_view table,
                                       std::initializer_list<const char*> columns) {
    TESSERA_ASSIGN_OR_RETURN(std::istringstream in, open_csv(path, what));
    OpenbTable t(path, std::move(in));
    if (!std::getline(t.in_, t.line_)) {
      return core::failf(core::Domain::kWorkload, core::Code::kParse, "{}: empty file", path);
    }
    const auto header = split_fields(t.line_);
    t.width_ = header.size();
    for (std::size_t i = 0; i < header.size(); ++i) t.column_[header[i]] = i;
    for (const char* need : columns) {
      if (!t.column_.contains(need)) {
        return core::failf(core::Domain::kWorkload, core::Code::kParse,
                           "{}: no column '{}' (expected the {} header)", path, need, table);
      }
    }
    return t;
  }

  // Moves to the next row with fields; false at the end.
  core::Result<bool> next() {
    while (std::getline(in_, line_)) {
      ++lineno_;
      if (line_.empty() || line_ == "\r") continue;
      fields_ = split_fields(line_);
      if (fields_.size() < width_) {
        return core::failf(core::Domain::kWorkload, core::Code::kParse,
                           "{}:{}: {} fields, the header has {}", path_, lineno_, fields_.size(),
                           width_);
      }
      return true;
    }
    return false;
  }

  // A column the table was opened with, in the current row.
  const std::string& operator[](const char* column) const { return fields_[column_.at(column)]; }
  int line_number() const { return lineno_; }
  const std::string& line() const { return line_; }

 private:
  OpenbTable(std::string path, std::istringstream in)
      : path_(std::move(path)), in_(std::move(in)) {}

  std::string path_;
  std::istringstream in_;
  std::string line_;
  std::vector<std::string> fields_;
  std::map<std::string, std::size_t> column_;
  std::size_t width_ = 0;
  int lineno_ = 1;
};

}  // namespace

core::Result<std::vector<double>> load_philly_runtimes(const std::string& csv_path) {
  TESSERA_ASSIGN_OR_RETURN(std::istringstream in, open_csv(csv_path, "the Philly runtime table"));
  std::string line;
  if (!std::getline(in, line) || line.rfind("runtime", 0) != 0) {
    return core::failf(core::Domain::kWorkload, core::Code::kParse,
                       "{}: expected a header 'runtime' (philly_runtime.csv)", csv_path);
  }
  std::vector<double> out;
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    double v = 0;
    if (!to_double(line, v) || v < 0) {
      return core::failf(core::Domain::kWorkload, core::Code::kParse,
                         "{}:{}: expected a non-negative run time in seconds, got '{}'", csv_path,
                         lineno, line);
    }
    out.push_back(v);
  }
  if (out.empty()) {
    return core::failf(core::Domain::kWorkload, core::Code::kParse, "{}: no run times", csv_path);
  }
  return out;
}

core::Result<std::vector<TracePod>> load_openb_pods(const TraceSpec& spec) {
  const std::string& path = spec.openb_pod_csv;
  TESSERA_ASSIGN_OR_RETURN(
      OpenbTable table, OpenbTable::open(path, "the openb pod list", "openb_pod_list",
                                         {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli",
                                          "qos", "creation_time", "deletion_time"}));
  std::vector<TracePod> out;
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(const bool row, table.next());
    if (!row) break;
    const int lineno = table.line_number();
    auto num = [&](const char* c, double& v) -> core::Status {
      const std::string& s = table[c];
      if (s.empty()) {
        v = -1;
        return {};
      }
      if (!to_double(s, v)) {
        return core::failf(core::Domain::kWorkload, core::Code::kParse,
                           "{}:{}: column {}: expected a number, got '{}'", path, lineno, c, s);
      }
      return {};
    };
    double cpu = 0, mem = 0, ngpu = 0, gmilli = 0, created = 0, deleted = 0;
    TESSERA_TRY(num("cpu_milli", cpu));
    TESSERA_TRY(num("memory_mib", mem));
    TESSERA_TRY(num("num_gpu", ngpu));
    TESSERA_TRY(num("gpu_milli", gmilli));
    TESSERA_TRY(num("creation_time", created));
    TESSERA_TRY(num("deletion_time", deleted));
    if (ngpu <= 0 || created < 0 || deleted <= created) continue;  // see the top of the file
    if (deleted <= spec.start_s) continue;
    created = std::max(created, spec.start_s);
    TracePod tp;
    cluster::Pod& p = tp.pod;
    p.name = "trace/" + table["name"];
    p.uid = table["name"];
    const std::string& qos = table["qos"];
    const int gpus = static_cast<int>(std::ceil(ngpu));  // gpu_milli < 1000: one whole GPU
    if (qos == "LS" || qos == "Guaranteed") {
      p.priority = kPriorityLatencySensitive;
      p.qos = cluster::Qos::kGuaranteed;
      p.topology = gpus <= 2   ? cluster::TopologyRequirement::kNuma
                   : gpus <= 4 ? cluster::TopologyRequirement::kSocket
                               : cluster::TopologyRequirement::kNone;
    } else if (qos == "Burstable") {
      p.priority = kPriorityBurstable;
      p.qos = cluster::Qos::kBestEffort;
    } else if (qos == "BE") {
      p.priority = kPriorityBestEffort;
      p.qos = cluster::Qos::kBestEffort;
    } else {
      return core::failf(core::Domain::kWorkload, core::Code::kParse,
                         "{}:{}: qos '{}' is not one of LS, Guaranteed, Burstable, BE", path,
                         lineno, qos);
    }
    p.request.gpus = gpus;
    p.request.cpus = cpu > 0 ? static_cast<int>(std::ceil(cpu / 1000.0)) : 0;
    p.request.memory_bytes = mem > 0 ? static_cast<std::int64_t>(mem) * kMiB : 0;
    tp.created = core::seconds((created - spec.start_s) * spec.time_scale);
    tp.lifetime = core::seconds((deleted - created) * spec.time_scale);
    out.push_back(std::move(tp));
    if (spec.max_pods >= 0 && static_cast<std::int64_t>(out.size()) >= spec.max_pods) break;
  }
  return out;
}

core::Result<std::vector<TraceNode>> load_openb_nodes(const std::string& csv_path) {
  TESSERA_ASSIGN_OR_RETURN(OpenbTable table,
                           OpenbTable::open(csv_path, "the openb node list", "openb_node_list",
                                            {"sn", "cpu_milli", "memory_mib", "gpu", "model"}));
  // Servers of one shape share one topology: (CPUs, MiB, GPUs, model).
  std::map<std::tuple<std::int64_t, std::int64_t, int, std::string>,
           std::shared_ptr<const hw::HostTopology>>
      shapes;
  std::vector<TraceNode> out;
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(const bool row, table.next());
    if (!row) break;
    const int lineno = table.line_number();
    double cpu_milli = 0, memory_mib = 0, gpus = 0;
    const bool numbers = to_double(table["cpu_milli"], cpu_milli) &&
                         to_double(table["memory_mib"], memory_mib) &&
                         to_double(table["gpu"], gpus);
    if (!numbers || cpu_milli < 1000 || cpu_milli > 1e8 || memory_mib < 0 || memory_mib > 1e12 ||
        gpus < 0 || gpus > 1024 || gpus != std::floor(gpus)) {
      return core::failf(core::Domain::kWorkload, core::Code::kParse,
                         "{}:{}: expected cpu_milli >= 1000, memory_mib >= 0 and a whole gpu "
                         "count from 0 to 1024, got '{}'",
                         csv_path, lineno, table.line());
    }
    const auto cpus = static_cast<std::int64_t>(cpu_milli / 1000);
    const auto mib = static_cast<std::int64_t>(memory_mib);
    const int gpu_count = static_cast<int>(gpus);
    const std::string& model = table["model"];
    auto& topology = shapes[{cpus, mib, gpu_count, model}];
    if (!topology) {
      hw::ServerShape shape;
      shape.name = fmt::format("openb-{}c-{}mib-{}x{}", cpus, mib, gpu_count,
                               model.empty() ? "none" : model);
      shape.sockets = cpus % 2 == 0 ? 2 : 1;
      shape.numa_per_socket = 1;
      shape.cores_per_numa = static_cast<int>(cpus / shape.sockets);
      shape.cores_per_group = 1;
      shape.threads_per_core = 1;
      shape.memory_per_numa_bytes = mib * kMiB / shape.sockets;
      shape.gpus_by_numa = shape.sockets == 2
                               ? std::vector<int>{gpu_count - gpu_count / 2, gpu_count / 2}
                               : std::vector<int>{gpu_count};
      shape.gpu_model = model;
      auto generated = hw::generate(shape);
      if (!generated) {
        return std::unexpected(
            generated.error().with_context(fmt::format("{}:{}", csv_path, lineno)));
      }
      topology = std::make_shared<const hw::HostTopology>(std::move(*generated));
    }
    out.push_back(TraceNode{.name = table["sn"], .topology = topology});
  }
  if (out.empty()) {
    return core::failf(core::Domain::kWorkload, core::Code::kParse, "{}: no nodes", csv_path);
  }
  return out;
}

}  // namespace tessera::sim
