// HttpServer: ephemeral ports, routes with capture groups, headers and query parameters, JSON error
// bodies on every error, handler exceptions as 500s, the body limit, TLS, and start/stop. Abusive
// clients: http_server_limits_test.cpp.

#include "tessera/k8s/http_server.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "support/self_signed_cert.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;

std::unique_ptr<HttpServer> started(HttpServerOptions o = {}) {
  auto s = HttpServer::create(std::move(o));
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
  if (!s) return nullptr;
  auto server = std::move(*s);
  server->get("/hello", [](const HttpRequest&) { return json_response(json{{"hello", 1}}); });
  server->post("/echo/([a-z]+)", [](const HttpRequest& r) {
    return json_response(json{{"name", r.matches.at(1)}, {"body", r.body}});
  });
  server->get("/whoami", [](const HttpRequest& r) {
    return json_response(
        json{{"name", r.header("x-name")}, {"q", r.param("q")}, {"from", r.remote_addr}});
  });
  server->get("/throws", [](const HttpRequest&) -> HttpResponse {
    throw std::runtime_error("boom in handler");
  });
  EXPECT_TRUE(server->start().has_value());
  return server;
}

json body_of(const httplib::Result& r) {
  return json::parse(r->body, nullptr, false);
}

TEST(HttpServer, ServesOnAnEphemeralLoopbackPort) {
  auto s = started();
  ASSERT_TRUE(s);
  EXPECT_GT(s->port(), 0);
  EXPECT_EQ(s->options().host, "127.0.0.1");
  httplib::Client c("127.0.0.1", s->port());
  auto r = c.Get("/hello");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(body_of(r)["hello"], 1);
  auto e = c.Post("/echo/abc", "payload", "text/plain");
  ASSERT_TRUE(e);
  EXPECT_EQ(body_of(e)["name"], "abc");
  EXPECT_EQ(body_of(e)["body"], "payload");
}

TEST(HttpServer, HandlersSeeHeadersAndQueryParameters) {
  auto s = started();
  ASSERT_TRUE(s);
  httplib::Client c("127.0.0.1", s->port());
  auto r = c.Get("/whoami?q=a%20b&other=1", httplib::Headers{{"X-Name", "pod-1"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(body_of(r)["name"], "pod-1");
  EXPECT_EQ(body_of(r)["q"], "a b");
  EXPECT_EQ(body_of(r)["from"], "127.0.0.1");
}

TEST(HttpServer, RoutesAnswerTheirOwnMethods) {
  auto s = started();
  ASSERT_TRUE(s);
  httplib::Client c("127.0.0.1", s->port());
  auto wrong = c.Post("/hello", "x", "text/plain");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 405);
  EXPECT_NE(body_of(wrong)["error"].get<std::string>().find("POST"), std::string::npos);
  auto head = c.Head("/hello");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
  // The pattern must match the whole path.
  auto longer = c.Post("/echo/abc/def", "x", "text/plain");
  ASSERT_TRUE(longer);
  EXPECT_EQ(longer->status, 404);
}

TEST(HttpServer, EveryErrorHasAJsonReason) {
  auto s = started();
  ASSERT_TRUE(s);
  httplib::Client c("127.0.0.1", s->port());
  auto nf = c.Get("/nowhere");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  EXPECT_EQ(body_of(nf)["status"], 404);
  EXPECT_NE(body_of(nf)["error"].get<std::string>().find("/nowhere"), std::string::npos);

  auto ex = c.Get("/throws");
  ASSERT_TRUE(ex);
  EXPECT_EQ(ex->status, 500);
  EXPECT_NE(body_of(ex)["error"].get<std::string>().find("boom in handler"), std::string::npos);
  // ... and the server still serves.
  auto ok = c.Get("/hello");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(HttpServer, RefusesBodiesOverTheLimit) {
  HttpServerOptions o;
  o.max_body_bytes = 1024;
  auto s = started(o);
  ASSERT_TRUE(s);
  httplib::Client c("127.0.0.1", s->port());
  auto big = c.Post("/echo/x", std::string(4096, 'a'), "text/plain");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_TRUE(body_of(big).contains("error"));
  auto small = c.Post("/echo/x", std::string(512, 'a'), "text/plain");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 200);
}

TEST(HttpServer, OptionsAreChecked) {
  HttpServerOptions only_cert;
  only_cert.cert_file = "/nonexistent/cert.pem";
  auto a = HttpServer::create(only_cert);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message().find("--key"), std::string::npos);

  HttpServerOptions missing;
  missing.cert_file = "/nonexistent/cert.pem";
  missing.key_file = "/nonexistent/key.pem";
  auto b = HttpServer::create(missing);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message().find("/nonexistent/cert.pem"), std::string::npos);

  HttpServerOptions port;
  port.port = 70000;
  EXPECT_FALSE(HttpServer::create(port));

  HttpServerOptions deadline;
  deadline.request_timeout = std::chrono::milliseconds(0);
  EXPECT_FALSE(HttpServer::create(deadline));

  HttpServerOptions cap;
  cap.threads = 4;
  cap.max_connections = 2;
  auto c = HttpServer::create(cap);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("4 server threads"), std::string::npos);
}

TEST(HttpServer, PortInUseIsAnError) {
  auto s = started();
  ASSERT_TRUE(s);
  HttpServerOptions o;
  o.port = s->port();
  auto second = HttpServer::create(o);
  ASSERT_TRUE(second);
  auto st = (*second)->start();
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find(std::to_string(s->port())), std::string::npos);
}

TEST(HttpServer, StopsRightAfterStartAndIsIdempotent) {
  for (int i = 0; i < 5; ++i) {
    auto s = started();
    ASSERT_TRUE(s);
    s->stop();
    EXPECT_FALSE(s->running());
    s->stop();
  }
}

// TLS with a throwaway self-signed certificate made by the openssl command line.
TEST(HttpServer, ServesHttpsWithACertificate) {
  const auto tls = test::make_self_signed_cert("server");
  if (!tls) GTEST_SKIP() << test::kNoOpenssl;
  const std::string& cert = tls->cert;
  const std::string& key = tls->key;
  HttpServerOptions o;
  o.cert_file = cert;
  o.key_file = key;
  auto s = started(o);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->tls());
  httplib::SSLClient c("127.0.0.1", s->port());
  c.enable_server_certificate_verification(false);
  auto r = c.Get("/hello");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // Plain HTTP to the TLS port gets no answer, and the server keeps serving TLS.
  httplib::Client plain("127.0.0.1", s->port());
  plain.set_read_timeout(1, 0);
  auto p = plain.Get("/hello");
  EXPECT_TRUE(!p || p->status != 200);
  auto again = c.Get("/hello");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  std::filesystem::remove_all(tls->dir);
}

// A certificate rotated in place (cert-manager, the kubelet) is served from the next handshake
// on, without a restart; a rotation that does not load keeps the certificate in use.
TEST(HttpServer, ServesARotatedCertificateWithoutARestart) {
  const auto a = test::make_self_signed_cert("rotate_a");
  const auto b = test::make_self_signed_cert("rotate_b");
  if (!a || !b) GTEST_SKIP() << test::kNoOpenssl;
  const auto served = a->dir / "served";
  std::filesystem::create_directories(served);
  const std::string cert = (served / "cert.pem").string();
  const std::string key = (served / "key.pem").string();
  const auto install = [&](const test::TlsFiles& f) {
    std::filesystem::copy_file(f.cert, cert, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(f.key, key, std::filesystem::copy_options::overwrite_existing);
  };
  install(*a);
  HttpServerOptions o;
  o.cert_file = cert;
  o.key_file = key;
  auto s = started(o);
  ASSERT_TRUE(s);
  // A client that trusts only `trusted`: whether the server's certificate is that one.
  const auto serves = [&](const test::TlsFiles& trusted) {
    httplib::SSLClient c("127.0.0.1", s->port());
    c.set_ca_cert_path(trusted.cert.c_str());
    c.enable_server_certificate_verification(true);
    auto r = c.Get("/hello");
    return r && r->status == 200;
  };
  EXPECT_TRUE(serves(*a));
  EXPECT_FALSE(serves(*b));
  install(*b);
  std::this_thread::sleep_for(
      std::chrono::milliseconds(1100));  // files are looked at once a second
  EXPECT_TRUE(serves(*b));
  EXPECT_FALSE(serves(*a));
  std::ofstream(cert) << "not a certificate\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_TRUE(serves(*b)) << "the broken rotation is not taken";
  s->stop();
  std::filesystem::remove_all(a->dir);
  std::filesystem::remove_all(b->dir);
}

// Mutual TLS: only a client whose certificate the client CA signed is served; one without a
// certificate, or with another's, gets 403, and the server goes on serving.
TEST(HttpServer, WithAClientCaServesOnlyClientsWithItsCertificates) {
  const auto tls = test::make_self_signed_cert("mtls_server");
  const auto clients = test::make_client_certs("mtls_server");
  if (!tls || !clients) GTEST_SKIP() << test::kNoOpenssl;
  HttpServerOptions o;
  o.cert_file = tls->cert;
  o.key_file = tls->key;
  o.client_ca_file = clients->ca;
  auto s = started(o);
  ASSERT_TRUE(s);
  const std::string origin = "https://127.0.0.1:" + std::to_string(s->port());
  auto get = [&](const std::string& cert, const std::string& key) {
    auto c = cert.empty() ? std::make_unique<httplib::Client>(origin)
                          : std::make_unique<httplib::Client>(origin, cert, key);
    c->enable_server_certificate_verification(false);
    return c->Get("/hello");
  };
  auto trusted = get(clients->cert, clients->key);
  ASSERT_TRUE(trusted) << httplib::to_string(trusted.error());
  EXPECT_EQ(trusted->status, 200);
  for (const auto& [cert, key] : {std::pair{std::string(), std::string()},
                                  std::pair{clients->stranger_cert, clients->stranger_key}}) {
    auto refused = get(cert, key);
    ASSERT_TRUE(refused) << httplib::to_string(refused.error());
    EXPECT_EQ(refused->status, 403) << (cert.empty() ? "no certificate" : "a stranger's");
    EXPECT_NE(refused->body.find("client certificate"), std::string::npos);
  }
  auto again = get(clients->cert, clients->key);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  std::filesystem::remove_all(tls->dir);
  std::filesystem::remove_all(clients->dir);
}

TEST(HttpServer, AClientCaNeedsTlsAndAReadableBundle) {
  const auto tls = test::make_self_signed_cert("mtls_errors");
  if (!tls) GTEST_SKIP() << test::kNoOpenssl;
  HttpServerOptions plain;
  plain.client_ca_file = tls->cert;
  auto no_tls = HttpServer::create(plain);
  ASSERT_FALSE(no_tls);
  EXPECT_NE(no_tls.error().message().find("needs the server's own --cert"), std::string::npos);
  HttpServerOptions o;
  o.cert_file = tls->cert;
  o.key_file = tls->key;
  o.client_ca_file = tls->key;  // a key, not a certificate
  auto bad = HttpServer::create(o);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("cannot load the client CA bundle"), std::string::npos);
  std::filesystem::remove_all(tls->dir);
}

}  // namespace
}  // namespace tessera::k8s
