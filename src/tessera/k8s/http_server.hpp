#pragma once
// A small HTTP(S) server for tessera's Kubernetes-facing processes (the scheduler extender and the
// node agent), over GNU libmicrohttpd. Its threads poll() their connections, so slow or
// idle clients hold a socket, never a thread. What the wrapper adds: options with safe defaults
// (loopback, a body limit that holds for chunked bodies too, an idle timeout, a whole-request
// deadline, a connection cap), regular-expression routes, TLS when a certificate and key are
// given (and client certificates checked against a CA when one is), a JSON error body with a
// reason on the errors it answers, handler exceptions turned into 500s instead of a dead process,
// and a start/stop API that tests can run on an ephemeral port.
//
// Handlers see plain structs, so libmicrohttpd's header stays out of everything that includes
// this one.

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
  // Set (with cert/key): mutual TLS. Every request must come over a connection whose client
  // presented a certificate that verifies against this PEM CA bundle; others get 403.
  std::string client_ca_file;
  // Largest request body accepted, chunked or not: past it the body is read and thrown away (no
  // buffer holds more than this) and the request gets 413; a client that asked for "100
  // Continue" gets the 413 before sending a Content-Length over the limit.
  std::size_t max_body_bytes = std::size_t{8} << 20;
  // A connection silent this long is closed: a client that stops sending mid-request, one that
  // stops reading the response, or an idle keep-alive connection. libmicrohttpd has one such
  // timeout for both directions, in whole seconds: the larger of the two, rounded up.
  std::chrono::milliseconds read_timeout{5000};
  std::chrono::milliseconds write_timeout{5000};
  // The longest one request may take, from its request line to its response's last byte,
  // however steadily the client trickles; a connection that sends no request line within this
  // long of opening (or of its previous response) is closed too.
  std::chrono::milliseconds request_timeout{10000};
  // Connections held at once; past it new ones are closed as they are accepted (or wait in the
  // kernel's backlog) until others end.
  int max_connections = 512;
  // Threads that poll connections and run handlers (a handler runs on its connection's thread);
  // 0: one per core, 2 to 8.
  int threads = 0;
};

struct HttpRequest {
  std::string method;
  std::string path;
  std::string body;
  // Capture groups of the route's pattern (matches[0] is the whole path).
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
  // Fails (Domain::kK8s) when only one of cert/key is given, a client CA without them, the TLS
  // files cannot be loaded, or an option is out of range.
  static core::Result<std::unique_ptr<HttpServer>> create(HttpServerOptions options);
  ~HttpServer();  // stops the server
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes: `pattern` is a regular expression (std::regex) the whole decoded path must match;
  // register before start(). GET routes serve HEAD too. A path that only another method's route
  // matches gets 405, one that none matches 404.
  void get(const std::string& pattern, HttpHandler handler);
  void post(const std::string& pattern, HttpHandler handler);
  void put(const std::string& pattern, HttpHandler handler);
  void del(const std::string& pattern, HttpHandler handler);

  // Binds and serves on a background thread; returns once the server accepts connections.
  // Fails when the address cannot be bound (in use, bad host, no permission).
  core::Status start();
  // Stops accepting, lets the requests being served finish (up to write_timeout), closes every
  // connection, joins the threads. Idempotent.
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
