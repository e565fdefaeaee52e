#include "tessera/cli/daemon_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "tessera/backends/cuda/backend_status.hpp"
#include "tessera/backends/nvml/nvml_library.hpp"
#include "tessera/cli/stop_signals.hpp"
#include "tessera/core/config.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/daemon/control_server.hpp"
#include "tessera/daemon/daemon_metrics.hpp"
#include "tessera/daemon/mps_control.hpp"
#include "tessera/daemon/tenant_table.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::cli {

namespace {

struct NodeGpus {
  hw::GpuSpec spec;
  int count = 0;
};

// The node's GPUs through NVML: every device by index until NVML has no more, each named in the
// catalog; one model only (a daemon's policy lays out one SM grid).
core::Result<NodeGpus> discover_gpus() {
  auto library = cuda::NvmlLibrary::open();
  if (!library) {
    return std::unexpected(library.error().with_context(
        "--gpu not given and the GPUs cannot be discovered through NVML (give --gpu and "
        "--devices)"));
  }
  const cuda::NvmlApi& api = (*library)->api();
  NodeGpus out;
  std::string first_name;
  // ASSUMPTION: no node has more than 64 GPUs (the control protocol's device range).
  for (unsigned i = 0; i < 64; ++i) {
    cuda::nvml::Device device = nullptr;
    if (api.device_get_handle_by_index(i, &device) != cuda::nvml::kSuccess) break;
    std::array<char, cuda::nvml::kDeviceNameV2BufferSize> name{};
    TESSERA_TRY((*library)->check(api.device_get_name(device, name.data(), name.size()),
                                  "nvmlDeviceGetName"));
    const auto catalog = hw::gpu_for_device_name(name.data());
    if (!catalog) {
      return core::failf(core::Domain::kNvml, core::Code::kUnsupported,
                         "GPU {} is a {}, which is not in tessera's catalog (`tessera list`); "
                         "give --gpu with the closest model",
                         i, name.data());
    }
    // In MIG mode CUDA sees the GPU's instances, not its SMs: the SM ranges a policy lays out
    // over the whole GPU would mean nothing there. (A GPU without MIG answers "not supported".)
    unsigned mig = 0;
    unsigned pending = 0;
    if (api.device_get_mig_mode(device, &mig, &pending) == cuda::nvml::kSuccess &&
        mig == cuda::nvml::kDeviceMigEnable) {
      return core::failf(
          core::Domain::kNvml, core::Code::kFailedPrecondition,
          "GPU {} ({}) is in MIG mode: the daemon shares whole GPUs; take it out "
          "of MIG mode (`sudo nvidia-smi -i {} -mig 0`, then reset the GPU) or leave "
          "its instances to tessera's MIG level",
          i, name.data(), i);
    }
    if (i == 0) {
      first_name = name.data();
      TESSERA_ASSIGN_OR_RETURN(out.spec, hw::find_gpu(*catalog));
    } else if (first_name != name.data()) {
      return core::failf(core::Domain::kNvml, core::Code::kUnsupported,
                         "the node's GPUs are of two models ({} and {}); run one daemon per model, "
                         "each with --gpu and --devices",
                         first_name, name.data());
    }
    ++out.count;
  }
  if (out.count == 0) {
    return core::fail(core::Domain::kNvml, core::Code::kNotFound,
                      "--gpu not given and NVML reports no GPU");
  }
  return out;
}

// The options a --config file may set: its key, the flag, and the field it fills.
struct ConfigKey {
  std::string_view key;
  const char* flag;
  std::string DaemonFlags::*text;  // null for --devices, the one integer
  bool duration;
};
constexpr ConfigKey kConfigKeys[] = {
    {"gpu", "--gpu", &DaemonFlags::gpu, false},
    {"devices", "--devices", nullptr, false},
    {"policy", "--policy", &DaemonFlags::policy, false},
    {"mechanism", "--mechanism", &DaemonFlags::mechanism, false},
    {"socket", "--socket", &DaemonFlags::socket, false},
    {"tick", "--tick", &DaemonFlags::tick, true},
    {"idle_after", "--idle-after", &DaemonFlags::idle_after, true},
    {"min_residency", "--min-residency", &DaemonFlags::min_residency, true},
    {"metrics", "--metrics", &DaemonFlags::metrics, false},
    {"settings_file", "--settings-file", &DaemonFlags::settings_file, false},
    {"grants_file", "--grants-file", &DaemonFlags::grants_file, false},
};

// The flags with the --config file's values for every option not given on the command line.
core::Result<DaemonFlags> with_config_file(const DaemonFlags& given) {
  DaemonFlags f = given;
  if (given.config.empty()) return f;
  TESSERA_ASSIGN_OR_RETURN(const core::ConfigNode root,
                           core::ConfigNode::load_file(given.config, "daemon configuration"));
  if (!root.is_map()) return std::unexpected(root.error("expected a map of daemon options"));
  std::vector<std::string_view> keys;
  for (const ConfigKey& k : kConfigKeys) keys.push_back(k.key);
  keys.push_back("latency_critical_uids");
  keys.push_back("best_effort_share");
  keys.push_back("slo_guided");
  TESSERA_TRY(root.check_keys(keys));
  if (const auto guided = root.find("slo_guided");
      guided && (given.command == nullptr || given.command->count("--slo-guided") == 0)) {
    TESSERA_ASSIGN_OR_RETURN(f.slo_guided, guided->as_bool());
  }
  if (const auto share = root.find("best_effort_share");
      share && (given.command == nullptr || given.command->count("--best-effort-share") == 0)) {
    TESSERA_ASSIGN_OR_RETURN(f.best_effort_share, share->as_double());
    if (!(f.best_effort_share > 0 && f.best_effort_share <= 1)) {
      return std::unexpected(share->error("expected a share in (0, 1]"));
    }
  }
  if (const auto uids = root.find("latency_critical_uids");
      uids && (given.command == nullptr || given.command->count("--latency-critical-uids") == 0)) {
    if (!uids->is_sequence()) return std::unexpected(uids->error("expected a list of uids"));
    TESSERA_ASSIGN_OR_RETURN(const std::vector<core::ConfigNode> items, uids->items());
    f.latency_critical_uids.clear();
    for (const core::ConfigNode& item : items) {
      TESSERA_ASSIGN_OR_RETURN(const std::int64_t uid, item.as_int());
      f.latency_critical_uids.push_back(uid);
    }
  }
  for (const ConfigKey& k : kConfigKeys) {
    const std::optional<core::ConfigNode> node = root.find(k.key);
    if (!node || (given.command != nullptr && given.command->count(k.flag) > 0)) continue;
    if (k.text == nullptr) {
      TESSERA_ASSIGN_OR_RETURN(const std::int64_t devices, node->as_int());
      if (devices < 1 || devices > 64) return std::unexpected(node->error("expected 1-64 GPUs"));
      f.devices = static_cast<int>(devices);
      continue;
    }
    if (k.duration) TESSERA_TRY(node->as_duration());  // a bad one is named at its line here
    TESSERA_ASSIGN_OR_RETURN(f.*k.text, node->as_string());
  }
  return f;
}

// What the node can do, for choosing the mechanism and for `ctl list`: green contexts need a
// driver of CUDA 12.4 or later (cuGreenCtxCreate, cuda.h); several processes' green contexts run
// at once only under MPS.
struct Capabilities {
  bool driver = false;
  std::string driver_reason;  // why there is none
  int driver_version = 0;
  bool green_contexts = false;
  bool mps = false;
  nlohmann::json to_json() const {
    return {{"driver_version", driver_version},
            {"green_contexts", green_contexts},
            {"mps", mps},
            {"gate", true}};
  }
};

Capabilities probe_capabilities(bool mps_running) {
  Capabilities c;
  const cuda::DriverProbe probe = cuda::probe_driver();
  c.driver = probe.available;
  c.driver_reason = probe.reason;
  c.driver_version = probe.driver_version;
  c.green_contexts = probe.available && probe.driver_version >= 12040;
  c.mps = mps_running;
  return c;
}

core::Result<daemon::Mechanism> choose_mechanism(const std::string& flag, const Capabilities& c) {
  if (flag != "auto") return core::with_context(daemon::mechanism_named(flag), "--mechanism");
  return c.green_contexts && c.mps ? daemon::Mechanism::kGreenContexts : daemon::Mechanism::kGate;
}

std::string describe(const Capabilities& c) {
  if (!c.driver) return fmt::format("no CUDA driver ({})", c.driver_reason);
  return fmt::format("CUDA driver {}.{} (green contexts: {}), MPS: {}", c.driver_version / 1000,
                     c.driver_version % 1000 / 10, c.green_contexts ? "yes" : "no, before 12.4",
                     c.mps ? "running (--mps)" : "not run by the daemon");
}

}  // namespace

std::string default_daemon_socket() {
  const char* env = std::getenv("TESSERA_DAEMON_SOCKET");
  return env != nullptr && *env != '\0' ? env : kDefaultDaemonSocket;
}

void add_daemon_options(CLI::App& command, DaemonFlags& f) {
  CLI::App* c = &command;
  c->add_option("--config", f.config,
                "YAML file of these options by name (gpu, devices, policy, best_effort_share, "
                "slo_guided, mechanism, socket, tick, idle_after, min_residency, metrics, "
                "settings_file, grants_file, latency_critical_uids); flags given override it");
  c->add_option("--socket", f.socket,
                "Unix socket to listen on (default: $TESSERA_DAEMON_SOCKET, else "
                "/run/tessera/tesserad.sock)")
      ->capture_default_str();
  c->add_option("--gpu", f.gpu,
                "The node's GPU model, a catalog name or alias (h100, a100-80gb, ...; `tessera "
                "list`): its SM count and green-context granularity. Default: the model NVML "
                "reports for the node's GPUs");
  c->add_option("--devices", f.devices,
                "How many such GPUs the daemon owns, ordinals 0..N-1 (default: with --gpu 1, "
                "else every GPU NVML reports)");
  c->add_option("--policy", f.policy,
                "Policy: " + daemon::node_policy_names() +
                    " (`tessera ctl policy` switches it while running). priority-fill runs "
                    "latency-critical tenants with a TPOT or TTFT target on the whole GPU at high "
                    "stream priority and holds best-effort ones to a reserve while those have "
                    "work; cogpu and tpot-first give each tenant disjoint SMs")
      ->capture_default_str();
  c->add_option("--best-effort-share", f.best_effort_share,
                "priority-fill: the fraction of the SMs (in (0, 1]) best-effort tenants keep "
                "while a latency-critical one has work")
      ->capture_default_str();
  c->add_flag("--slo-guided", f.slo_guided,
              "priority-fill: the reserve grows while the served tenants' timed steps (graph "
              "launches) stay within half their TPOT target and halves when one does not, from "
              "--best-effort-share up");
  c->add_option("--mechanism", f.mechanism,
                "green-contexts (each process in an SM range the policy sizes; needs MPS for two "
                "processes at once), gate (best-effort launches held while a latency-critical "
                "process has work; works on every driver), mps-percentage (each MPS client "
                "capped at its SM share, set when CUDA starts in it) or auto (green-contexts "
                "where the driver has green contexts and --mps runs MPS, else gate)")
      ->capture_default_str();
  c->add_flag("--mps", f.mps,
              "Run an MPS control daemon for the tenants (green contexts of several processes "
              "run at once only under MPS); give them CUDA_MPS_PIPE_DIRECTORY=--mps-pipe-dir");
  c->add_option("--mps-pipe-dir", f.mps_pipe_dir,
                "Its pipe directory (default: mps/ beside --socket; its log in mps-log/)");
  c->add_option("--mps-control", f.mps_control, "The MPS control program")->capture_default_str();
  c->add_option("--settings-file", f.settings_file,
                "Where what `tessera ctl set` changed of registered tenants is kept, so a "
                "restarted daemon applies it again when they register again (default: "
                "tesserad-settings.json beside --socket; none: not kept)");
  c->add_option("--grants-file", f.grants_file,
                "Where the grants of Kubernetes claims (`tessera ctl grant`) are kept until "
                "revoked, so a restarted daemon still gives their processes the granted settings "
                "(default: tesserad-grants.json beside the settings file; none: not kept)");
  c->add_option("--tick", f.tick, "Time between policy rounds")->capture_default_str();
  c->add_option("--idle-after", f.idle_after,
                "A tenant that has not launched for this long has no work")
      ->capture_default_str();
  c->add_option("--metrics", f.metrics,
                "Serve Prometheus metrics on HOST:PORT (/metrics), e.g. 0.0.0.0:9402; port 0 "
                "picks a free one");
  c->add_option("--latency-critical-uids", f.latency_critical_uids,
                "Only processes of these uids (comma-separated; 0 for root) may register as "
                "latency-critical or with a priority above 0; others are registered as "
                "best-effort and told so. Default: every process")
      ->delimiter(',');
  c->add_option("--min-residency", f.min_residency,
                "A latency-critical tenant's partition is not shrunk sooner than this after it "
                "changed")
      ->capture_default_str();
}

Outcome run_daemon_command(const DaemonFlags& given) {
  TESSERA_ASSIGN_OR_RETURN(const DaemonFlags f, with_config_file(given));
  NodeGpus gpus;
  if (f.gpu.empty()) {
    TESSERA_ASSIGN_OR_RETURN(gpus, discover_gpus());
  } else {
    TESSERA_ASSIGN_OR_RETURN(gpus.spec, core::with_context(hw::find_gpu(f.gpu), "--gpu"));
    gpus.count = 1;
  }
  if (f.devices != 0) gpus.count = f.devices;
  const hw::GpuSpec& spec = gpus.spec;
  TESSERA_ASSIGN_OR_RETURN(const gpu::PartitionGrid grid,
                           core::with_context(gpu::PartitionGrid::of(spec), "--gpu"));
  // ASSUMPTION: no node has more than 64 GPUs (the control protocol's device range).
  if (gpus.count < 1 || gpus.count > 64) {
    return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                       "--devices {}: must be 1-64", gpus.count);
  }
  daemon::TableOptions table;
  if (f.mechanism != "auto") {
    TESSERA_TRY(core::with_context(daemon::mechanism_named(f.mechanism), "--mechanism"));
  }
  TESSERA_ASSIGN_OR_RETURN(table.idle_after,
                           core::with_context(core::parse_duration(f.idle_after), "--idle-after"));
  TESSERA_ASSIGN_OR_RETURN(
      table.min_residency,
      core::with_context(core::parse_duration(f.min_residency), "--min-residency"));
  daemon::ServerOptions server;
  server.socket_path = f.socket;
  if (f.settings_file.empty()) {
    server.settings_path =
        (std::filesystem::path(f.socket).parent_path() / "tesserad-settings.json").string();
  } else if (f.settings_file != "none") {
    server.settings_path = f.settings_file;
  }
  if (f.grants_file.empty()) {
    const std::string beside = server.settings_path.empty() ? f.socket : server.settings_path;
    server.grants_path =
        (std::filesystem::path(beside).parent_path() / "tesserad-grants.json").string();
  } else if (f.grants_file != "none") {
    server.grants_path = f.grants_file;
  }
  if (!f.latency_critical_uids.empty()) {
    std::vector<uid_t> uids;
    for (const std::int64_t uid : f.latency_critical_uids) {
      if (uid < 0 || uid >= std::numeric_limits<uid_t>::max()) {
        return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                           "--latency-critical-uids: {} is not a uid", uid);
      }
      uids.push_back(static_cast<uid_t>(uid));
    }
    server.latency_critical_uids = std::move(uids);
  }
  TESSERA_ASSIGN_OR_RETURN(server.tick, core::with_context(core::parse_duration(f.tick), "--tick"));
  if (server.tick <= 0 || table.idle_after <= 0 || table.min_residency < 0) {
    return core::fail(core::Domain::kConfig, core::Code::kInvalidArgument,
                      "--tick and --idle-after must be positive, --min-residency not negative");
  }
  table.policy.best_effort_share = f.best_effort_share;
  table.policy.slo_guided = f.slo_guided;
  if (!(f.best_effort_share > 0 && f.best_effort_share <= 1)) {
    return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                       "--best-effort-share {}: must be in (0, 1]", f.best_effort_share);
  }
  TESSERA_ASSIGN_OR_RETURN(
      auto policy,
      core::with_context(daemon::make_node_policy(f.policy, table.policy), "--policy"));
  StopSignals signals;
  std::unique_ptr<daemon::MpsControl> mps;
  if (f.mps) {
    const std::filesystem::path socket_dir = std::filesystem::path(f.socket).parent_path().empty()
                                                 ? std::filesystem::path(".")
                                                 : std::filesystem::path(f.socket).parent_path();
    daemon::MpsOptions o;
    o.control = f.mps_control;
    o.pipe_directory = f.mps_pipe_dir.empty() ? (socket_dir / "mps").string() : f.mps_pipe_dir;
    o.log_directory = (std::filesystem::path(o.pipe_directory).parent_path() / "mps-log").string();
    TESSERA_ASSIGN_OR_RETURN(mps, daemon::MpsControl::start(o));
    fmt::print(stderr,
               "tessera daemon: MPS control daemon {} in {}; tenants need "
               "CUDA_MPS_PIPE_DIRECTORY={}\n",
               mps->owned() ? "started" : "already running", mps->pipe_directory(),
               mps->pipe_directory());
  }
  std::unique_ptr<daemon::DaemonMetrics> metrics;
  if (!f.metrics.empty()) {
    TESSERA_ASSIGN_OR_RETURN(metrics, daemon::DaemonMetrics::serve(f.metrics));
    server.after_round = [m = metrics.get()](const daemon::TenantTable& t, core::Nanos now) {
      m->observe(t, now);
    };
    for (int port : metrics->ports()) {
      fmt::print(stderr, "tessera daemon: metrics on http://{}:{}/metrics\n",
                 f.metrics.substr(0, f.metrics.rfind(':')), port);
    }
  }
  const Capabilities capabilities = probe_capabilities(mps != nullptr);
  TESSERA_ASSIGN_OR_RETURN(table.mechanism, choose_mechanism(f.mechanism, capabilities));
  server.capabilities = capabilities.to_json();
  fmt::print(stderr, "tessera daemon: {}; mechanism {}{}\n", describe(capabilities),
             daemon::mechanism_name(table.mechanism), f.mechanism == "auto" ? " (auto)" : "");
  if (table.mechanism == daemon::Mechanism::kMpsPercentage && mps == nullptr) {
    fmt::print(stderr,
               "tessera daemon: mps-percentage caps MPS clients only; without --mps the tenants "
               "are capped only where an MPS control daemon of your own serves them\n");
  }
  TESSERA_ASSIGN_OR_RETURN(
      auto daemon, daemon::ControlServer::start(
                       server, daemon::TenantTable(std::vector<gpu::PartitionGrid>(
                                                       static_cast<std::size_t>(gpus.count), grid),
                                                   std::move(policy), table)));
  fmt::print(stderr, "tessera daemon: listening on {}; {} x {} ({} SMs), {}, policy {}\n", f.socket,
             gpus.count, spec.name, grid.device_sms, daemon::mechanism_name(table.mechanism),
             f.policy);
  if (server.latency_critical_uids) {
    fmt::print(stderr, "tessera daemon: only uids {} may register as latency-critical\n",
               fmt::join(*server.latency_critical_uids, ", "));
  }
  int signal = 0;
  TESSERA_TRY(daemon->run([&] {
    signal = signals.take_pending();
    return signal != 0;
  }));
  fmt::print(stderr, "tessera daemon: {}, stopping\n", StopSignals::name(signal));
  return core::Status{};
}

}  // namespace tessera::cli
