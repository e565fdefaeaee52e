#pragma once
// A small HTTP(S) server for tessera's Kubernetes-facing processes (the scheduler extender and the
// node agent), over cpp-httplib. What it adds to httplib: options with safe defaults (loopback,
// a body limit, timeouts), TLS when a certificate and key are given, a JSON error body with a
// reason on every 4xx/5xx, handler exceptions turned into 500s instead of a dead process, and a
// start/stop API that tests can run on an ephemeral port.
//
// Handlers see plain structs, so httplib's header stays out of everything that includes this one.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::k8s {

struct HttpServerOptions {
  // Loopback unless told otherwise: the extender is called by kube-scheduler on the same host
  // or through a Service; binding every interface is an explicit choice ("0.0.0.0").
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port (tests); see HttpServer::port()
  // Both set: HTTPS with this PEM certificate chain and key. Both empty: plain HTTP.
  std::string cert_file;
  std::string key_file;
  // Largest request body accepted; larger ones get 413 before the body is read.
  std::size_t max_body_bytes = std::size_t{8} << 20;
  std::chrono::milliseconds read_timeout{5000};
  std::chrono::milliseconds write_timeout{5000};
  // Worker threads; 0: httplib's default (at least 8).
  int threads = 0;
};

struct HttpRequest {
  std::string method;
  std::string path;
  std::string body;
  // Capture groups of the route's pattern (matches[0] is the whole path), as httplib gives them.
  std::vector<std::string> matches;
  std::multimap<std::string, std::string> headers;
  std::multimap<std::string, std::string> params;  // the query string's, decoded
  std::string remote_addr;

  // First value of a header (names compare case-insensitively); empty when absent.
  std::string header(const std::string& name) const;
  // First value of a query parameter (exact name); empty when absent.
  std::string param(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

// {"error": reason, "status": status}: the body of every error response.
HttpResponse json_error(int status, std::string reason);
HttpResponse json_response(const nlohmann::json& body, int status = 200);

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpServer {
 public:
  // Fails (Domain::kK8s) when only one of cert/key is given, the TLS files cannot be loaded, or
  // an option is out of range.
  static core::Result<std::unique_ptr<HttpServer>> create(HttpServerOptions options);
  ~HttpServer();  // stops the server
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes: `pattern` is a full-path regular expression (httplib's); register before start().
  void get(const std::string& pattern, HttpHandler handler);
  void post(const std::string& pattern, HttpHandler handler);
  void put(const std::string& pattern, HttpHandler handler);
  void del(const std::string& pattern, HttpHandler handler);

  // Binds and serves on a background thread; returns once the server accepts connections.
  // Fails when the address cannot be bound (in use, bad host, no permission).
  core::Status start();
  // Stops accepting, finishes in-flight requests, joins the thread. Idempotent.
  void stop();
  bool running() const;
  // The bound port (the chosen one when options.port was 0); 0 before start().
  int port() const;
  bool tls() const;
  const HttpServerOptions& options() const;

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::k8s
