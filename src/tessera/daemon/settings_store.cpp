#include "tessera/daemon/settings_store.hpp"

#include <nlohmann/json.hpp>

#include "tessera/core/file_replace.hpp"
#include "tessera/daemon/kept_requests.hpp"

namespace tessera::daemon {
namespace {

constexpr KeptFile<SetRequest> kFile{.section = "tenants",
                                     .key = &SetRequest::tenant,
                                     .key_name = "tenant",
                                     .file_what = "daemon settings file",
                                     .contents = "settings"};

}  // namespace

nlohmann::json set_request_json(const SetRequest& r) {
  nlohmann::json j{{"op", "set"}, {"tenant", r.tenant}};
  if (r.tenant_class) j["class"] = tenant_class_name(*r.tenant_class);
  if (r.priority) j["priority"] = *r.priority;
  if (r.tpot_slo) j["tpot_slo_ms"] = core::to_millis(*r.tpot_slo);
  if (r.ttft_slo) j["ttft_slo_ms"] = core::to_millis(*r.ttft_slo);
  if (r.sm_share) j["sm_share"] = *r.sm_share;
  if (r.memory_limit) j["memory_limit_bytes"] = *r.memory_limit;
  return j;
}

SettingsStore SettingsStore::open(std::string path, std::string& warning) {
  SettingsStore store;
  store.path_ = std::move(path);
  store.kept_ = read_kept(store.path_, kFile, warning);
  return store;
}

std::optional<SetRequest> SettingsStore::find(std::string_view tenant) const {
  const auto it = kept_.find(tenant);
  if (it == kept_.end()) return std::nullopt;
  return it->second;
}

core::Status SettingsStore::remember(const SetRequest& r) {
  if (path_.empty()) return {};
  SetRequest& k = kept_[r.tenant];
  k.tenant = r.tenant;
  merge(r, k);
  return write();
}

core::Status SettingsStore::forget(std::string_view tenant) {
  if (path_.empty()) return {};
  const auto it = kept_.find(tenant);
  if (it == kept_.end()) return {};
  kept_.erase(it);
  return write();
}

core::Status SettingsStore::write() const {
  nlohmann::json tenants = nlohmann::json::object();
  for (const auto& [name, request] : kept_) tenants[name] = set_request_json(request);
  return core::replace_file(path_, nlohmann::json{{"tenants", tenants}}.dump(2) + "\n",
                            "the daemon's settings");
}

}  // namespace tessera::daemon
