#include "tessera/dra/claim_allocation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>

#include "tessera/core/config.hpp"
#include "tessera/core/try.hpp"
#include "tessera/k8s/pod_translation.hpp"

namespace tessera::dra {

namespace {

using nlohmann::json;

constexpr int kMaxPriority = 1000;

std::unexpected<core::Error> bad(const ClaimRef& ref, std::string message) {
  return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument, "claim {}/{}: {}", ref.ns,
                     ref.name, message);
}

// The object at a path of keys, or null when any is missing or not an object.
const json* find_path(const json& j, std::initializer_list<const char*> keys) {
  const json* at = &j;
  for (const char* key : keys) {
    if (!at->is_object()) return nullptr;
    const auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::string string_or_empty(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The settings one opaque configuration gives, each only when given (the fields of the daemon's
// `set` request; its tenant is not used).
using ShareConfig = daemon::SetRequest;

core::Result<core::Nanos> duration_field(const ClaimRef& ref, const json& p, const char* key) {
  const auto& v = p[key];
  if (!v.is_string())
    return bad(ref, fmt::format("config '{}' must be a duration such as \"50ms\"", key));
  auto d = core::parse_duration(v.get<std::string>());
  if (!d || *d < 0) {
    return bad(ref, fmt::format("config '{}' is \"{}\", not a duration such as \"50ms\"", key,
                                v.get<std::string>()));
  }
  return *d;
}

core::Result<std::uint64_t> bytes_of(const ClaimRef& ref, const json& v, std::string_view what) {
  if (!v.is_string() && !v.is_number_integer()) {
    return bad(ref, fmt::format("{} must be a quantity such as \"20Gi\"", what));
  }
  const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  auto q = k8s::parse_quantity(text);
  if (!q) return bad(ref, fmt::format("{}: {}", what, q.error().message()));
  auto n = k8s::quantity_ceil(*q);
  if (!n || *n < 0) return bad(ref, fmt::format("{} is \"{}\", not a byte count", what, text));
  return static_cast<std::uint64_t>(*n);
}

core::Result<ShareConfig> share_config(const ClaimRef& ref, const json& p) {
  if (!p.is_object()) return bad(ref, "the driver's config parameters are not an object");
  for (const auto& [key, value] : p.items()) {
    static constexpr std::string_view kKeys[] = {"apiVersion", "kind",    "class",      "priority",
                                                 "tpotSLO",    "ttftSLO", "memoryLimit"};
    if (std::ranges::find(kKeys, key) == std::end(kKeys)) {
      return bad(ref, fmt::format("config has an unknown field '{}' (known: class, priority, "
                                  "tpotSLO, ttftSLO, memoryLimit)",
                                  key));
    }
  }
  if (string_or_empty(p, "apiVersion") != kConfigApiVersion ||
      string_or_empty(p, "kind") != kConfigKind) {
    return bad(ref, fmt::format("config must have apiVersion {} and kind {}", kConfigApiVersion,
                                kConfigKind));
  }
  ShareConfig c;
  if (p.contains("class")) {
    const std::string v = string_or_empty(p, "class");
    if (v == "latency-critical") {
      c.tenant_class = daemon::TenantClass::kLatencyCritical;
    } else if (v == "best-effort") {
      c.tenant_class = daemon::TenantClass::kBestEffort;
    } else {
      return bad(ref, "config 'class' must be \"latency-critical\" or \"best-effort\"");
    }
  }
  if (p.contains("priority")) {
    const auto& v = p["priority"];
    if (!v.is_number_integer() || v.get<std::int64_t>() < -kMaxPriority ||
        v.get<std::int64_t>() > kMaxPriority) {
      return bad(ref, fmt::format("config 'priority' must be an integer in [{}, {}]", -kMaxPriority,
                                  kMaxPriority));
    }
    c.priority = static_cast<int>(v.get<std::int64_t>());
  }
  if (p.contains("tpotSLO")) {
    TESSERA_ASSIGN_OR_RETURN(c.tpot_slo, duration_field(ref, p, "tpotSLO"));
  }
  if (p.contains("ttftSLO")) {
    TESSERA_ASSIGN_OR_RETURN(c.ttft_slo, duration_field(ref, p, "ttftSLO"));
  }
  if (p.contains("memoryLimit")) {
    TESSERA_ASSIGN_OR_RETURN(c.memory_limit,
                             bytes_of(ref, p["memoryLimit"], "config 'memoryLimit'"));
  }
  return c;
}

// The configuration that applies to `request`: the class's entries, then the claim's.
core::Result<ShareConfig> config_for(const ClaimRef& ref, const json* configs,
                                     std::string_view driver, std::string_view request) {
  ShareConfig out;
  if (configs == nullptr) return out;
  if (!configs->is_array()) return bad(ref, "status.allocation.devices.config is not a list");
  for (const char* source : {"FromClass", "FromClaim"}) {
    for (const auto& entry : *configs) {
      if (string_or_empty(entry, "source") != source) continue;
      const json* opaque = find_path(entry, {"opaque"});
      if (opaque == nullptr || string_or_empty(*opaque, "driver") != driver) continue;
      if (const auto it = entry.find("requests");
          it != entry.end() && it->is_array() && !it->empty()) {
        if (std::ranges::find(*it, json(request)) == it->end()) continue;
      }
      const json* parameters = find_path(*opaque, {"parameters"});
      if (parameters == nullptr) return bad(ref, "the driver's config has no parameters");
      TESSERA_ASSIGN_OR_RETURN(const auto c, share_config(ref, *parameters));
      daemon::merge(c, out);
    }
  }
  return out;
}

// smPercent and memory from a result's consumed capacity.
core::Status read_consumed(const ClaimRef& ref, const json& result, AllocatedShare& share) {
  share.settings.sm_share = 1;
  const json* consumed = find_path(result, {"consumedCapacity"});
  if (consumed == nullptr) return {};
  if (!consumed->is_object()) return bad(ref, "consumedCapacity is not an object");
  if (const auto it = consumed->find(kSmPercentCapacity); it != consumed->end()) {
    const std::string text = it->is_string() ? it->get<std::string>() : it->dump();
    auto q = k8s::parse_quantity(text);
    auto n = q ? k8s::quantity_ceil(*q) : core::Result<std::int64_t>(std::unexpected(q.error()));
    if (!n || !k8s::quantity_is_integer(*q) || *n < 1 || *n > 100) {
      return bad(ref, fmt::format("device {} consumed {} \"{}\": must be a whole percentage, 1-100",
                                  share.device, kSmPercentCapacity, text));
    }
    share.settings.sm_share = static_cast<double>(*n) / 100.0;
  }
  if (const auto it = consumed->find(kMemoryCapacity); it != consumed->end()) {
    TESSERA_ASSIGN_OR_RETURN(
        share.settings.memory_limit,
        bytes_of(ref, *it, fmt::format("device {} consumed memory", share.device)));
  }
  return {};
}

}  // namespace

namespace {

bool read_int(std::string_view& s, int& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || out < 0) return false;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  return true;
}

bool take(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

}  // namespace

core::Result<MigDeviceName> parse_mig_device_name(std::string_view device) {
  MigDeviceName n;
  std::string_view s = device;
  if (take(s, "gpu-") && read_int(s, n.gpu) && take(s, "-mig-") && read_int(s, n.profile_id) &&
      take(s, "-") && read_int(s, n.start) && s.empty()) {
    return n;
  }
  return core::failf(core::Domain::kK8s, core::Code::kNotFound,
                     "device '{}' is not a MIG partition of this driver (gpu-N-mig-PROFILE-START)",
                     device);
}

core::Result<int> gpu_of_device(std::string_view device) {
  constexpr std::string_view kPrefix = "gpu-";
  int n = -1;
  if (device.starts_with(kPrefix) && device.size() > kPrefix.size() && device.size() <= 6) {
    const auto digits = device.substr(kPrefix.size());
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc() || end != digits.data() + digits.size()) n = -1;
  }
  if (n < 0) {
    return core::failf(core::Domain::kK8s, core::Code::kNotFound,
                       "device '{}' is not one of this driver's (gpu-0, gpu-1, ...)", device);
  }
  return n;
}

core::Result<ClaimAllocation> read_allocation(const json& claim_json, const ClaimRef& ref,
                                              std::string_view driver, std::string_view pool) {
  const json* uid = find_path(claim_json, {"metadata", "uid"});
  if (uid == nullptr || !uid->is_string() || uid->get<std::string>() != ref.uid) {
    return bad(ref, fmt::format("the API server holds a claim of UID {}, not {} (it was deleted "
                                "and made again)",
                                uid != nullptr && uid->is_string() ? uid->get<std::string>() : "?",
                                ref.uid));
  }
  const json* results = find_path(claim_json, {"status", "allocation", "devices", "results"});
  if (results == nullptr || !results->is_array()) return bad(ref, "it is not allocated");
  const json* configs = find_path(claim_json, {"status", "allocation", "devices", "config"});
  ClaimAllocation out{.claim = ref, .shares = {}};
  for (const auto& result : *results) {
    if (string_or_empty(result, "driver") != driver) continue;
    AllocatedShare share;
    share.pool = string_or_empty(result, "pool");
    if (share.pool != pool) continue;
    share.request = string_or_empty(result, "request");
    share.device = string_or_empty(result, "device");
    if (auto mig = parse_mig_device_name(share.device)) {
      share.mig = *mig;
      share.gpu = mig->gpu;
    } else {
      auto gpu = gpu_of_device(share.device);
      if (!gpu) return bad(ref, gpu.error().message());
      share.gpu = *gpu;
    }
    TESSERA_TRY(read_consumed(ref, result, share));
    TESSERA_ASSIGN_OR_RETURN(const auto c, config_for(ref, configs, driver, share.request));
    const auto consumed = share.settings.memory_limit;
    if (c.memory_limit && consumed != 0 && *c.memory_limit > consumed) {
      return bad(ref, fmt::format("config 'memoryLimit' is {} bytes, more than the {} consumed "
                                  "from device {}",
                                  *c.memory_limit, consumed, share.device));
    }
    daemon::apply(c, share.settings);
    out.shares.push_back(std::move(share));
  }
  if (out.shares.empty()) {
    return bad(ref, fmt::format("it holds no device of driver {} in pool {}", driver, pool));
  }
  return out;
}

}  // namespace tessera::dra
