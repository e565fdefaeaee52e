#include "tessera/daemon/settings_store.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>
#include <variant>

#include "tessera/core/file_read.hpp"
#include "tessera/core/file_replace.hpp"

namespace tessera::daemon {
namespace {

// ASSUMPTION: the settings of 64 tenants (the table's limit) fit in far less than 1 MiB.
constexpr core::FileKind kStateFile{
    .what = "daemon settings file", .domain = core::Domain::kConfig, .max_bytes = core::kMiB};

// The file's requests by tenant; an error naming what is wrong.
core::Result<std::map<std::string, SetRequest, std::less<>>> parse_state(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("tenants") || !j["tenants"].is_object()) {
    return core::fail(core::Domain::kConfig, core::Code::kParse,
                      "not a JSON object with a \"tenants\" object");
  }
  std::map<std::string, SetRequest, std::less<>> kept;
  for (const auto& [name, entry] : j["tenants"].items()) {
    auto request = parse_request(entry.dump());
    if (!request) {
      return core::failf(core::Domain::kConfig, core::Code::kParse, "tenant '{}': {}", name,
                         request.error().message());
    }
    const auto* set = std::get_if<SetRequest>(&*request);
    if (set == nullptr || set->tenant != name) {
      return core::failf(core::Domain::kConfig, core::Code::kParse,
                         "tenant '{}': not a set request for it", name);
    }
    kept.emplace(name, *set);
  }
  return kept;
}

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
  if (store.path_.empty()) return store;
  std::error_code ec;
  if (!std::filesystem::exists(store.path_, ec)) return store;
  auto text = core::read_file(store.path_, kStateFile);
  auto kept = text ? parse_state(*text)
                   : core::Result<std::map<std::string, SetRequest, std::less<>>>(
                         std::unexpected(text.error()));
  if (kept) {
    store.kept_ = std::move(*kept);
    return store;
  }
  const std::string aside = store.path_ + ".unreadable";
  std::filesystem::rename(store.path_, aside, ec);
  warning = fmt::format("{}: {}; moved to {}, starting without the settings it held", store.path_,
                        kept.error().message(), ec ? "(could not move it)" : aside);
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
