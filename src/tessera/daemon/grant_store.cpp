#include "tessera/daemon/grant_store.hpp"

#include <nlohmann/json.hpp>

#include "tessera/core/file_replace.hpp"
#include "tessera/core/try.hpp"
#include "tessera/daemon/kept_requests.hpp"

namespace tessera::daemon {
namespace {

constexpr KeptFile<GrantRequest> kFile{.section = "grants",
                                       .key = &GrantRequest::claim,
                                       .key_name = "claim",
                                       .file_what = "daemon grants file",
                                       .contents = "grants"};

}  // namespace

GrantStore GrantStore::open(std::string path, std::string& warning) {
  GrantStore store;
  store.path_ = std::move(path);
  store.kept_ = read_kept(store.path_, kFile, warning);
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
