#pragma once
// Stand-ins for the API server and tesserad behind a DraDriver: what they were asked, and what
// they answer.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/dra/dra_driver.hpp"

namespace tessera::test {

class FakeClaims final : public dra::ClaimSource {
 public:
  core::Result<nlohmann::json> claim(const std::string& ns, const std::string& name) override {
    ++reads;
    const auto it = objects.find(ns + "/" + name);
    if (it == objects.end()) {
      return core::failf(core::Domain::kK8s, core::Code::kNotFound, "claim {}/{} not found", ns,
                         name);
    }
    return it->second;
  }
  std::map<std::string, nlohmann::json> objects;  // by "namespace/name"
  int reads = 0;
};

class FakeGrants final : public dra::TenantGrants {
 public:
  core::Status grant(const nlohmann::json& request) override {
    granted.push_back(request);
    if (!refuse.empty())
      return core::fail(core::Domain::kIo, core::Code::kFailedPrecondition, refuse);
    live[request["claim"].get<std::string>()] = request;
    return {};
  }
  core::Status revoke(const std::string& claim_uid) override {
    revoked.push_back(claim_uid);
    if (unreachable) {
      return core::fail(core::Domain::kIo, core::Code::kFailedPrecondition, "no daemon answers");
    }
    live.erase(claim_uid);
    return {};
  }
  std::vector<nlohmann::json> granted;
  std::vector<std::string> revoked;
  std::map<std::string, nlohmann::json> live;
  std::string refuse;        // non-empty: grant fails with it
  bool unreachable = false;  // revoke fails
};

}  // namespace tessera::test
