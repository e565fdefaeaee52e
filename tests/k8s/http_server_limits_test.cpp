// HttpServer under abusive clients: a body over the limit is never buffered past it, slow
// and idle connections do not stop other clients being served, the connection cap refuses past
// its limit and recovers, and the whole-request deadline cuts a client that trickles forever.
// All traffic is on 127.0.0.1; every loop is bounded in count and time.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tessera/k8s/http_server.hpp"

namespace tessera::k8s {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A TCP connection that sends exactly what the test says, for clients httplib will not imitate.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }
  bool send(std::string_view bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // What the server sent within `wait` (up to one read); empty when nothing came or it closed.
  std::string receive(std::chrono::milliseconds wait) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return {};
    char buffer[4096];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n <= 0) {
      closed_ = true;
      return {};
    }
    return std::string(buffer, static_cast<std::size_t>(n));
  }
  // Whether the server has closed the connection, looking for up to `wait`.
  bool closed_by_server(std::chrono::milliseconds wait) {
    const auto until = std::chrono::steady_clock::now() + wait;
    while (!closed_ && std::chrono::steady_clock::now() < until) receive(10ms);
    return closed_;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
};

constexpr std::string_view kGetHello = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

std::unique_ptr<HttpServer> started(HttpServerOptions o,
                                    std::atomic<std::size_t>* largest = nullptr,
                                    std::atomic<int>* calls = nullptr) {
  auto s = HttpServer::create(std::move(o));
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
  if (!s) return nullptr;
  auto server = std::move(*s);
  server->get("/hello", [](const HttpRequest&) { return json_response(json{{"hello", 1}}); });
  server->post("/size", [largest, calls](const HttpRequest& r) {
    if (largest != nullptr) {
      std::size_t seen = largest->load();
      while (r.body.size() > seen && !largest->compare_exchange_weak(seen, r.body.size())) {
      }
    }
    if (calls != nullptr) ++*calls;
    return json_response(json{{"size", r.body.size()}});
  });
  EXPECT_TRUE(server->start().has_value());
  return server;
}

// A chunked body in `chunks` pieces of `chunk` bytes: no Content-Length for the server to check.
httplib::Result post_chunked(httplib::Client& c, std::size_t chunks, std::size_t chunk) {
  std::size_t sent = 0;
  return c.Post(
      "/size",
      [&sent, chunks, chunk](std::size_t, httplib::DataSink& sink) {
        if (sent == chunks) {
          sink.done();
          return true;
        }
        const std::string piece(chunk, 'x');
        ++sent;
        return sink.write(piece.data(), piece.size());
      },
      "application/octet-stream");
}

TEST(HttpServerLimits, ChunkedBodyOverTheLimitIsNeverBuffered) {
  HttpServerOptions o;
  o.max_body_bytes = 4096;
  std::atomic<std::size_t> largest{0};
  std::atomic<int> calls{0};
  auto s = started(o, &largest, &calls);
  ASSERT_TRUE(s);
  httplib::Client c("127.0.0.1", s->port());
  c.set_read_timeout(5, 0);
  c.set_write_timeout(5, 0);

  // 4 MiB in 64 KiB chunks: read and thrown away, refused with a reason, and no handler sees it.
  auto big = post_chunked(c, 64, 64 << 10);
  ASSERT_TRUE(big) << httplib::to_string(big.error());
  EXPECT_EQ(big->status, 413);
  EXPECT_NE(json::parse(big->body)["error"].get<std::string>().find("4096"), std::string::npos);
  EXPECT_EQ(calls.load(), 0);
  EXPECT_LE(largest.load(), o.max_body_bytes);

  // Chunked bodies up to the limit are served whole.
  auto fits = post_chunked(c, 4, 1024);
  ASSERT_TRUE(fits) << httplib::to_string(fits.error());
  EXPECT_EQ(fits->status, 200);
  EXPECT_EQ(json::parse(fits->body)["size"], 4096);
  EXPECT_EQ(calls.load(), 1);

  auto over = post_chunked(c, 5, 1024);
  ASSERT_TRUE(over);
  EXPECT_EQ(over->status, 413);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(largest.load(), 4096u);
  auto ok = c.Get("/hello");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

// A client that waits for "100 Continue" gets the 413 instead, before it sends the body.
TEST(HttpServerLimits, OversizeBodyIsRefusedBeforeContinue) {
  HttpServerOptions o;
  o.max_body_bytes = 4096;
  std::atomic<int> calls{0};
  auto s = started(o, nullptr, &calls);
  ASSERT_TRUE(s);
  RawConnection c(s->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(
      c.send("POST /size HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000000\r\n"
             "Expect: 100-continue\r\n\r\n"));
  const std::string answer = c.receive(5s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  EXPECT_EQ(calls.load(), 0);
}

TEST(HttpServerLimits, SlowAndIdleClientsDoNotStopOthers) {
  HttpServerOptions o;
  o.threads = 2;
  o.read_timeout = 30s;  // only the abusers' own pace decides how long they stay
  o.request_timeout = 60s;
  auto s = started(o);
  ASSERT_TRUE(s);

  // 64 idle keep-alive connections, each after one answered request.
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 64; ++i) {
    auto c = std::make_unique<RawConnection>(s->port());
    ASSERT_TRUE(c->connected());
    ASSERT_TRUE(c->send(kGetHello));
    ASSERT_NE(c->receive(5s).find("200"), std::string::npos) << "idle connection " << i;
    idle.push_back(std::move(c));
  }
  // 16 slow-loris clients: headers a byte at a time, never finished.
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 16; ++i) {
    auto c = std::make_unique<RawConnection>(s->port());
    ASSERT_TRUE(c->connected());
    ASSERT_TRUE(c->send("GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
    slow.push_back(std::move(c));
  }
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    for (int round = 0; round < 300 && !done; ++round) {  // 30 s at most
      for (auto& c : slow) c->send("a");
      std::this_thread::sleep_for(100ms);
    }
  });

  httplib::Client normal("127.0.0.1", s->port());
  normal.set_connection_timeout(5, 0);
  normal.set_read_timeout(5, 0);
  int answered = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = normal.Get("/hello");
    if (r && r->status == 200) ++answered;
  }
  done = true;
  trickle.join();
  EXPECT_EQ(answered, 20);
  // The abusers are still connected: serving the others did not depend on cutting them off.
  EXPECT_FALSE(slow.front()->closed_by_server(10ms));
  EXPECT_FALSE(idle.front()->closed_by_server(10ms));
}

TEST(HttpServerLimits, ConnectionCapRefusesPastTheLimitAndRecovers) {
  HttpServerOptions o;
  o.threads = 1;
  o.max_connections = 4;
  o.read_timeout = 30s;
  o.request_timeout = 60s;
  auto s = started(o);
  ASSERT_TRUE(s);

  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 4; ++i) {
    auto c = std::make_unique<RawConnection>(s->port());
    ASSERT_TRUE(c->connected());
    ASSERT_TRUE(c->send(kGetHello));
    ASSERT_NE(c->receive(5s).find("200"), std::string::npos) << "held connection " << i;
    held.push_back(std::move(c));
  }
  {
    httplib::Client fifth("127.0.0.1", s->port());
    fifth.set_connection_timeout(1, 0);
    fifth.set_read_timeout(1, 0);
    auto r = fifth.Get("/hello");
    EXPECT_FALSE(r) << "a fifth connection was served past a cap of 4";
  }
  held.clear();
  httplib::Client later("127.0.0.1", s->port());
  later.set_connection_timeout(1, 0);
  later.set_read_timeout(1, 0);
  bool served = false;
  for (int i = 0; i < 50 && !served; ++i) {  // 50 tries, at most a second or two each
    auto r = later.Get("/hello");
    served = r && r->status == 200;
    if (!served) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(served);
}

TEST(HttpServerLimits, RequestDeadlineCutsATricklingClient) {
  HttpServerOptions o;
  o.request_timeout = 1s;
  o.read_timeout = 30s;  // a byte every 50 ms never trips the idle timeout
  auto s = started(o);
  ASSERT_TRUE(s);

  RawConnection body(s->port());
  ASSERT_TRUE(body.connected());
  ASSERT_TRUE(
      body.send("POST /size HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n"));
  RawConnection headers(s->port());
  ASSERT_TRUE(headers.connected());
  ASSERT_TRUE(headers.send("GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
  RawConnection request_line(s->port());
  ASSERT_TRUE(request_line.connected());
  ASSERT_TRUE(request_line.send("GET /"));

  bool body_cut = false, headers_cut = false, line_cut = false;
  for (int i = 0; i < 400 && !(body_cut && headers_cut && line_cut); ++i) {  // 20 s at most
    body_cut = body_cut || !body.send("x") || body.closed_by_server(0ms);
    headers_cut = headers_cut || !headers.send("a") || headers.closed_by_server(0ms);
    line_cut = line_cut || !request_line.send("a") || request_line.closed_by_server(0ms);
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(body_cut) << "a body trickled for 20 s against a 1 s deadline";
  EXPECT_TRUE(headers_cut) << "headers trickled for 20 s against a 1 s deadline";
  EXPECT_TRUE(line_cut) << "a request line trickled for 20 s against a 1 s deadline";

  httplib::Client other("127.0.0.1", s->port());
  auto r = other.Get("/hello");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// The deadline is per request: a keep-alive connection whose requests are each quick outlives it.
TEST(HttpServerLimits, RequestDeadlineSparesQuickKeepAliveRequests) {
  HttpServerOptions o;
  o.request_timeout = 2s;
  o.read_timeout = 30s;
  auto s = started(o);
  ASSERT_TRUE(s);
  RawConnection quick(s->port());
  ASSERT_TRUE(quick.connected());
  for (int i = 0; i < 6; ++i) {  // 3 s or more on one connection
    ASSERT_TRUE(quick.send(kGetHello)) << "request " << i;
    EXPECT_NE(quick.receive(5s).find("200"), std::string::npos) << "request " << i;
    std::this_thread::sleep_for(500ms);
  }
}

}  // namespace
}  // namespace tessera::k8s
