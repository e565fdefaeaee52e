#include "tessera/k8s/http_server.hpp"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/k8s/tls_certificate.hpp"

namespace tessera::k8s {
namespace {

using Clock = std::chrono::steady_clock;

// Headers and the read buffer of one connection; bodies go through it piece by piece. 512
// connections at this size hold at most 32 MiB.
constexpr std::size_t kConnectionMemory = std::size_t{64} << 10;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

struct Route {
  std::string method;
  std::regex pattern;
  HttpHandler handler;
};

// One request between libmicrohttpd's calls of the access handler: the route chosen when the
// headers arrived, and the body so far, or the refusal it will get once its body has been read
// and thrown away.
struct RequestState {
  const Route* route = nullptr;
  std::vector<std::string> matches;
  std::string body;
  std::optional<HttpResponse> refusal;
  bool counted = false;  // in Impl::in_flight: its body has arrived and its handler runs
};

// One connection as the deadline's watchdog sees it: since when its current request has run.
struct ConnectionClock {
  MHD_socket fd = MHD_INVALID_SOCKET;
  Clock::time_point since;
  bool cut = false;
};

MHD_Result queue(MHD_Connection* connection, const HttpResponse& r) {
  MHD_Response* response = MHD_create_response_from_buffer(
      r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  const MHD_Result queued =
      MHD_queue_response(connection, static_cast<unsigned>(r.status), response);
  MHD_destroy_response(response);
  return queued;
}

std::optional<std::uint64_t> content_length(MHD_Connection* connection) {
  const char* text =
      MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (text == nullptr) return std::nullopt;
  const std::string_view v(text);
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc{} || end != v.data() + v.size()) return std::nullopt;
  return n;
}

MHD_Result collect(void* into, MHD_ValueKind, const char* key, const char* value) {
  static_cast<std::multimap<std::string, std::string>*>(into)->emplace(key, value ? value : "");
  return MHD_YES;
}

std::string client_address(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return {};
  char text[INET6_ADDRSTRLEN] = {};
  const sockaddr* a = info->client_addr;
  const void* raw =
      a->sa_family == AF_INET6
          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr)
          : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a)->sin_addr);
  return inet_ntop(a->sa_family, raw, text, sizeof text) ? std::string(text) : std::string();
}

core::Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument, "cannot read '{}'", path);
  }
  return text;
}

// libmicrohttpd's diagnostics (a refused connection, a client's malformed request) go to the debug
// log: they describe clients, not the server.
[[gnu::format(printf, 2, 0)]] void log_mhd(void*, const char* format, va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof text, format, args);
  std::string_view line(text);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  core::logger().debug("http server: {}", line);
}

// How many certificates a PEM bundle holds that GnuTLS can read (0: none, or not PEM).
unsigned pem_certificates(const std::string& pem) {
  gnutls_x509_crt_t* list = nullptr;
  unsigned count = 0;
  gnutls_datum_t data{reinterpret_cast<unsigned char*>(const_cast<char*>(pem.data())),
                      static_cast<unsigned>(pem.size())};
  if (gnutls_x509_crt_list_import2(&list, &count, &data, GNUTLS_X509_FMT_PEM, 0) < 0) return 0;
  for (unsigned i = 0; i < count; ++i) gnutls_x509_crt_deinit(list[i]);
  gnutls_free(list);
  return count;
}

// Whether the client of this TLS connection presented a certificate that verifies against the
// trust list libmicrohttpd was given (MHD_OPTION_HTTPS_MEM_TRUST): libmicrohttpd only asks for
// one and leaves the check to the server.
bool client_certificate_verified(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr || info->tls_session == nullptr) return false;
  auto session = static_cast<gnutls_session_t>(info->tls_session);
  unsigned listed = 0;
  if (gnutls_certificate_get_peers(session, &listed) == nullptr || listed == 0) return false;
  unsigned status = 0;
  return gnutls_certificate_verify_peers2(session, &status) == GNUTLS_E_SUCCESS && status == 0;
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
  std::deque<Route> routes;                           // a deque: RequestState points into it
  std::unique_ptr<ReloadingCertificate> certificate;  // TLS: read again when its files change
  std::string client_ca_pem;  // mutual TLS: the CAs a client certificate must verify against
  unsigned threads = 1;
  MHD_Daemon* daemon = nullptr;
  int port = 0;

  // The whole-request deadline: libmicrohttpd's own timeout restarts with every byte, so a
  // watchdog closes connections whose request has run too long.
  std::mutex mu;
  std::condition_variable wake;     // the watchdog's tick, or stop
  std::condition_variable drained;  // in_flight fell
  std::unordered_map<MHD_Connection*, ConnectionClock> connections;
  int in_flight = 0;
  bool stopping = false;
  std::thread watchdog;

  MHD_Result access(MHD_Connection* c, const char* url, const char* method, const char* upload,
                    std::size_t* upload_size, void** req_cls);
  void completed(void** req_cls, MHD_Connection* c);
  void connection_event(MHD_Connection* c, MHD_ConnectionNotificationCode event);
  void request_line(MHD_Connection* c);
  void watch();

  static MHD_Result on_access(void* self, MHD_Connection* c, const char* url, const char* method,
                              const char*, const char* upload, std::size_t* upload_size,
                              void** req_cls) {
    // An exception must not unwind into C: the connection is closed instead.
    try {
      return static_cast<Impl*>(self)->access(c, url, method, upload, upload_size, req_cls);
    } catch (...) {
      return MHD_NO;
    }
  }
  static void on_completed(void* self, MHD_Connection* c, void** req_cls,
                           MHD_RequestTerminationCode) {
    static_cast<Impl*>(self)->completed(req_cls, c);
  }
  static void on_connection(void* self, MHD_Connection* c, void** socket_context,
                            MHD_ConnectionNotificationCode event) {
    // The certificate callback below finds the server through the connection.
    if (event == MHD_CONNECTION_NOTIFY_STARTED) *socket_context = self;
    static_cast<Impl*>(self)->connection_event(c, event);
  }
  // GnuTLS asks for the certificate at every handshake; the session's pointer is libmicrohttpd's
  // connection, whose socket context on_connection set to this server.
  static int on_certificate(gnutls_session_t session, const gnutls_datum_t*, int,
                            const gnutls_pk_algorithm_t*, int, gnutls_pcert_st** chain,
                            unsigned* length, gnutls_privkey_t* key) {
    auto* c = static_cast<MHD_Connection*>(gnutls_session_get_ptr(session));
    const MHD_ConnectionInfo* info =
        c != nullptr ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : nullptr;
    auto* self = info != nullptr ? static_cast<Impl*>(info->socket_context) : nullptr;
    if (self == nullptr || !self->certificate) return -1;
    return self->certificate->retrieve(chain, length, key);
  }
  static void* on_request_line(void* self, const char*, MHD_Connection* c) {
    static_cast<Impl*>(self)->request_line(c);
    return nullptr;
  }
};

MHD_Result HttpServer::Impl::access(MHD_Connection* c, const char* url, const char* method,
                                    const char* upload, std::size_t* upload_size, void** req_cls) {
  auto* state = static_cast<RequestState*>(*req_cls);
  if (state == nullptr) {
    // The headers are in: choose the route, and decide what will not be served before any of
    // the body is read.
    auto fresh = std::make_unique<RequestState>();
    const std::string path(url);
    const std::string_view verb(method);
    bool path_known = false;
    for (const auto& r : routes) {
      std::smatch m;
      if (!std::regex_match(path, m, r.pattern)) continue;
      path_known = true;
      if (r.method == verb || (verb == "HEAD" && r.method == "GET")) {
        fresh->route = &r;
        for (const auto& group : m) fresh->matches.push_back(group.str());
        break;
      }
    }
    const auto length = content_length(c);
    if (!client_ca_pem.empty() && !client_certificate_verified(c)) {
      fresh->refusal = json_error(
          403, "this server requires a client certificate signed by its client CA (mutual TLS)");
    } else if (fresh->route == nullptr) {
      fresh->refusal = path_known
                           ? json_error(405, fmt::format("method {} not allowed on {}", verb, path))
                           : json_error(404, fmt::format("no route for {} {}", verb, path));
    } else if (length && *length > options.max_body_bytes) {
      fresh->refusal = json_error(413, fmt::format("request body of {} bytes is larger than the "
                                                   "server's limit of {} bytes (--max-body)",
                                                   *length, options.max_body_bytes));
    } else if (length) {
      fresh->body.reserve(*length);
    }
    state = fresh.release();
    *req_cls = state;
    // A client that waits for "100 Continue", or sends no body, gets its refusal now. Others are
    // already sending: their body is read and thrown away, so that the refusal reaches them
    // rather than a reset connection (and an HTTP client that writes into a closed socket gets
    // SIGPIPE). The whole-request deadline bounds how long that reading takes.
    const char* expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
    const bool body_follows =
        (length && *length > 0) ||
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if (state->refusal && (!body_follows || (expect && iequals(expect, "100-continue")))) {
      return queue(c, *state->refusal);
    }
    return MHD_YES;
  }
  if (*upload_size != 0) {
    if (!state->refusal && *upload_size > options.max_body_bytes - state->body.size()) {
      // A chunked body has no length to refuse up front: it is refused once it passes the limit.
      state->refusal = json_error(
          413, fmt::format("request body larger than the server's limit of {} bytes (--max-body)",
                           options.max_body_bytes));
      std::string().swap(state->body);
    }
    if (!state->refusal) state->body.append(upload, *upload_size);
    *upload_size = 0;
    return MHD_YES;
  }
  if (state->refusal) return queue(c, *state->refusal);
  {
    std::lock_guard lock(mu);
    ++in_flight;
    state->counted = true;
  }
  HttpRequest r;
  r.method = method;
  r.path = url;
  r.body = std::move(state->body);
  r.matches = std::move(state->matches);
  r.remote_addr = client_address(c);
  MHD_get_connection_values(c, MHD_HEADER_KIND, &collect, &r.headers);
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, &collect, &r.params);
  HttpResponse response;
  try {
    response = state->route->handler(r);
  } catch (const std::exception& e) {
    response = json_error(
        500, fmt::format("internal error while serving {} {}: {}", r.method, r.path, e.what()));
  } catch (...) {
    response = json_error(500, fmt::format("internal error while serving {} {}", r.method, r.path));
  }
  return queue(c, response);
}

void HttpServer::Impl::completed(void** req_cls, MHD_Connection* c) {
  std::unique_ptr<RequestState> state(static_cast<RequestState*>(*req_cls));
  *req_cls = nullptr;
  std::lock_guard lock(mu);
  if (state && state->counted) {
    --in_flight;
    drained.notify_all();
  }
  // Idle from here on: the connection's next request starts its own clock.
  if (const auto it = connections.find(c); it != connections.end()) {
    it->second.since = Clock::now();
    it->second.cut = false;
  }
}

void HttpServer::Impl::connection_event(MHD_Connection* c, MHD_ConnectionNotificationCode event) {
  std::lock_guard lock(mu);
  if (event == MHD_CONNECTION_NOTIFY_CLOSED) {
    connections.erase(c);
    return;
  }
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (info != nullptr) connections[c] = ConnectionClock{info->connect_fd, Clock::now(), false};
}

void HttpServer::Impl::request_line(MHD_Connection* c) {
  std::lock_guard lock(mu);
  if (const auto it = connections.find(c); it != connections.end()) {
    it->second.since = Clock::now();
  }
}

void HttpServer::Impl::watch() {
  using std::chrono::milliseconds;
  const milliseconds deadline = options.request_timeout;
  const milliseconds tick = std::clamp(deadline / 10, milliseconds(10), milliseconds(250));
  std::unique_lock lock(mu);
  while (!stopping) {
    wake.wait_for(lock, tick, [this] { return stopping; });
    const auto now = Clock::now();
    for (auto& [connection, clock] : connections) {
      if (clock.cut || now - clock.since <= deadline) continue;
      // libmicrohttpd sees the end of the stream on its next poll and closes the connection
      // itself. Its close notification waits for mu, so the descriptor is still this
      // connection's.
      ::shutdown(clock.fd, SHUT_RDWR);
      clock.cut = true;
    }
  }
}

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
  if (options.request_timeout.count() <= 0) {
    return core::fail(Domain::kK8s, Code::kInvalidArgument, "the request timeout must be positive");
  }
  if (options.threads < 0) {
    return core::failf(Domain::kK8s, Code::kInvalidArgument,
                       "{} server threads: use at least 1, or 0 for one per core", options.threads);
  }
  auto impl = std::make_unique<Impl>();
  impl->threads = options.threads > 0 ? static_cast<unsigned>(options.threads)
                                      : std::clamp(std::thread::hardware_concurrency(), 2u, 8u);
  // Each thread holds its share of the connections, so each needs a share of at least one.
  if (options.max_connections < static_cast<int>(impl->threads)) {
    return core::failf(Domain::kK8s, Code::kInvalidArgument,
                       "a cap of {} connections is below the {} server threads that share it",
                       options.max_connections, impl->threads);
  }
  if (!options.cert_file.empty()) {
    TESSERA_ASSIGN_OR_RETURN(impl->certificate,
                             ReloadingCertificate::load(options.cert_file, options.key_file));
  }
  if (!options.client_ca_file.empty()) {
    if (options.cert_file.empty()) {
      return core::fail(Domain::kK8s, Code::kInvalidArgument,
                        "a client CA (mutual TLS) needs the server's own --cert and --key");
    }
    auto ca = read_file(options.client_ca_file);
    if (!ca || pem_certificates(*ca) == 0) {
      return core::failf(Domain::kK8s, Code::kInvalidArgument,
                         "cannot load the client CA bundle '{}' (missing, unreadable, or no PEM "
                         "certificate in it)",
                         options.client_ca_file);
    }
    impl->client_ca_pem = std::move(*ca);
  }
  impl->options = std::move(options);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::get(const std::string& pattern, HttpHandler handler) {
  impl_->routes.push_back(Route{"GET", std::regex(pattern), std::move(handler)});
}
void HttpServer::post(const std::string& pattern, HttpHandler handler) {
  impl_->routes.push_back(Route{"POST", std::regex(pattern), std::move(handler)});
}
void HttpServer::put(const std::string& pattern, HttpHandler handler) {
  impl_->routes.push_back(Route{"PUT", std::regex(pattern), std::move(handler)});
}
void HttpServer::del(const std::string& pattern, HttpHandler handler) {
  impl_->routes.push_back(Route{"DELETE", std::regex(pattern), std::move(handler)});
}

core::Status HttpServer::start() {
  Impl& m = *impl_;
  if (m.daemon != nullptr) {
    return core::fail(core::Domain::kK8s, core::Code::kFailedPrecondition,
                      "the server is already started");
  }
  const HttpServerOptions& o = m.options;
  auto cannot_listen = [&o] {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "cannot listen on {}:{} (address in use, not an address of this host, or "
                       "no permission); choose another --listen address",
                       o.host, o.port);
  };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (getaddrinfo(o.host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    return cannot_listen();
  }
  sockaddr_storage address{};
  std::memcpy(&address, found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
  const bool v6 = address.ss_family == AF_INET6;
  const auto port = htons(static_cast<std::uint16_t>(o.port));
  if (v6) {
    reinterpret_cast<sockaddr_in6*>(&address)->sin6_port = port;
  } else {
    reinterpret_cast<sockaddr_in*>(&address)->sin_port = port;
  }

  // poll(), not epoll: libmicrohttpd 0.9.75's MHD_quiesce_daemon races a pool thread that
  // takes the listening socket out of its epoll set and aborts the process when it loses.
  unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
  if (v6) flags |= MHD_USE_IPv6;
  // The options that depend on the configuration; the rest are passed below.
  std::vector<MHD_OptionItem> extra;
  if (m.threads > 1) extra.push_back({MHD_OPTION_THREAD_POOL_SIZE, m.threads, nullptr});
  if (m.certificate) {
    flags |= MHD_USE_TLS;
    extra.push_back(
        {MHD_OPTION_HTTPS_CERT_CALLBACK, 0, reinterpret_cast<void*>(&Impl::on_certificate)});
    if (!m.client_ca_pem.empty()) {
      extra.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, m.client_ca_pem.data()});
    }
  }
  extra.push_back({MHD_OPTION_END, 0, nullptr});
  const auto seconds = [](std::chrono::milliseconds d) {
    return static_cast<unsigned>((d.count() + 999) / 1000);
  };
  {
    std::lock_guard lock(m.mu);
    m.stopping = false;
  }
  m.daemon = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &Impl::on_access, &m,
      // The logger first: the options after it report through it.
      MHD_OPTION_EXTERNAL_LOGGER, &log_mhd, nullptr, MHD_OPTION_SOCK_ADDR,
      reinterpret_cast<sockaddr*>(&address), MHD_OPTION_CONNECTION_LIMIT,
      static_cast<unsigned>(o.max_connections), MHD_OPTION_CONNECTION_TIMEOUT,
      seconds(std::max(o.read_timeout, o.write_timeout)), MHD_OPTION_CONNECTION_MEMORY_LIMIT,
      kConnectionMemory, MHD_OPTION_NOTIFY_COMPLETED, &Impl::on_completed, &m,
      MHD_OPTION_NOTIFY_CONNECTION, &Impl::on_connection, &m, MHD_OPTION_URI_LOG_CALLBACK,
      &Impl::on_request_line, &m, MHD_OPTION_ARRAY, extra.data(), MHD_OPTION_END);
  if (m.daemon == nullptr) return cannot_listen();
  const MHD_DaemonInfo* bound = MHD_get_daemon_info(m.daemon, MHD_DAEMON_INFO_BIND_PORT);
  m.port = bound != nullptr ? bound->port : o.port;
  m.watchdog = std::thread([&m] { m.watch(); });
  return {};
}

void HttpServer::stop() {
  if (!impl_ || impl_->daemon == nullptr) return;
  Impl& m = *impl_;
  const MHD_socket listener = MHD_quiesce_daemon(m.daemon);
  {
    std::unique_lock lock(m.mu);
    m.drained.wait_for(lock, m.options.write_timeout, [&m] { return m.in_flight == 0; });
    m.stopping = true;
  }
  m.wake.notify_all();
  m.watchdog.join();
  MHD_stop_daemon(m.daemon);
  if (listener != MHD_INVALID_SOCKET) ::close(listener);
  m.daemon = nullptr;
}

bool HttpServer::running() const {
  return impl_->daemon != nullptr;
}
int HttpServer::port() const {
  return impl_->port;
}
bool HttpServer::tls() const {
  return impl_->certificate != nullptr;
}
const HttpServerOptions& HttpServer::options() const {
  return impl_->options;
}

}  // namespace tessera::k8s
