#include "tessera/daemon/control_protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "tessera/core/try.hpp"

namespace tessera::daemon {
namespace {

using nlohmann::json;

constexpr int kMaxPriority = 1000;
// ASSUMPTION: no serving SLO is longer than an hour; a larger value is a unit mistake.
constexpr double kMaxSloMs = 3600.0 * 1000.0;
// ASSUMPTION: no node has more than 64 GPUs.
constexpr int kMaxDevice = 63;
// ASSUMPTION: no GPU has 2^50 bytes (1 PiB); JSON numbers are exact up to 2^53.
constexpr std::uint64_t kMaxMemoryLimit = std::uint64_t{1} << 50;

constexpr std::string_view kOps = "register, list, set, policy, drain, undrain, grant, revoke";

core::Error invalid(std::string message) {
  return core::Error(core::Domain::kConfig, core::Code::kInvalidArgument, std::move(message));
}

core::Status only_keys(const json& j, std::string_view op,
                       std::initializer_list<std::string_view> keys) {
  for (const auto& [key, value] : j.items()) {
    if (key == "op") continue;
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string known;
      for (std::string_view k : keys) known += fmt::format("{}{}", known.empty() ? "" : ", ", k);
      return std::unexpected(invalid(fmt::format("'{}' request: unknown key '{}' (known: {})", op,
                                                 key, known.empty() ? "none" : known)));
    }
  }
  return {};
}

// A name valid_tenant_name() accepts under `key`, required; `what` names it in errors.
core::Result<std::string> safe_name(const json& j, std::string_view op, const char* key,
                                    std::string_view what) {
  const auto it = j.find(key);
  if (it == j.end())
    return std::unexpected(invalid(fmt::format("'{}' request: '{}' is missing", op, key)));
  if (!it->is_string()) {
    return std::unexpected(invalid(fmt::format("'{}' request: '{}' must be a string", op, key)));
  }
  const std::string name = it->get<std::string>();
  if (!valid_tenant_name(name)) {
    return std::unexpected(invalid(fmt::format(
        "'{}' request: {} '{}' must be 1-63 characters of letters, digits, '.', '_' or '-'", op,
        what, name.substr(0, 80))));
  }
  return name;
}

// A Kubernetes UID is 36 characters of hex digits and '-': the tenant names' rule fits it.
core::Result<std::string> claim_uid(const json& j, std::string_view op) {
  return safe_name(j, op, "claim", "claim");
}

core::Result<std::optional<int>> integer(const json& j, std::string_view op, const char* key,
                                         int low, int high) {
  const auto it = j.find(key);
  if (it == j.end()) return std::optional<int>{};
  if (!it->is_number_integer()) {
    return std::unexpected(invalid(fmt::format("'{}' request: '{}' must be an integer", op, key)));
  }
  const auto v = it->get<std::int64_t>();
  if (v < low || v > high) {
    return std::unexpected(
        invalid(fmt::format("'{}' request: '{}' is {}, outside [{}, {}]", op, key, v, low, high)));
  }
  return std::optional<int>(static_cast<int>(v));
}

core::Result<std::optional<core::Nanos>> slo(const json& j, std::string_view op, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return std::optional<core::Nanos>{};
  if (!it->is_number()) {
    return std::unexpected(
        invalid(fmt::format("'{}' request: '{}' must be a number of milliseconds", op, key)));
  }
  const double ms = it->get<double>();
  if (!std::isfinite(ms) || ms < 0 || ms > kMaxSloMs) {
    return std::unexpected(invalid(fmt::format(
        "'{}' request: '{}' is {}, outside [0, {}] ms (0: no target)", op, key, ms, kMaxSloMs)));
  }
  return std::optional<core::Nanos>(core::millis(ms));
}

core::Result<std::optional<TenantClass>> tenant_class(const json& j, std::string_view op) {
  const auto it = j.find("class");
  if (it == j.end()) return std::optional<TenantClass>{};
  if (it->is_string()) {
    const std::string v = it->get<std::string>();
    if (v == "latency-critical") return std::optional(TenantClass::kLatencyCritical);
    if (v == "best-effort") return std::optional(TenantClass::kBestEffort);
  }
  return std::unexpected(invalid(
      fmt::format("'{}' request: 'class' must be \"latency-critical\" or \"best-effort\"", op)));
}

core::Result<std::optional<double>> sm_share(const json& j, std::string_view op) {
  const auto it = j.find("sm_share");
  if (it == j.end()) return std::optional<double>{};
  if (!it->is_number() || !(it->get<double>() >= 0 && it->get<double>() <= 1)) {
    return std::unexpected(invalid(fmt::format(
        "'{}' request: 'sm_share' must be a fraction of the GPU's SMs in [0, 1] (0: an even "
        "split of what the others leave)",
        op)));
  }
  return std::optional<double>(it->get<double>());
}

// The tenant and the settings a register or set request may carry, each only when given.
core::Result<SetRequest> tenant_fields(const json& j, std::string_view op) {
  SetRequest r;
  TESSERA_ASSIGN_OR_RETURN(r.tenant, safe_name(j, op, "tenant", "tenant name"));
  TESSERA_ASSIGN_OR_RETURN(r.tenant_class, tenant_class(j, op));
  TESSERA_ASSIGN_OR_RETURN(r.priority, integer(j, op, "priority", -kMaxPriority, kMaxPriority));
  TESSERA_ASSIGN_OR_RETURN(r.tpot_slo, slo(j, op, "tpot_slo_ms"));
  TESSERA_ASSIGN_OR_RETURN(r.ttft_slo, slo(j, op, "ttft_slo_ms"));
  TESSERA_ASSIGN_OR_RETURN(r.sm_share, sm_share(j, op));
  return r;
}

core::Result<Request> parse_register(const json& j) {
  constexpr std::string_view op = "register";
  TESSERA_TRY(only_keys(
      j, op, {"tenant", "class", "priority", "tpot_slo_ms", "ttft_slo_ms", "sm_share", "device"}));
  TESSERA_ASSIGN_OR_RETURN(const SetRequest fields, tenant_fields(j, op));
  RegisterRequest r;
  r.tenant = fields.tenant;
  apply(fields, r.settings);
  TESSERA_ASSIGN_OR_RETURN(const std::optional<int> device,
                           integer(j, op, "device", 0, kMaxDevice));
  r.device = device.value_or(0);
  return Request(std::move(r));
}

// A byte count of at most kMaxMemoryLimit (a JSON number exact as a double).
core::Result<std::optional<std::uint64_t>> memory_limit(const json& j, std::string_view op) {
  const auto it = j.find("memory_limit_bytes");
  if (it == j.end()) return std::optional<std::uint64_t>{};
  // nlohmann's parser keeps a non-negative whole number as unsigned.
  if (!it->is_number_unsigned()) {
    return std::unexpected(invalid(fmt::format(
        "'{}' request: 'memory_limit_bytes' must be a whole number of bytes (0: none)", op)));
  }
  const auto v = it->get<std::uint64_t>();
  if (v > kMaxMemoryLimit) {
    return std::unexpected(invalid(fmt::format(
        "'{}' request: 'memory_limit_bytes' is {}, more than {}", op, v, kMaxMemoryLimit)));
  }
  return std::optional<std::uint64_t>(v);
}

core::Result<Request> parse_set(const json& j) {
  constexpr std::string_view op = "set";
  TESSERA_TRY(only_keys(j, op,
                        {"tenant", "class", "priority", "tpot_slo_ms", "ttft_slo_ms", "sm_share",
                         "memory_limit_bytes"}));
  TESSERA_ASSIGN_OR_RETURN(SetRequest r, tenant_fields(j, op));
  TESSERA_ASSIGN_OR_RETURN(r.memory_limit, memory_limit(j, op));
  if (!r.tenant_class && !r.priority && !r.tpot_slo && !r.ttft_slo && !r.sm_share &&
      !r.memory_limit) {
    return std::unexpected(
        invalid("'set' request: nothing to set (give class, priority, tpot_slo_ms, ttft_slo_ms, "
                "sm_share or memory_limit_bytes)"));
  }
  return Request(std::move(r));
}

core::Result<Request> parse_grant(const json& j) {
  constexpr std::string_view op = "grant";
  TESSERA_TRY(only_keys(j, op,
                        {"claim", "tenant", "device", "class", "priority", "tpot_slo_ms",
                         "ttft_slo_ms", "sm_share", "memory_limit_bytes"}));
  GrantRequest r;
  TESSERA_ASSIGN_OR_RETURN(r.claim, claim_uid(j, op));
  TESSERA_ASSIGN_OR_RETURN(SetRequest fields, tenant_fields(j, op));
  TESSERA_ASSIGN_OR_RETURN(fields.memory_limit, memory_limit(j, op));
  TESSERA_ASSIGN_OR_RETURN(const std::optional<int> device,
                           integer(j, op, "device", 0, kMaxDevice));
  // A grant places its tenant: a default device would put a claim's pod on a GPU nobody chose.
  if (!device) return std::unexpected(invalid("'grant' request: 'device' is missing"));
  r.tenant = fields.tenant;
  r.device = *device;
  apply(fields, r.settings);
  return Request(std::move(r));
}

core::Result<Request> parse_revoke(const json& j) {
  TESSERA_TRY(only_keys(j, "revoke", {"claim"}));
  TESSERA_ASSIGN_OR_RETURN(std::string claim, claim_uid(j, "revoke"));
  return Request(RevokeRequest{std::move(claim)});
}

core::Result<Request> parse_policy(const json& j) {
  TESSERA_TRY(only_keys(j, "policy", {"name"}));
  const auto it = j.find("name");
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) {
    return std::unexpected(invalid("'policy' request: 'name' must be a policy name"));
  }
  return Request(PolicyRequest{it->get<std::string>()});
}

}  // namespace

void apply(const SetRequest& r, TenantSettings& s) {
  if (r.tenant_class) s.tenant_class = *r.tenant_class;
  if (r.priority) s.priority = *r.priority;
  if (r.tpot_slo) s.tpot_slo = *r.tpot_slo;
  if (r.ttft_slo) s.ttft_slo = *r.ttft_slo;
  if (r.sm_share) s.sm_share = *r.sm_share;
  if (r.memory_limit) s.memory_limit = *r.memory_limit;
}

void apply(const GrantRequest& grant, RegisterRequest& registration) {
  registration.device = grant.device;
  registration.settings = grant.settings;
}

json grant_request_json(const GrantRequest& g) {
  return {{"op", "grant"},
          {"claim", g.claim},
          {"tenant", g.tenant},
          {"device", g.device},
          {"class", tenant_class_name(g.settings.tenant_class)},
          {"priority", g.settings.priority},
          {"tpot_slo_ms", core::to_millis(g.settings.tpot_slo)},
          {"ttft_slo_ms", core::to_millis(g.settings.ttft_slo)},
          {"sm_share", g.settings.sm_share},
          {"memory_limit_bytes", g.settings.memory_limit}};
}

void merge(const SetRequest& later, SetRequest& r) {
  if (later.tenant_class) r.tenant_class = later.tenant_class;
  if (later.priority) r.priority = later.priority;
  if (later.tpot_slo) r.tpot_slo = later.tpot_slo;
  if (later.ttft_slo) r.ttft_slo = later.ttft_slo;
  if (later.sm_share) r.sm_share = later.sm_share;
  if (later.memory_limit) r.memory_limit = later.memory_limit;
}

std::string_view tenant_class_name(TenantClass c) {
  return c == TenantClass::kLatencyCritical ? "latency-critical" : "best-effort";
}

bool valid_tenant_name(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

core::Result<Request> parse_request(std::string_view line) {
  const json j = json::parse(line, nullptr, false);
  if (j.is_discarded()) {
    return core::fail(core::Domain::kConfig, core::Code::kParse,
                      "request is not JSON (one JSON object per line)");
  }
  if (!j.is_object()) {
    return core::fail(core::Domain::kConfig, core::Code::kParse, "request is not a JSON object");
  }
  const auto op = j.find("op");
  if (op == j.end() || !op->is_string()) {
    return std::unexpected(invalid(fmt::format("request has no 'op' string ({})", kOps)));
  }
  const std::string name = op->get<std::string>();
  if (name == "register") return parse_register(j);
  if (name == "set") return parse_set(j);
  if (name == "policy") return parse_policy(j);
  if (name == "grant") return parse_grant(j);
  if (name == "revoke") return parse_revoke(j);
  if (name == "list" || name == "drain" || name == "undrain") {
    TESSERA_TRY(only_keys(j, name, {}));
    if (name == "list") return Request(ListRequest{});
    return Request(DrainRequest{name == "drain"});
  }
  return std::unexpected(invalid(fmt::format("unknown op '{}' ({})", name.substr(0, 80), kOps)));
}

std::string error_reply(std::string_view message) {
  return json{{"ok", false}, {"error", message}}.dump(-1, ' ', false,
                                                      json::error_handler_t::replace) +
         "\n";
}

}  // namespace tessera::daemon
