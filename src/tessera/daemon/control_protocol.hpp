#pragma once
// tesserad's control protocol: one JSON object per line over its Unix socket, each answered by one
// JSON line, {"ok": true, ...} or {"ok": false, "error": "..."}. The requests:
//
//   {"op": "register", "tenant": "chat", "class": "latency-critical", "priority": 10,
//    "tpot_slo_ms": 50, "ttft_slo_ms": 500, "sm_share": 0.5, "device": 0}
//       A process announces itself (the interposer does this at start); the daemon takes its pid
//       from the socket's peer credentials, as seen from the daemon's pid namespace. The reply
//       carries the tenant's slot and, as SCM_RIGHTS ancillary data, the fd of its assignment page
//       (assignment_page.hpp). The tenant stays registered while this connection stays open.
//   {"op": "list"}                         the tenants, their assignments and activity, the policy
//   {"op": "set", "tenant": "chat", "priority": 5, "class": "best-effort", "tpot_slo_ms": 40,
//    "ttft_slo_ms": 400, "sm_share": 0.25, "memory_limit_bytes": 21474836480}
//                                          change any of these for a registered tenant (a memory
//                                          limit of 0 removes the daemon's)
//   {"op": "policy", "name": "tpot-first"} switch the policy
//   {"op": "drain"} / {"op": "undrain"}    refuse / accept new registrations
//   {"op": "grant", "claim": "<uid>", "tenant": "chat", "device": 0, "class": "latency-critical",
//    "priority": 10, "tpot_slo_ms": 50, "ttft_slo_ms": 500, "sm_share": 0.5,
//    "memory_limit_bytes": 21474836480}
//       Reserves a tenant name for a Kubernetes ResourceClaim (the DRA driver sends this before the
//       pod's containers start): a process that registers under that name gets this device and
//       these settings (the ones left out: a registration's defaults), whatever it asked for, and
//       its reply names the claim. Answered {"again": true} when the same grant is already held; a
//       grant does not change (revoke it first). The device's SM shares, granted and registered,
//       add up to at most 1. Kept across daemon restarts (grant_store.hpp).
//   {"op": "revoke", "claim": "<uid>"}     drops a grant ({"was_granted": false} if there was
//                                          none); processes registered under it keep their
//                                          settings until they leave
//   set, grant, revoke, policy, drain and undrain need root or the daemon's user.
//
// Parsing is strict: an unknown key, a value of the wrong type or out of range is an error that
// names it; the daemon answers it and keeps the connection.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"

namespace tessera::daemon {

// Longest request line the daemon reads; a longer one is answered with an error and the
// connection closed (a client that sends no newline cannot make the daemon buffer without end).
inline constexpr std::size_t kMaxRequestBytes = 64 * 1024;

enum class TenantClass { kLatencyCritical, kBestEffort };
std::string_view tenant_class_name(TenantClass c);

struct TenantSettings {
  TenantClass tenant_class = TenantClass::kBestEffort;
  int priority = 0;
  core::Nanos tpot_slo = 0;  // 0: none
  core::Nanos ttft_slo = 0;
  // The fraction of its GPU's SMs it is given under static-partitions, in [0, 1]; 0: an even
  // split of what the others' shares leave. A device's shares add up to at most 1.
  double sm_share = 0;
  std::uint64_t memory_limit = 0;  // bytes, set by `set` or a grant; 0: none from the daemon

  bool operator==(const TenantSettings&) const = default;
};

struct RegisterRequest {
  std::string tenant;
  TenantSettings settings;
  int pid = 0;  // set by the server from SO_PEERCRED, never by the request
  int device = 0;
};
struct ListRequest {};
struct SetRequest {
  std::string tenant;
  std::optional<TenantClass> tenant_class;
  std::optional<int> priority;
  std::optional<core::Nanos> tpot_slo;
  std::optional<core::Nanos> ttft_slo;
  std::optional<double> sm_share;
  std::optional<std::uint64_t> memory_limit;
};
struct PolicyRequest {
  std::string name;
};
struct DrainRequest {
  bool drain = true;
};
struct GrantRequest {
  std::string claim;  // the ResourceClaim's uid
  std::string tenant;
  int device = 0;
  TenantSettings settings;

  bool operator==(const GrantRequest&) const = default;
};
struct RevokeRequest {
  std::string claim;
};
using Request = std::variant<RegisterRequest, ListRequest, SetRequest, PolicyRequest, DrainRequest,
                             GrantRequest, RevokeRequest>;

// Writes the fields `request` gives over `settings`; the ones it leaves out stay.
void apply(const SetRequest& request, TenantSettings& settings);
// Adds the fields `later` gives to `request`, whose tenant stays.
void merge(const SetRequest& later, SetRequest& request);
// A registration under a granted tenant name: the grant's device and settings replace what the
// process asked for.
void apply(const GrantRequest& grant, RegisterRequest& registration);
// A grant as the JSON object parse_request reads back ("op": "grant" included, every field).
nlohmann::json grant_request_json(const GrantRequest& grant);

// One request line (without its newline). Errors are kParse (not JSON, not an object) or
// kInvalidArgument (a missing, unknown or bad field), each naming what is wrong.
core::Result<Request> parse_request(std::string_view line);

// Valid tenant names: 1-63 characters of [A-Za-z0-9._-], so a name is safe in logs, metric labels
// and file names.
bool valid_tenant_name(std::string_view name);

// {"ok":false,"error":MESSAGE} with its newline.
std::string error_reply(std::string_view message);

}  // namespace tessera::daemon
