#include "tessera/k8s/http_server.hpp"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <thread>
#include <utility>

namespace tessera::k8s {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Reason for an error status that no handler explained (httplib's own 400/404/413/...).
std::string default_reason(const httplib::Request& req, int status) {
  switch (status) {
    case 400: return "malformed HTTP request";
    case 404: return fmt::format("no route for {} {}", req.method, req.path);
    case 405: return fmt::format("method {} not allowed on {}", req.method, req.path);
    case 413: return "request body larger than the server's limit (--max-body)";
    case 414: return "request URI too long";
    default: return fmt::format("HTTP {}", status);
  }
}

void write(const HttpResponse& from, httplib::Response& to) {
  to.status = from.status;
  to.set_content(from.body, from.content_type.c_str());
}

}  // namespace

std::string HttpRequest::header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return v;
  }
  return {};
}

std::string HttpRequest::param(const std::string& name) const {
  const auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

HttpResponse json_error(int status, std::string reason) {
  HttpResponse r;
  r.status = status;
  // Reasons quote request bytes (names, paths) that may not be UTF-8: replace, never throw.
  r.body = nlohmann::json{{"error", std::move(reason)}, {"status", status}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

HttpResponse json_response(const nlohmann::json& body, int status) {
  HttpResponse r;
  r.status = status;
  // Replace invalid UTF-8 rather than throw: a pod name echoed back must not kill the response.
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

struct HttpServer::Impl {
  HttpServerOptions options;
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
  std::atomic<int> port{0};
  std::atomic<bool> loop_exited{false};
  bool tls = false;

  httplib::Server::Handler adapt(HttpHandler handler) {
    return [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
      HttpRequest r;
      r.method = req.method;
      r.path = req.path;
      r.body = req.body;
      r.remote_addr = req.remote_addr;
      for (const auto& m : req.matches) r.matches.emplace_back(m.str());
      for (const auto& [k, v] : req.headers) r.headers.emplace(k, v);
      for (const auto& [k, v] : req.params) r.params.emplace(k, v);
      try {
        write(handler(r), res);
      } catch (const std::exception& e) {
        write(json_error(500, fmt::format("internal error while serving {} {}: {}", req.method,
                                          req.path, e.what())),
              res);
      } catch (...) {
        write(json_error(500,
                         fmt::format("internal error while serving {} {}", req.method, req.path)),
              res);
      }
    };
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  stop();
}

core::Result<std::unique_ptr<HttpServer>> HttpServer::create(HttpServerOptions options) {
  using core::Code;
  using core::Domain;
  if (options.cert_file.empty() != options.key_file.empty()) {
    return core::failf(Domain::kK8s, Code::kInvalidArgument,
                       "TLS needs both a certificate and a key (got cert '{}', key '{}'); give "
                       "both --cert and --key, or neither for plain HTTP",
                       options.cert_file, options.key_file);
  }
  if (options.port < 0 || options.port > 65535) {
    return core::failf(Domain::kK8s, Code::kInvalidArgument,
                       "port {} is out of range; use 1-65535, or 0 for any free port",
                       options.port);
  }
  if (options.max_body_bytes == 0) {
    return core::fail(Domain::kK8s, Code::kInvalidArgument,
                      "the body size limit must be at least 1 byte");
  }
  if (options.read_timeout.count() <= 0 || options.write_timeout.count() <= 0) {
    return core::fail(Domain::kK8s, Code::kInvalidArgument,
                      "read and write timeouts must be positive");
  }
  auto impl = std::make_unique<Impl>();
  if (!options.cert_file.empty()) {
    auto ssl =
        std::make_unique<httplib::SSLServer>(options.cert_file.c_str(), options.key_file.c_str());
    if (!ssl->is_valid()) {
      return core::failf(Domain::kK8s, Code::kInvalidArgument,
                         "cannot load the TLS certificate '{}' and key '{}' (missing, unreadable, "
                         "not PEM, or the key does not match the certificate)",
                         options.cert_file, options.key_file);
    }
    impl->server = std::move(ssl);
    impl->tls = true;
  } else {
    impl->server = std::make_unique<httplib::Server>();
  }
  auto& s = *impl->server;
  s.set_payload_max_length(options.max_body_bytes);
  // httplib's default also sets SO_REUSEPORT, which lets a second server bind the same port and
  // silently take half the requests: two extenders with different state behind one address.
  // SO_REUSEADDR alone still allows a restart while old connections are in TIME_WAIT.
  // Responses go out without waiting for Nagle's algorithm to meet the peer's delayed ACK
  // (40 ms per request on Linux loopback otherwise); Go clients such as kube-scheduler set
  // TCP_NODELAY on their side by default too.
  s.set_tcp_nodelay(true);
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  auto split = [](std::chrono::milliseconds d) {
    return std::pair<time_t, time_t>{static_cast<time_t>(d.count() / 1000),
                                     static_cast<time_t>((d.count() % 1000) * 1000)};
  };
  auto [rs, rus] = split(options.read_timeout);
  auto [ws, wus] = split(options.write_timeout);
  s.set_read_timeout(rs, rus);
  s.set_write_timeout(ws, wus);
  if (options.threads > 0) {
    const auto n = static_cast<std::size_t>(options.threads);
    s.new_task_queue = [n] { return new httplib::ThreadPool(n); };
  }
  // Every error gets a JSON reason: handlers write their own; httplib's (404, 413, a request it
  // could not parse) get one here.
  s.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        write(json_error(res.status, default_reason(req, res.status)), res);
        return httplib::Server::HandlerResponse::Handled;
      }));
  s.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        write(json_error(500, fmt::format("internal error while serving {} {}: {}", req.method,
                                          req.path, what)),
              res);
      });
  impl->options = std::move(options);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::get(const std::string& pattern, HttpHandler handler) {
  impl_->server->Get(pattern, impl_->adapt(std::move(handler)));
}
void HttpServer::post(const std::string& pattern, HttpHandler handler) {
  impl_->server->Post(pattern, impl_->adapt(std::move(handler)));
}
void HttpServer::put(const std::string& pattern, HttpHandler handler) {
  impl_->server->Put(pattern, impl_->adapt(std::move(handler)));
}
void HttpServer::del(const std::string& pattern, HttpHandler handler) {
  impl_->server->Delete(pattern, impl_->adapt(std::move(handler)));
}

core::Status HttpServer::start() {
  if (impl_->thread.joinable()) {
    return core::fail(core::Domain::kK8s, core::Code::kFailedPrecondition,
                      "the server is already started");
  }
  auto& s = *impl_->server;
  const auto& o = impl_->options;
  int port = o.port;
  if (port == 0) {
    port = s.bind_to_any_port(o.host);
    if (port < 0) port = 0;
  } else if (!s.bind_to_port(o.host, port)) {
    port = 0;
  }
  if (port == 0) {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "cannot listen on {}:{} (address in use, not an address of this host, or "
                       "no permission); choose another --listen address",
                       o.host, o.port);
  }
  impl_->port = port;
  impl_->loop_exited = false;
  impl_->thread = std::thread([this, &s] {
    s.listen_after_bind();
    impl_->loop_exited = true;
  });
  // httplib's stop() is a no-op until the accept loop runs, so wait for it: stop() right after
  // start() must not leave the thread blocked in accept.
  while (!s.is_running() && !impl_->loop_exited) std::this_thread::yield();
  if (!s.is_running()) {
    impl_->thread.join();
    return core::failf(core::Domain::kK8s, core::Code::kInternal,
                       "the server on {}:{} stopped as soon as it started", o.host, port);
  }
  return {};
}

void HttpServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->server->stop();
  impl_->thread.join();
}

bool HttpServer::running() const {
  return impl_->server->is_running();
}
int HttpServer::port() const {
  return impl_->port;
}
bool HttpServer::tls() const {
  return impl_->tls;
}
const HttpServerOptions& HttpServer::options() const {
  return impl_->options;
}

}  // namespace tessera::k8s
