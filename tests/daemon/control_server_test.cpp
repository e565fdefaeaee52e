#include "tessera/daemon/control_server.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tessera/daemon/control_client.hpp"
#include "tessera/daemon/settings_store.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::daemon {
namespace {

using nlohmann::json;

ServerOptions at(const std::string& path) {
  ServerOptions o;
  o.socket_path = path;
  return o;
}

// A daemon on a fresh socket, served by a thread for the test's length.
class Daemon {
 public:
  explicit Daemon(const std::function<void(ServerOptions&)>& configure = {}) {
    static int counter = 0;
    path_ = ::testing::TempDir() + "tesserad_" + std::to_string(getpid()) + "_" +
            std::to_string(++counter) + ".sock";
    TenantTable table({*gpu::PartitionGrid::of(*hw::find_gpu("h100"))}, *make_node_policy("cogpu"));
    ServerOptions options = at(path_);
    if (configure) configure(options);
    auto server = ControlServer::start(options, std::move(table));
    EXPECT_TRUE(server.has_value()) << server.error().message();
    server_ = std::move(*server);
    thread_ = std::thread([this] { status_ = server_->run([this] { return stop_.load(); }); });
  }
  ~Daemon() {
    stop_ = true;
    thread_.join();
    EXPECT_TRUE(status_.has_value());
  }
  const std::string& path() const { return path_; }
  json list() {
    auto r = send_request(path_, {{"op", "list"}});
    EXPECT_TRUE(r.has_value()) << r.error().message();
    return r.value_or(json());
  }

 private:
  std::string path_;
  std::unique_ptr<ControlServer> server_;
  std::atomic<bool> stop_{false};
  core::Status status_;
  std::thread thread_;
};

// A raw client connection.
class Connection {
 public:
  explicit Connection(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    EXPECT_EQ(connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
    timeval timeout{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~Connection() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void send(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // The next reply line, and any fd that came with it; "" at end of stream.
  std::string reply(int* fd = nullptr) {
    while (buffer_.find('\n') == std::string::npos) {
      char data[4096];
      iovec iov{data, sizeof data};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      const ssize_t n = recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
      if (n <= 0) return "";
      cmsghdr* cm = CMSG_FIRSTHDR(&msg);
      if (cm != nullptr && cm->cmsg_type == SCM_RIGHTS && fd != nullptr) {
        std::memcpy(fd, CMSG_DATA(cm), sizeof(int));
      }
      buffer_.append(data, static_cast<std::size_t>(n));
    }
    const std::size_t nl = buffer_.find('\n');
    std::string line = buffer_.substr(0, nl);
    buffer_.erase(0, nl + 1);
    return line;
  }

 private:
  int fd_ = -1;
  std::string buffer_;
};

// Waits (up to 5 s) until `done()`.
template <class F>
bool eventually(F&& done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(ControlServer, ARegistrationHandsOverThePageAndLastsAsLongAsTheConnection) {
  Daemon d;
  Connection c(d.path());
  c.send(R"({"op":"register","tenant":"chat","class":"latency-critical","priority":3})"
         "\n");
  int page_fd = -1;
  const json reply = json::parse(c.reply(&page_fd));
  EXPECT_EQ(reply["ok"], true) << reply.dump();
  ASSERT_GE(page_fd, 0) << "the page's fd comes with the reply";
  void* p = mmap(nullptr, daemon_abi::kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* page = static_cast<daemon_abi::AssignmentPage*>(p);
  EXPECT_EQ(page->magic, daemon_abi::kPageMagic);
  EXPECT_EQ(page->version, daemon_abi::kPageVersion);
  EXPECT_EQ(ftruncate(page_fd, 0), -1) << "the page is sealed against shrinking";
  ::close(page_fd);

  // The tenant launches (as its interposer would): the daemon gives it the GPU.
  page->launches.fetch_add(1);
  EXPECT_TRUE(eventually([&] { return daemon_abi::unpack(page->assignment.load()).sms == 128u; }));
  const json listed = d.list();
  ASSERT_EQ(listed["tenants"].size(), 1u);
  EXPECT_EQ(listed["tenants"][0]["tenant"], "chat");
  EXPECT_EQ(listed["tenants"][0]["pid"], getpid()) << "taken from the socket's credentials";
  EXPECT_EQ(listed["tenants"][0]["priority"], 3);

  c.close();  // the process exits
  EXPECT_TRUE(eventually([&] { return d.list()["tenants"].empty(); }));
  munmap(p, daemon_abi::kPageBytes);
}

// What `set` changed survives a restart of the daemon (its settings file): the tenant registers
// again with the next daemon and gets its priority and memory limit back; a tenant that left is
// forgotten.
TEST(ControlServer, SetSettingsComeBackAfterARestartAndLeaveWithTheTenant) {
  const std::string settings =
      ::testing::TempDir() + "tesserad_settings_" + std::to_string(getpid()) + ".json";
  std::filesystem::remove(settings);
  const auto with_settings = [&](ServerOptions& o) { o.settings_path = settings; };
  const auto register_chat = [](Connection& c) {
    c.send(R"({"op":"register","tenant":"chat","class":"latency-critical","priority":3})"
           "\n");
    int page_fd = -1;
    const json reply = json::parse(c.reply(&page_fd));
    EXPECT_GE(page_fd, 0);
    void* p = mmap(nullptr, daemon_abi::kPageBytes, PROT_READ, MAP_SHARED, page_fd, 0);
    ::close(page_fd);
    return std::pair{reply, p};
  };
  std::unique_ptr<Connection> process;  // outlives the first daemon, as a process would
  {
    Daemon first(with_settings);
    process = std::make_unique<Connection>(first.path());
    const auto [reply, page] = register_chat(*process);
    ASSERT_NE(page, MAP_FAILED);
    munmap(page, daemon_abi::kPageBytes);
    const auto set = send_request(
        first.path(),
        {{"op", "set"}, {"tenant", "chat"}, {"priority", 9}, {"memory_limit_bytes", 1 << 30}});
    ASSERT_TRUE(set) << set.error().message();
  }  // the daemon stops; the process lives on and registers again with the next one
  process.reset();
  Daemon second(with_settings);
  Connection again(second.path());
  const auto [reply, page] = register_chat(again);
  EXPECT_EQ(reply["priority"], 9) << reply.dump();
  ASSERT_NE(page, MAP_FAILED);
  EXPECT_EQ(static_cast<const daemon_abi::AssignmentPage*>(page)->memory_limit_assigned.load(),
            1u << 30);
  munmap(page, daemon_abi::kPageBytes);
  EXPECT_EQ(second.list()["tenants"][0]["memory_limit_assigned"], 1 << 30);
  again.close();  // the process exits: its settings go with it
  EXPECT_TRUE(eventually([&] { return second.list()["tenants"].empty(); }));
  std::string warning;
  EXPECT_FALSE(SettingsStore::open(settings, warning).find("chat"));
}

// Tenants that come and go leave nothing behind in the daemon: every page's fd and mapping is
// given back when its connection closes.
TEST(ControlServer, TenantsThatComeAndGoLeakNoFileDescriptors) {
  Daemon d;
  auto open_fds = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                         std::filesystem::directory_iterator());
  };
  d.list();  // the client path warmed up
  // At most as many as before: the daemon may not yet have closed that warm-up connection.
  const auto before = open_fds();
  for (int i = 0; i < 50; ++i) {
    Connection c(d.path());
    c.send(R"({"op":"register","tenant":"t)" + std::to_string(i) +
           R"("})"
           "\n");
    int page_fd = -1;
    ASSERT_EQ(json::parse(c.reply(&page_fd))["ok"], true);
    ::close(page_fd);
  }
  EXPECT_TRUE(eventually([&] { return d.list()["tenants"].empty(); }));
  EXPECT_TRUE(eventually([&] { return open_fds() <= before; }))
      << open_fds() << " open now, " << before << " before";
}

TEST(ControlServer, AnswersEveryBadRequestAndKeepsTheConnection) {
  Daemon d;
  Connection c(d.path());
  c.send("garbage\n{\"op\":\"fly\"}\n\n{\"op\":\"set\",\"tenant\":\"x\",\"priority\":1}\n");
  EXPECT_NE(c.reply().find("not JSON"), std::string::npos);
  EXPECT_NE(c.reply().find("unknown op 'fly'"), std::string::npos);
  EXPECT_NE(c.reply().find("no tenant named 'x'"), std::string::npos);
  c.send("{\"op\":\"list\"}\n");
  EXPECT_EQ(json::parse(c.reply())["ok"], true) << "the connection still serves";
}

TEST(ControlServer, OneTenantPerConnectionAndNoneWhileDraining) {
  Daemon d;
  Connection a(d.path());
  a.send(R"({"op":"register","tenant":"a"})"
         "\n");
  int fd = -1;
  EXPECT_EQ(json::parse(a.reply(&fd))["ok"], true);
  if (fd >= 0) ::close(fd);
  a.send(R"({"op":"register","tenant":"b"})"
         "\n");
  EXPECT_NE(a.reply().find("already registered tenant 'a'"), std::string::npos);

  ASSERT_TRUE(send_request(d.path(), {{"op", "drain"}}).has_value());
  Connection b(d.path());
  b.send(R"({"op":"register","tenant":"b"})"
         "\n");
  EXPECT_NE(b.reply().find("draining"), std::string::npos);
  Connection again(d.path());
  again.send(R"({"op":"register","tenant":"a"})"
             "\n");
  EXPECT_NE(again.reply().find("draining"), std::string::npos);
  ASSERT_TRUE(send_request(d.path(), {{"op", "undrain"}}).has_value());
  again.send(R"({"op":"register","tenant":"a"})"
             "\n");
  EXPECT_NE(again.reply().find("'a' is already registered"), std::string::npos);
}

TEST(ControlServer, ALineWithoutEndIsCutOffAndTheDaemonKeepsServing) {
  Daemon d;
  Connection flood(d.path());
  Connection silent(d.path());  // connects and never sends: must not hold anyone up
  flood.send(std::string(kMaxRequestBytes + 10, 'x'));
  EXPECT_NE(flood.reply().find("longer than 65536 bytes"), std::string::npos);
  EXPECT_EQ(flood.reply(), "") << "then the connection is closed";
  EXPECT_EQ(d.list()["ok"], true);
}

TEST(ControlServer, AClientThatNeverReadsItsRepliesDoesNotStopTheOthers) {
  Daemon d;
  std::string many;
  for (int i = 0; i < 20000; ++i) many += "{\"op\":\"list\"}\n";
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", d.path().c_str());
  ASSERT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  timeval timeout{0, 200'000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  std::size_t sent = 0;
  while (sent < many.size()) {
    const ssize_t n = ::send(fd, many.data() + sent, many.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the daemon stopped reading: its replies wait unread
    sent += static_cast<std::size_t>(n);
  }
  EXPECT_EQ(d.list()["ok"], true);
  ::close(fd);
}

TEST(ControlServer, ASecondDaemonOnALiveSocketIsRefused) {
  Daemon d;
  TenantTable table({*gpu::PartitionGrid::of(*hw::find_gpu("h100"))}, *make_node_policy("cogpu"));
  auto second = ControlServer::start(at(d.path()), std::move(table));
  ASSERT_FALSE(second.has_value());
  EXPECT_NE(second.error().message().find("already listens"), std::string::npos);
}

// With --latency-critical-uids, a process of another uid that asks for latency-critical (or a
// priority) is registered as best-effort at priority 0, and the reply says so; one of a listed
// uid keeps what it asked for.
TEST(ControlServer, OnlyTrustedUidsRegisterAsLatencyCritical) {
  const uid_t me = geteuid();
  Daemon untrusted([&](ServerOptions& o) { o.latency_critical_uids = std::vector<uid_t>{me + 1}; });
  Connection c(untrusted.path());
  c.send(R"({"op":"register","tenant":"chat","class":"latency-critical","priority":3})"
         "\n");
  const json reply = json::parse(c.reply());
  EXPECT_EQ(reply["ok"], true) << reply.dump();
  EXPECT_EQ(reply["class"], "best-effort");
  EXPECT_EQ(reply["priority"], 0);
  EXPECT_NE(reply.value("downgraded", "").find("uid " + std::to_string(me)), std::string::npos)
      << reply.dump();
  const json listed = untrusted.list();
  ASSERT_EQ(listed["tenants"].size(), 1u);
  EXPECT_EQ(listed["tenants"][0]["class"], "best-effort");

  Connection plain(untrusted.path());
  plain.send(R"({"op":"register","tenant":"train","class":"best-effort"})"
             "\n");
  EXPECT_FALSE(json::parse(plain.reply()).contains("downgraded"))
      << "asking for nothing more than best-effort is never downgraded";

  Daemon trusted([&](ServerOptions& o) { o.latency_critical_uids = std::vector<uid_t>{me}; });
  Connection t(trusted.path());
  t.send(R"({"op":"register","tenant":"chat","class":"latency-critical","priority":3})"
         "\n");
  const json kept = json::parse(t.reply());
  EXPECT_EQ(kept["class"], "latency-critical") << kept.dump();
  EXPECT_EQ(kept["priority"], 3);
  EXPECT_FALSE(kept.contains("downgraded"));
}

// Under priority-fill a latency-critical process without a latency target is served as
// best-effort, and its registration reply says so (the interposer prints it); one with a target
// is told nothing.
TEST(ControlServer, PriorityFillTellsAnUntargetedInferenceItIsServedAsBestEffort) {
  Daemon d;
  Connection admin(d.path());
  admin.send(R"({"op":"policy","name":"priority-fill"})"
             "\n");
  ASSERT_EQ(json::parse(admin.reply())["ok"], true);
  Connection untargeted(d.path());
  untargeted.send(R"({"op":"register","tenant":"batch-llm","class":"latency-critical"})"
                  "\n");
  const json told = json::parse(untargeted.reply());
  EXPECT_NE(told.value("note", "").find("serves it as best-effort"), std::string::npos)
      << told.dump();
  Connection targeted(d.path());
  targeted.send(R"({"op":"register","tenant":"chat","class":"latency-critical","tpot_slo_ms":50})"
                "\n");
  EXPECT_FALSE(json::parse(targeted.reply()).contains("note"));
}

TEST(ControlServer, OnlyRootOrTheDaemonsUserChangesOtherTenants) {
  EXPECT_TRUE(may_control(0, 1000));
  EXPECT_TRUE(may_control(1000, 1000));
  EXPECT_FALSE(may_control(1001, 1000));
  EXPECT_FALSE(may_control(static_cast<uid_t>(-1), 1000));
}

// A process of another user may register and list, not switch the policy.
TEST(ControlServer, AnotherUsersClientCannotSwitchThePolicy) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another user";
  Daemon d;
  const pid_t child = fork();
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    auto listed = send_request(d.path(), {{"op", "list"}});
    auto refused = send_request(d.path(), {{"op", "policy"}, {"name", "tpot-first"}});
    const bool ok =
        listed.has_value() && !refused.has_value() &&
        refused.error().message().find("need root or the daemon's user") != std::string::npos;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(d.list()["policy"], "cogpu");
}

TEST(ControlClient, SaysWhenNoDaemonListens) {
  auto r = send_request(::testing::TempDir() + "no-daemon.sock", {{"op", "list"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("no daemon answers"), std::string::npos);
}

}  // namespace
}  // namespace tessera::daemon
