#include "tessera/k8s/api_server_client.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <memory>

#include "tessera/core/try.hpp"
#include "tessera/k8s/bearer_token.hpp"

namespace tessera::k8s {
namespace {

constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

core::Result<std::string> read_token(const std::string& path) {
  return read_bearer_token(path, "API server token file", "--token-file");
}

// A client for one request, with the token as it is now.
core::Result<std::unique_ptr<httplib::Client>> client_for(const ApiServerConfig& config) {
  TESSERA_ASSIGN_OR_RETURN(const std::string token, read_token(config.token_file));
  auto client = std::make_unique<httplib::Client>(config.url);
  if (!client->is_valid()) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "cannot make an HTTP client for API server '{}'", config.url);
  }
  const auto ms = config.timeout.count();
  client->set_connection_timeout(ms / 1000, (ms % 1000) * 1000);
  client->set_read_timeout(ms / 1000, (ms % 1000) * 1000);
  client->set_write_timeout(ms / 1000, (ms % 1000) * 1000);
  client->set_bearer_token_auth(token);
  if (!config.ca_file.empty()) client->set_ca_cert_path(config.ca_file);
  client->enable_server_certificate_verification(true);
  return client;
}

core::Result<ApiResponse> answer(const httplib::Result& res, const ApiServerConfig& config,
                                 std::string_view what) {
  if (!res) {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "{}: API server {} unreachable ({})", what, config.url,
                       httplib::to_string(res.error()));
  }
  return ApiResponse{res->status, res->body};
}

}  // namespace

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

bool safe_path_segment(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::string ApiResponse::reason() const {
  const auto status_object = nlohmann::json::parse(body, nullptr, false);
  if (status_object.is_object() && status_object.contains("message") &&
      status_object["message"].is_string()) {
    return status_object["message"].get<std::string>();
  }
  constexpr std::size_t kShown = 300;
  return body.size() > kShown ? body.substr(0, kShown) + "..." : body;
}

core::Result<ApiServerClient> ApiServerClient::create(ApiServerConfig config) {
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
  return ApiServerClient(std::move(config));
}

core::Result<ApiResponse> ApiServerClient::post(const std::string& path,
                                                const nlohmann::json& body) const {
  TESSERA_ASSIGN_OR_RETURN(auto client, client_for(config_));
  return answer(client->Post(path, body.dump(), "application/json"), config_,
                fmt::format("POST {}", path));
}

core::Result<ApiResponse> ApiServerClient::get(const std::string& path) const {
  TESSERA_ASSIGN_OR_RETURN(auto client, client_for(config_));
  return answer(client->Get(path), config_, fmt::format("GET {}", path));
}

core::Result<ApiResponse> ApiServerClient::put(const std::string& path,
                                               const nlohmann::json& body) const {
  TESSERA_ASSIGN_OR_RETURN(auto client, client_for(config_));
  return answer(client->Put(path, body.dump(), "application/json"), config_,
                fmt::format("PUT {}", path));
}

core::Result<ApiResponse> ApiServerClient::merge_patch(const std::string& path,
                                                       const nlohmann::json& patch) const {
  TESSERA_ASSIGN_OR_RETURN(auto client, client_for(config_));
  return answer(client->Patch(path, patch.dump(), "application/merge-patch+json"), config_,
                fmt::format("PATCH {}", path));
}

void StreamCancel::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  if (active_ != nullptr) active_->stop();
}

bool StreamCancel::cancelled() const {
  std::lock_guard lock(mu_);
  return cancelled_;
}

core::Result<int> ApiServerClient::stream(const std::string& path,
                                          const std::function<bool(std::string_view)>& on_line,
                                          std::chrono::milliseconds idle,
                                          StreamCancel* cancel) const {
  TESSERA_ASSIGN_OR_RETURN(auto client, client_for(config_));
  // The cancelled answer, as nginx names a request its client closed.
  constexpr int kCancelled = 499;
  if (cancel != nullptr) {
    std::lock_guard lock(cancel->mu_);
    if (cancel->cancelled_) return kCancelled;
    cancel->active_ = client.get();
  }
  struct Detach {
    StreamCancel* cancel;
    ~Detach() {
      if (cancel == nullptr) return;
      std::lock_guard lock(cancel->mu_);
      cancel->active_ = nullptr;
    }
  } detach{cancel};
  const auto ms = idle.count();
  client->set_read_timeout(ms / 1000, (ms % 1000) * 1000);
  // ASSUMPTION: no watch event is larger than 16 MiB (the API server's own request limit is 3 MiB).
  constexpr std::size_t kMaxLine = 16u << 20;
  std::string pending;
  bool stopped = false;
  bool too_long = false;
  auto res = client->Get(path, [&](const char* data, std::size_t size) {
    pending.append(data, size);
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (!on_line(std::string_view(pending).substr(start, nl - start))) {
        stopped = true;
        return false;
      }
    }
    pending.erase(0, start);
    too_long = pending.size() > kMaxLine;
    return !too_long;
  });
  if (stopped) return res ? res->status : 200;
  if (cancel != nullptr && cancel->cancelled()) return kCancelled;
  if (too_long) {
    return core::failf(core::Domain::kK8s, core::Code::kResourceExhausted,
                       "GET {}: a line of the answer is longer than 16 MiB", path);
  }
  if (!res) {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "GET {}: API server {} stopped answering ({})", path, config_.url,
                       httplib::to_string(res.error()));
  }
  if (!pending.empty() && res->status == 200) on_line(pending);
  return res->status;
}

core::Result<ApiResponse> ApiServerClient::apply(const std::string& path,
                                                 const nlohmann::json& object,
                                                 std::string_view field_manager) const {
  TESSERA_ASSIGN_OR_RETURN(auto client, client_for(config_));
  const std::string target = fmt::format("{}?fieldManager={}&force=true", path, field_manager);
  return answer(client->Patch(target, object.dump(), "application/apply-patch+yaml"), config_,
                fmt::format("applying {}", path));
}

}  // namespace tessera::k8s
