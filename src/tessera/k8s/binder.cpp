#include "tessera/k8s/binder.hpp"

#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/k8s/bearer_token.hpp"

namespace tessera::k8s {
namespace {

constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

core::Result<std::string> read_token(const std::string& path) {
  return read_bearer_token(path, "API server token file", "--token-file");
}

// Path segments are Kubernetes names (DNS labels and subdomains), which need no escaping; a name
// with anything else is refused rather than sent to a different URL.
bool safe_segment(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

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

core::Result<ApiServerConfig> in_cluster_config() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || !*host || !*port) {
    return core::fail(core::Domain::kK8s, core::Code::kNotFound,
                      "not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST/PORT unset); give "
                      "--apiserver URL --token-file F, or run without them for a dry run");
  }
  ApiServerConfig c;
  const std::string h = host;
  // An IPv6 service address needs brackets in a URL.
  c.url = fmt::format("https://{}:{}", h.find(':') != std::string::npos ? "[" + h + "]" : h, port);
  c.token_file = fmt::format("{}/token", kServiceAccountDir);
  c.ca_file = fmt::format("{}/ca.crt", kServiceAccountDir);
  return c;
}

core::Result<std::unique_ptr<ApiServerBinder>> ApiServerBinder::create(ApiServerConfig config) {
  if (config.url.rfind("http://", 0) != 0 && config.url.rfind("https://", 0) != 0) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "API server URL '{}' must start with https:// (or http:// for a local "
                       "test server)",
                       config.url);
  }
  while (!config.url.empty() && config.url.back() == '/') config.url.pop_back();
  if (config.token_file.empty()) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "an API server needs a bearer token: give --token-file");
  }
  TESSERA_TRY(read_token(config.token_file));
  if (!config.ca_file.empty() && !std::ifstream(config.ca_file)) {
    return core::failf(core::Domain::kK8s, core::Code::kNotFound,
                       "cannot read the API server CA file '{}'", config.ca_file);
  }
  return std::unique_ptr<ApiServerBinder>(new ApiServerBinder(std::move(config)));
}

core::Status ApiServerBinder::bind(const BindingTarget& target) {
  if (!safe_segment(target.pod_namespace) || !safe_segment(target.pod_name)) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "pod '{}/{}' is not a valid Kubernetes name; binding not sent",
                       target.pod_namespace, target.pod_name);
  }
  TESSERA_ASSIGN_OR_RETURN(auto token, read_token(config_.token_file));
  // A v1.Binding as the default binder sends it (pkg/scheduler/framework/plugins/defaultbinder).
  const nlohmann::json body{
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata",
       {{"name", target.pod_name}, {"namespace", target.pod_namespace}, {"uid", target.pod_uid}}},
      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", target.node}}}};
  const std::string path =
      fmt::format("/api/v1/namespaces/{}/pods/{}/binding", target.pod_namespace, target.pod_name);

  httplib::Client client(config_.url);
  if (!client.is_valid()) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "cannot make an HTTP client for API server '{}'", config_.url);
  }
  const auto ms = config_.timeout.count();
  client.set_connection_timeout(ms / 1000, (ms % 1000) * 1000);
  client.set_read_timeout(ms / 1000, (ms % 1000) * 1000);
  client.set_write_timeout(ms / 1000, (ms % 1000) * 1000);
  client.set_bearer_token_auth(token.c_str());
  if (!config_.ca_file.empty()) client.set_ca_cert_path(config_.ca_file.c_str());
  client.enable_server_certificate_verification(true);

  auto res = client.Post(path.c_str(), body.dump(), "application/json");
  if (!res) {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "binding {}/{} to {}: API server {} unreachable ({})", target.pod_namespace,
                       target.pod_name, target.node, config_.url, httplib::to_string(res.error()));
  }
  if (res->status != 201 && res->status != 200) {
    // The API server answers with a v1.Status whose message says why.
    std::string reason = res->body;
    auto status = nlohmann::json::parse(res->body, nullptr, false);
    if (status.is_object() && status.contains("message") && status["message"].is_string()) {
      reason = status["message"].get<std::string>();
    }
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "binding {}/{} to {}: API server answered HTTP {}: {}", target.pod_namespace,
                       target.pod_name, target.node, res->status, reason);
  }
  core::logger().info("bind {}/{} -> {}: binding created by {}", target.pod_namespace,
                      target.pod_name, target.node, config_.url);
  return {};
}

}  // namespace tessera::k8s
