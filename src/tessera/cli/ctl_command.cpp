#include "tessera/cli/ctl_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "tessera/cli/daemon_command.hpp"
#include "tessera/core/config.hpp"
#include "tessera/core/try.hpp"
#include "tessera/daemon/control_client.hpp"
#include "tessera/daemon/node_policy.hpp"
#include "tessera/k8s/node_resource_topology.hpp"

namespace tessera::cli {
namespace {

using nlohmann::json;

std::string assignment_text(const json& a) {
  if (a.is_string()) return a.get<std::string>();
  const int first = a.value("first_sm", 0);
  const int sms = a.value("sms", 0);
  return fmt::format("SMs {}-{} ({})", first, first + sms - 1, sms);
}

double gib(std::uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
}

void print_tenants(const json& tenants) {
  if (tenants.empty()) {
    fmt::print("no tenants\n");
    return;
  }
  fmt::print("{:<20} {:>8} {:>3} {:<16} {:>5} {:<18} {:>6} {:>5} {:>10} {:>6} {:>9} {:>13}\n",
             "TENANT", "PID", "DEV", "CLASS", "PRIO", "ASSIGNED", "STREAM", "WORK", "LAUNCHES",
             "HELD", "STEP ms", "MEMORY GiB");
  for (const json& t : tenants) {
    // The last timed graph launch (a decode step), "-" before the first.
    const std::string step = t.value("steps", 0ULL) > 0
                                 ? fmt::format("{:.3f}", t.value("last_step_ms", 0.0))
                                 : std::string("-");
    // The stream priority the assignment carries: levels above the least urgent.
    const int stream = t.value("stream_priority", 0);
    // Device memory its allocations hold, over the limit in force ("-": none).
    const auto limit = t.value("memory_limit", 0ULL);
    const std::string memory =
        fmt::format("{:.2f}/{}", gib(t.value("memory_used", 0ULL)),
                    limit > 0 ? fmt::format("{:.2f}", gib(limit)) : std::string("-"));
    fmt::print("{:<20} {:>8} {:>3} {:<16} {:>5} {:<18} {:>6} {:>5} {:>10} {:>6} {:>9} {:>13}\n",
               t.value("tenant", "?"), t.value("pid", 0), t.value("device", 0),
               t.value("class", "?"), t.value("priority", 0),
               assignment_text(t.value("assignment", json())),
               stream > 0 ? fmt::format("+{}", stream) : std::string("0"),
               t.value("has_work", false) ? "yes" : "no", t.value("launches", 0ULL),
               t.value("held_launches", 0ULL), step, memory);
  }
}

// A setting whose 0 means none.
std::string or_none(double v) {
  return v > 0 ? fmt::format("{:g}", v) : std::string("-");
}

// Each grant, and whether a process is registered under it now.
void print_grants(const json& grants, const json& tenants) {
  if (grants.empty()) return;
  fmt::print("{:<36} {:<20} {:>3} {:<16} {:>5} {:>7} {:>7} {:>8} {:>10} {}\n", "CLAIM", "TENANT",
             "DEV", "CLASS", "PRIO", "TPOT ms", "TTFT ms", "SM SHARE", "MEMORY GiB", "REGISTERED");
  for (const json& g : grants) {
    const std::string claim = g.value("claim", "?");
    const bool registered =
        std::ranges::any_of(tenants, [&](const json& t) { return t.value("claim", "") == claim; });
    fmt::print("{:<36} {:<20} {:>3} {:<16} {:>5} {:>7} {:>7} {:>8} {:>10} {}\n", claim,
               g.value("tenant", "?"), g.value("device", 0), g.value("class", "?"),
               g.value("priority", 0), or_none(g.value("tpot_slo_ms", 0.0)),
               or_none(g.value("ttft_slo_ms", 0.0)), or_none(g.value("sm_share", 0.0)),
               or_none(gib(g.value("memory_limit_bytes", 0ULL))), registered ? "yes" : "no");
  }
}

void print_list(const json& reply) {
  fmt::print("policy {}, mechanism {}{}\n", reply.value("policy", "?"),
             reply.value("mechanism", "?"),
             reply.value("draining", false) ? " (draining: no new tenants)" : "");
  for (const json& d : reply.value("devices", json::array())) {
    fmt::print("device {}: {} SMs, partitions in steps of {}{}\n", d.value("device", 0),
               d.value("sms", 0), d.value("granularity", 0),
               d.contains("reserve_sms")
                   ? fmt::format(", best-effort reserve {} SMs", d.value("reserve_sms", 0))
                   : std::string());
  }
  print_tenants(reply.value("tenants", json::array()));
  print_grants(reply.value("grants", json::array()), reply.value("tenants", json::array()));
}

// The settings `set` and `grant` take, those given, into `request`.
core::Status add_settings(const CtlFlags& f, json& request) {
  if (!f.tenant_class.empty()) request["class"] = f.tenant_class;
  if (!f.priority.empty()) {
    int p = 0;
    const char* end = f.priority.data() + f.priority.size();
    const auto [at, ec] = std::from_chars(f.priority.data(), end, p);
    if (ec != std::errc() || at != end) {
      return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                         "--priority '{}': expected an integer", f.priority);
    }
    request["priority"] = p;
  }
  if (!f.tpot_slo.empty()) {
    TESSERA_ASSIGN_OR_RETURN(const core::Nanos t,
                             core::with_context(core::parse_duration(f.tpot_slo), "--tpot-slo"));
    request["tpot_slo_ms"] = core::to_millis(t);
  }
  if (!f.ttft_slo.empty()) {
    TESSERA_ASSIGN_OR_RETURN(const core::Nanos t,
                             core::with_context(core::parse_duration(f.ttft_slo), "--ttft-slo"));
    request["ttft_slo_ms"] = core::to_millis(t);
  }
  if (!f.sm_share.empty()) {
    double share = -1;
    const char* end = f.sm_share.data() + f.sm_share.size();
    const auto [at, ec] = std::from_chars(f.sm_share.data(), end, share);
    if (ec != std::errc() || at != end || !(share >= 0 && share <= 1)) {
      return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                         "--sm-share '{}': expected a fraction in [0, 1]", f.sm_share);
    }
    request["sm_share"] = share;
  }
  if (f.memory_limit == "none") {
    request["memory_limit_bytes"] = 0;
  } else if (!f.memory_limit.empty()) {
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t bytes,
                             k8s::parse_bytes(f.memory_limit, "--memory-limit"));
    request["memory_limit_bytes"] = bytes;
  }
  return {};
}

// The settings options `set` and `grant` share.
void add_settings_options(CLI::App& sub, CtlFlags& f) {
  sub.add_option("--class", f.tenant_class, "latency-critical or best-effort")
      ->check(CLI::IsMember({"latency-critical", "best-effort"}));
  sub.add_option("--priority", f.priority, "Priority, -1000..1000 (higher first)");
  sub.add_option("--tpot-slo", f.tpot_slo, "Time per output token target, e.g. 50ms (0: none)");
  sub.add_option("--ttft-slo", f.ttft_slo, "Time to first token target, e.g. 500ms (0: none)");
  sub.add_option("--sm-share", f.sm_share,
                 "Its fraction of the GPU's SMs under static-partitions, 0-1 (0: an even split "
                 "of what the others leave)");
  sub.add_option("--memory-limit", f.memory_limit,
                 "Device memory limit, bytes or a Kubernetes quantity (20Gi); the tenant's "
                 "next allocations and cuMemGetInfo follow it (none: no limit)");
}

core::Result<json> request_of(const CtlFlags& f) {
  json request;
  if (*f.list) {
    request = {{"op", "list"}};
  } else if (*f.set) {
    request = {{"op", "set"}, {"tenant", f.tenant}};
    TESSERA_TRY(add_settings(f, request));
  } else if (*f.grant) {
    request = {{"op", "grant"}, {"claim", f.claim}, {"tenant", f.tenant}, {"device", f.device}};
    TESSERA_TRY(add_settings(f, request));
  } else if (*f.revoke) {
    request = {{"op", "revoke"}, {"claim", f.claim}};
  } else if (*f.policy) {
    request = {{"op", "policy"}, {"name", f.policy_name}};
  } else {
    request = {{"op", *f.drain ? "drain" : "undrain"}};
  }
  return request;
}

// What a request other than list did, in a line.
std::string outcome_text(const CtlFlags& f, const json& reply) {
  if (*f.grant && reply.value("again", false)) {
    return fmt::format("claim {} was already granted tenant '{}' on device {}: unchanged", f.claim,
                       f.tenant, f.device);
  }
  if (*f.grant) {
    return fmt::format("claim {} granted tenant '{}' on device {}", f.claim, f.tenant, f.device);
  }
  if (*f.revoke) {
    return fmt::format("claim {} {}", f.claim,
                       reply.value("was_granted", false) ? "revoked" : "was not granted");
  }
  return "ok";
}

}  // namespace

void add_ctl_options(CLI::App& command, CtlFlags& f) {
  command.require_subcommand(1);
  f.list = command.add_subcommand("list", "Tenants, their assignments and activity, the policy");
  f.list->add_flag("--json", f.json, "Print the daemon's reply as JSON");
  f.set = command.add_subcommand(
      "set", "Change a registered tenant's class, priority, SLOs, SM share or memory limit");
  f.set->add_option("tenant", f.tenant, "Tenant name")->required();
  add_settings_options(*f.set, f);
  f.policy =
      command.add_subcommand("policy", "Switch the policy (" + daemon::node_policy_names() + ")");
  f.policy->add_option("name", f.policy_name, "Policy name")->required();
  f.drain = command.add_subcommand("drain", "Refuse new tenants (the registered ones stay)");
  f.undrain = command.add_subcommand("undrain", "Accept new tenants again");
  f.grant = command.add_subcommand(
      "grant",
      "Reserve a tenant name for a Kubernetes ResourceClaim: processes registering under it get "
      "this device and these settings (the others: a registration's defaults), whatever they ask");
  f.grant->add_option("--claim", f.claim, "The claim's uid")->required();
  f.grant->add_option("--tenant", f.tenant, "Tenant name")->required();
  f.grant->add_option("--device", f.device, "The daemon's GPU ordinal its processes run on")
      ->required();
  add_settings_options(*f.grant, f);
  f.revoke = command.add_subcommand(
      "revoke", "Drop a claim's grant (its registered processes keep their settings)");
  f.revoke->add_option("--claim", f.claim, "The claim's uid")->required();
  for (CLI::App* sub : {f.list, f.set, f.policy, f.drain, f.undrain, f.grant, f.revoke}) {
    sub->add_option("--socket", f.socket,
                    "The daemon's Unix socket (default: $TESSERA_DAEMON_SOCKET, else "
                    "/run/tessera/tesserad.sock)");
  }
}

Outcome run_ctl_command(const CtlFlags& f) {
  const std::string socket = f.socket.empty() ? default_daemon_socket() : f.socket;
  TESSERA_ASSIGN_OR_RETURN(const json request, request_of(f));
  TESSERA_ASSIGN_OR_RETURN(const json reply, daemon::send_request(socket, request));
  if (*f.list && !f.json) {
    print_list(reply);
  } else if (*f.list) {
    fmt::print("{}\n", reply.dump(2));
  } else {
    fmt::print("{}\n", outcome_text(f, reply));
  }
  return core::Status{};
}

}  // namespace tessera::cli
