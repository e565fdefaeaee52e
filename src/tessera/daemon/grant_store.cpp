#include "tessera/daemon/grant_store.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>
#include <variant>

#include "tessera/core/file_read.hpp"
#include "tessera/core/file_replace.hpp"
#include "tessera/core/try.hpp"

namespace tessera::daemon {
namespace {

// ASSUMPTION: the grants of 64 tenants (the table's limit), some 300 bytes each, fit in far less
// than 1 MiB.
constexpr core::FileKind kStateFile{
    .what = "daemon grants file", .domain = core::Domain::kConfig, .max_bytes = core::kMiB};

// The file's grants by claim; an error naming what is wrong.
core::Result<std::map<std::string, GrantRequest, std::less<>>> parse_grants(
    const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("grants") || !j["grants"].is_object()) {
    return core::fail(core::Domain::kConfig, core::Code::kParse,
                      "not a JSON object with a \"grants\" object");
  }
  std::map<std::string, GrantRequest, std::less<>> kept;
  for (const auto& [claim, entry] : j["grants"].items()) {
    auto request = parse_request(entry.dump());
    if (!request) {
      return core::failf(core::Domain::kConfig, core::Code::kParse, "claim '{}': {}", claim,
                         request.error().message());
    }
    const auto* grant = std::get_if<GrantRequest>(&*request);
    if (grant == nullptr || grant->claim != claim) {
      return core::failf(core::Domain::kConfig, core::Code::kParse,
                         "claim '{}': not a grant request for it", claim);
    }
    kept.emplace(claim, *grant);
  }
  return kept;
}

}  // namespace

GrantStore GrantStore::open(std::string path, std::string& warning) {
  GrantStore store;
  store.path_ = std::move(path);
  if (store.path_.empty()) return store;
  std::error_code ec;
  if (!std::filesystem::exists(store.path_, ec)) return store;
  auto text = core::read_file(store.path_, kStateFile);
  auto kept = text ? parse_grants(*text) : core::Result<Grants>(std::unexpected(text.error()));
  if (kept) {
    store.kept_ = std::move(*kept);
    return store;
  }
  const std::string aside = store.path_ + ".unreadable";
  std::filesystem::rename(store.path_, aside, ec);
  warning = fmt::format("{}: {}; moved to {}, starting without the grants it held", store.path_,
                        kept.error().message(), ec ? "(could not move it)" : aside);
  return store;
}

std::vector<GrantRequest> GrantStore::grants() const {
  std::vector<GrantRequest> out;
  for (const auto& [claim, grant] : kept_) out.push_back(grant);
  return out;
}

core::Status GrantStore::put(const GrantRequest& grant) {
  if (path_.empty()) return {};
  Grants next = kept_;
  next.insert_or_assign(grant.claim, grant);
  TESSERA_TRY(write(next));
  kept_ = std::move(next);
  return {};
}

core::Status GrantStore::forget(std::string_view claim) {
  if (path_.empty()) return {};
  Grants next = kept_;
  const auto it = next.find(claim);
  if (it == next.end()) return {};
  next.erase(it);
  TESSERA_TRY(write(next));
  kept_ = std::move(next);
  return {};
}

core::Status GrantStore::write(const Grants& grants) const {
  nlohmann::json by_claim = nlohmann::json::object();
  for (const auto& [claim, grant] : grants) by_claim[claim] = grant_request_json(grant);
  return core::replace_file(path_, nlohmann::json{{"grants", by_claim}}.dump(2) + "\n",
                            "the daemon's grants");
}

}  // namespace tessera::daemon
