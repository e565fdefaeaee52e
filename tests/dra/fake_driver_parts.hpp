#pragma once
// Stand-ins for the API server and tesserad behind a DraDriver: what they were asked, and what
// they answer.

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/dra/dra_driver.hpp"
#include "tessera/dra/mig_partitions.hpp"

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

// MIG partitions made and removed in memory: instance ids from 3 up, as a GPU's first instances
// after the driver's own.
class FakeMigPartitions final : public dra::MigPartitions {
 public:
  std::vector<hw::MigProfile> profiles(int) override { return {}; }
  core::Result<device::MigInstance> create(int gpu, int profile_id, int start) override {
    if (!refuse.empty())
      return core::fail(core::Domain::kNvml, core::Code::kResourceExhausted, refuse);
    const auto id = next++;
    live[id] = {gpu, profile_id, start};
    return device::MigInstance{.id = id,
                               .profile_id = profile_id,
                               .start = start,
                               .uuid = fmt::format("MIG-5f2c0000-0000-4000-8000-00000000000{}", id),
                               .memory_bytes = 0,
                               .sms = 0};
  }
  core::Status destroy(int, device::MigInstanceId instance) override {
    live.erase(instance);
    ++destroyed;
    return {};
  }
  struct Made {
    int gpu, profile_id, start;
  };
  std::map<device::MigInstanceId, Made> live;
  device::MigInstanceId next = 3;
  int destroyed = 0;
  std::string refuse;  // non-empty: create fails with it
};

}  // namespace tessera::test
