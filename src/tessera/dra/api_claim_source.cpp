#include "tessera/dra/api_claim_source.hpp"

#include <fmt/format.h>

#include "tessera/core/try.hpp"

namespace tessera::dra {

core::Result<std::string> claim_path(const std::string& ns, const std::string& name) {
  if (!k8s::safe_path_segment(ns) || !k8s::safe_path_segment(name)) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "claim '{}/{}': not a Kubernetes namespace and name", ns, name);
  }
  return fmt::format("/apis/resource.k8s.io/v1/namespaces/{}/resourceclaims/{}", ns, name);
}

core::Result<nlohmann::json> ApiClaimSource::claim(const std::string& ns, const std::string& name) {
  TESSERA_ASSIGN_OR_RETURN(const std::string path, claim_path(ns, name));
  TESSERA_ASSIGN_OR_RETURN(const k8s::ApiResponse response, client_.get(path));
  if (response.status == 404) {
    return core::failf(core::Domain::kK8s, core::Code::kNotFound,
                       "claim {}/{} is not on the API server", ns, name);
  }
  if (response.status != 200) {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "reading claim {}/{}: the API server answered {}: {}", ns, name,
                       response.status, response.reason());
  }
  auto object = nlohmann::json::parse(response.body, nullptr, false);
  if (object.is_discarded() || !object.is_object()) {
    return core::failf(core::Domain::kK8s, core::Code::kParse,
                       "reading claim {}/{}: the API server's answer is not a JSON object", ns,
                       name);
  }
  return object;
}

}  // namespace tessera::dra
