#pragma once
// Requests to the Kubernetes API server, as the extender's binder and the agent's
// NodeResourceTopology publisher make them: cpp-httplib over HTTPS, the API server verified
// against a CA bundle, and a bearer token read from its file at every request (projected
// service-account tokens are rotated by the kubelet, so a token read once at start expires).

#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"

namespace httplib {
class Client;
}

namespace tessera::k8s {

// Lets another thread end ApiServerClient::stream while it waits (at shutdown): the stream in
// progress is cut, and any later one ends at its start.
class StreamCancel {
 public:
  void cancel();
  bool cancelled() const;

 private:
  friend class ApiServerClient;
  mutable std::mutex mu_;
  bool cancelled_ = false;
  httplib::Client* active_ = nullptr;
};

struct ApiServerConfig {
  std::string url;  // "https://10.96.0.1:443"
  std::string token_file;
  std::string ca_file;  // PEM bundle that signs the API server's certificate; empty: system CAs
  std::chrono::milliseconds timeout{10000};
};

// The in-cluster configuration: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT and the
// service account's token and ca.crt under /var/run/secrets/kubernetes.io/serviceaccount (as
// client-go's rest.InClusterConfig reads them). Fails when not running in a pod.
core::Result<ApiServerConfig> in_cluster_config();

// Path segments are Kubernetes names (DNS labels and subdomains), which need no escaping; a name
// with anything else is refused rather than sent to a different URL.
bool safe_path_segment(std::string_view s);

struct ApiResponse {
  int status = 0;
  std::string body;
  // The message of the v1.Status an error answer carries, else the body (cut at 300 bytes).
  std::string reason() const;
};

class ApiServerClient {
 public:
  // Fails when the URL is not http(s)://host[:port], there is no token file or it cannot be read,
  // or the CA file cannot be read.
  static core::Result<ApiServerClient> create(ApiServerConfig config);

  // POST of a JSON body. Fails (kFailedPrecondition) only when no answer came; any status is an
  // answer.
  core::Result<ApiResponse> post(const std::string& path, const nlohmann::json& body) const;
  // Server-side apply of `object` at `path` (PATCH, Content-Type application/apply-patch+yaml,
  // of which JSON is a form) as `field_manager`, forcing ownership of the fields it sets: the
  // object is created if missing and its fields replaced if another manager set them.
  core::Result<ApiResponse> apply(const std::string& path, const nlohmann::json& object,
                                  std::string_view field_manager) const;

  // GET of `path` (a list): the whole answer.
  core::Result<ApiResponse> get(const std::string& path) const;
  // PUT of a JSON body (an update, with metadata.resourceVersion for optimistic concurrency).
  core::Result<ApiResponse> put(const std::string& path, const nlohmann::json& body) const;
  // JSON merge patch of `patch` at `path` (PATCH, application/merge-patch+json).
  core::Result<ApiResponse> merge_patch(const std::string& path, const nlohmann::json& patch) const;
  // GET of a streamed answer (a watch): `on_line` gets each line as it arrives, until the server
  // ends the answer or `on_line` returns false; a line longer than 16 MiB ends it too. Waits up to
  // `idle` for each read. The answer's status, or an error when none came or the stream broke.
  // `cancel`, when given, can end it from another thread (then the status is 499).
  core::Result<int> stream(const std::string& path,
                           const std::function<bool(std::string_view line)>& on_line,
                           std::chrono::milliseconds idle, StreamCancel* cancel = nullptr) const;

  const ApiServerConfig& config() const { return config_; }

 private:
  explicit ApiServerClient(ApiServerConfig config) : config_(std::move(config)) {}
  ApiServerConfig config_;
};

}  // namespace tessera::k8s
