#include "tessera/k8s/agent_push.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "tessera/hw/topology/json.hpp"

namespace tessera::k8s {

namespace {

// httplib's error names with what they mean for a push.
std::string describe(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "cannot connect (is the extender running and listening there?)";
    case httplib::Error::ConnectionTimeout: return "timed out connecting";
    case httplib::Error::Read:
      return "no answer (the connection failed or timed out while reading)";
    case httplib::Error::Write: return "the connection failed while sending";
    case httplib::Error::SSLConnection: return "the TLS handshake failed";
    case httplib::Error::SSLServerVerification:
      return "the extender's certificate did not verify (--push-ca names the CA to trust)";
    default: return httplib::to_string(e);
  }
}

}  // namespace

struct TopologyPusher::Impl {
  PushOptions options;
  std::string origin;  // scheme://host[:port]
  std::string prefix;  // path before /tessera/v1/..., without a trailing '/'
  std::unique_ptr<httplib::Client> client;
};

TopologyPusher::TopologyPusher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TopologyPusher::~TopologyPusher() = default;

core::Result<std::unique_ptr<TopologyPusher>> TopologyPusher::create(PushOptions options) {
  static const std::regex kUrl(R"(^(https?://[^/?#\s]+)(/[^?#\s]*)?$)");
  std::smatch m;
  if (!std::regex_match(options.url, m, kUrl)) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "push URL '{}' is not http(s)://HOST[:PORT][/PREFIX] (the extender's "
                       "address, e.g. http://127.0.0.1:8888)",
                       options.url);
  }
  if (options.timeout.count() <= 0) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "the push timeout must be positive");
  }
  auto impl = std::make_unique<Impl>();
  impl->origin = m[1].str();
  impl->prefix = m[2].str();
  while (!impl->prefix.empty() && impl->prefix.back() == '/') impl->prefix.pop_back();
  const bool client_cert = !options.cert_file.empty() || !options.key_file.empty();
  if (client_cert && (options.cert_file.empty() || options.key_file.empty() ||
                      !impl->origin.starts_with("https://"))) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "a client certificate needs both its certificate and key and an https push "
                       "URL (got cert '{}', key '{}', URL '{}')",
                       options.cert_file, options.key_file, options.url);
  }
  impl->client = client_cert ? std::make_unique<httplib::Client>(impl->origin, options.cert_file,
                                                                 options.key_file)
                             : std::make_unique<httplib::Client>(impl->origin);
  if (!impl->client->is_valid()) {
    if (client_cert) {
      return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                         "cannot load the client certificate '{}' and key '{}' (missing, "
                         "unreadable, not PEM, or the key does not match)",
                         options.cert_file, options.key_file);
    }
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "push URL '{}': cannot make a client for {}", options.url, impl->origin);
  }
  auto& c = *impl->client;
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(options.timeout);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(options.timeout - s);
  c.set_connection_timeout(s.count(), us.count());
  c.set_read_timeout(s.count(), us.count());
  c.set_write_timeout(s.count(), us.count());
  if (!options.token.empty()) c.set_bearer_token_auth(options.token);
  c.set_keep_alive(true);
  if (impl->origin.starts_with("https://")) {
    c.enable_server_certificate_verification(true);
    if (!options.ca_file.empty()) c.set_ca_cert_path(options.ca_file.c_str());
  }
  impl->options = std::move(options);
  return std::unique_ptr<TopologyPusher>(new TopologyPusher(std::move(impl)));
}

std::string TopologyPusher::target(const std::string& node) const {
  return fmt::format("{}{}/tessera/v1/nodes/{}/topology", impl_->origin, impl_->prefix, node);
}

core::Status TopologyPusher::push(const std::string& node, const hw::HostTopology& topology) {
  const std::string path = fmt::format("{}/tessera/v1/nodes/{}/topology", impl_->prefix, node);
  const std::string body =
      nlohmann::json{{"node", node}, {"topology", hw::to_json(topology)}}.dump();
  auto res = impl_->client->Put(path, body, "application/json");
  if (!res) {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "pushing the topology to {}: {}", target(node), describe(res.error()));
  }
  if (res->status < 200 || res->status >= 300) {
    constexpr std::size_t kShown = 300;
    std::string reason = res->body.substr(0, kShown);
    if (res->body.size() > kShown) reason += "...";
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "pushing the topology to {}: HTTP {}: {}", target(node), res->status,
                       reason);
  }
  return {};
}

}  // namespace tessera::k8s
