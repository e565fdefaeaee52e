#include "tessera/k8s/binder.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/k8s/placement_annotation.hpp"

namespace tessera::k8s {

core::Status RecordOnlyBinder::bind(const BindingTarget& target) {
  core::logger().info("bind {}/{} -> {}: recorded only (no API server configured)",
                      target.pod_namespace, target.pod_name, target.node);
  std::lock_guard lock(mu_);
  bindings_.push_back(target);
  return {};
}

std::vector<BindingTarget> RecordOnlyBinder::bindings() const {
  std::lock_guard lock(mu_);
  return bindings_;
}

core::Result<std::unique_ptr<ApiServerBinder>> ApiServerBinder::create(ApiServerConfig config) {
  TESSERA_ASSIGN_OR_RETURN(ApiServerClient client, ApiServerClient::create(std::move(config)));
  return std::unique_ptr<ApiServerBinder>(new ApiServerBinder(std::move(client)));
}

core::Status ApiServerBinder::bind(const BindingTarget& target) {
  if (!safe_path_segment(target.pod_namespace) || !safe_path_segment(target.pod_name)) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "pod '{}/{}' is not a valid Kubernetes name; binding not sent",
                       target.pod_namespace, target.pod_name);
  }
  // A v1.Binding as the default binder sends it (pkg/scheduler/framework/plugins/defaultbinder).
  const nlohmann::json body{
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata",
       {{"name", target.pod_name}, {"namespace", target.pod_namespace}, {"uid", target.pod_uid}}},
      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", target.node}}}};
  const std::string pod_path =
      fmt::format("/api/v1/namespaces/{}/pods/{}", target.pod_namespace, target.pod_name);
  if (!target.placement.empty()) {
    const nlohmann::json patch{
        {"metadata", {{"annotations", {{std::string(kPlacementAnnotation), target.placement}}}}}};
    auto patched = client_.merge_patch(pod_path, patch);
    if (!patched || patched->status / 100 != 2) {
      return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                         "binding {}/{} to {}: recording its placement: {}", target.pod_namespace,
                         target.pod_name, target.node,
                         patched ? fmt::format("API server answered HTTP {}: {}", patched->status,
                                               patched->reason())
                                 : patched.error().message());
    }
  }
  auto res = client_.post(pod_path + "/binding", body);
  if (!res) {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "binding {}/{} to {}: {}", target.pod_namespace, target.pod_name,
                       target.node, res.error().message());
  }
  if (res->status != 201 && res->status != 200) {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "binding {}/{} to {}: API server answered HTTP {}: {}", target.pod_namespace,
                       target.pod_name, target.node, res->status, res->reason());
  }
  core::logger().info("bind {}/{} -> {}: binding created by {}", target.pod_namespace,
                      target.pod_name, target.node, client_.config().url);
  return {};
}

}  // namespace tessera::k8s
