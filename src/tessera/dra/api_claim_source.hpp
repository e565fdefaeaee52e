#pragma once
// Claims read from the Kubernetes API server (GET of one ResourceClaim, resource.k8s.io/v1).

#include "tessera/dra/dra_driver.hpp"
#include "tessera/k8s/api_server_client.hpp"

namespace tessera::dra {

class ApiClaimSource final : public ClaimSource {
 public:
  explicit ApiClaimSource(k8s::ApiServerClient client) : client_(std::move(client)) {}
  core::Result<nlohmann::json> claim(const std::string& ns, const std::string& name) override;

 private:
  k8s::ApiServerClient client_;
};

// The API path of a ResourceClaim; an error for a namespace or name that is not a Kubernetes name.
core::Result<std::string> claim_path(const std::string& ns, const std::string& name);

}  // namespace tessera::dra
