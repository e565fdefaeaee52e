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

#include "served_daemon.hpp"
#include "tessera/daemon/control_client.hpp"
#include "tessera/daemon/grant_store.hpp"
#include "tessera/daemon/settings_store.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::daemon {
namespace {

using nlohmann::json;
using test::Connection;
using test::ServedDaemon;

ServerOptions at(const std::string& path) {
  ServerOptions o;
  o.socket_path = path;
  return o;
}

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
  ServedDaemon d;
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
    ServedDaemon first(with_settings);
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
  ServedDaemon second(with_settings);
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
  ServedDaemon d;
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
  ServedDaemon d;
  Connection c(d.path());
  c.send("garbage\n{\"op\":\"fly\"}\n\n{\"op\":\"set\",\"tenant\":\"x\",\"priority\":1}\n");
  EXPECT_NE(c.reply().find("not JSON"), std::string::npos);
  EXPECT_NE(c.reply().find("unknown op 'fly'"), std::string::npos);
  EXPECT_NE(c.reply().find("no tenant named 'x'"), std::string::npos);
  c.send("{\"op\":\"list\"}\n");
  EXPECT_EQ(json::parse(c.reply())["ok"], true) << "the connection still serves";
}

TEST(ControlServer, OneTenantPerConnectionAndNoneWhileDraining) {
  ServedDaemon d;
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
  ServedDaemon d;
  Connection flood(d.path());
  Connection silent(d.path());  // connects and never sends: must not hold anyone up
  flood.send(std::string(kMaxRequestBytes + 10, 'x'));
  EXPECT_NE(flood.reply().find("longer than 65536 bytes"), std::string::npos);
  EXPECT_EQ(flood.reply(), "") << "then the connection is closed";
  EXPECT_EQ(d.list()["ok"], true);
}

TEST(ControlServer, AClientThatNeverReadsItsRepliesDoesNotStopTheOthers) {
  ServedDaemon d;
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
  ServedDaemon d;
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
  ServedDaemon untrusted(
      [&](ServerOptions& o) { o.latency_critical_uids = std::vector<uid_t>{me + 1}; });
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

  ServedDaemon trusted([&](ServerOptions& o) { o.latency_critical_uids = std::vector<uid_t>{me}; });
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
  ServedDaemon d;
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
  ServedDaemon d;
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

json chat_grant(const std::string& claim = "6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79") {
  return {{"op", "grant"},
          {"claim", claim},
          {"tenant", "chat"},
          {"device", 1},
          {"class", "latency-critical"},
          {"priority", 10},
          {"tpot_slo_ms", 50},
          {"sm_share", 0.5},
          {"memory_limit_bytes", 1 << 30}};
}

std::string grants_file(const char* name) {
  const std::string path =
      ::testing::TempDir() + "tesserad_grants_" + std::to_string(getpid()) + "_" + name + ".json";
  std::filesystem::remove(path);
  return path;
}

// A registration and its reply, with the page it was given mapped (unmapped by the caller).
struct Registered {
  json reply;
  const daemon_abi::AssignmentPage* page = nullptr;
};
Registered register_on(Connection& c, const json& request) {
  c.send(request.dump() + "\n");
  int page_fd = -1;
  Registered r{json::parse(c.reply(&page_fd))};
  if (page_fd >= 0) {
    void* p = mmap(nullptr, daemon_abi::kPageBytes, PROT_READ, MAP_SHARED, page_fd, 0);
    ::close(page_fd);
    if (p != MAP_FAILED) r.page = static_cast<const daemon_abi::AssignmentPage*>(p);
  }
  return r;
}
void unmap(const Registered& r) {
  if (r.page != nullptr)
    munmap(const_cast<daemon_abi::AssignmentPage*>(r.page), daemon_abi::kPageBytes);
}

// A process registering under a granted name gets the grant's device and settings whatever it
// asked for and whatever its uid (the cluster authorized the claim), and its reply names the
// claim; one under another name is registered as before (here: downgraded, its uid untrusted).
TEST(ControlServer, ARegistrationUnderAGrantGetsTheGrantsSettingsAndTheClaim) {
  const uid_t me = geteuid();
  ServedDaemon d([&](ServerOptions& o) { o.latency_critical_uids = std::vector<uid_t>{me + 1}; },
                 2);
  const auto granted = send_request(d.path(), chat_grant());
  ASSERT_TRUE(granted) << granted.error().message();
  EXPECT_EQ((*granted)["again"], false);
  EXPECT_EQ((*granted)["claim"], "6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79");

  Connection chat(d.path());
  const Registered r = register_on(chat, {{"op", "register"},
                                          {"tenant", "chat"},
                                          {"class", "best-effort"},
                                          {"priority", 1},
                                          {"device", 0}});
  EXPECT_EQ(r.reply["ok"], true) << r.reply.dump();
  EXPECT_EQ(r.reply["claim"], "6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79");
  EXPECT_EQ(r.reply["class"], "latency-critical");
  EXPECT_EQ(r.reply["priority"], 10);
  EXPECT_FALSE(r.reply.contains("downgraded")) << r.reply.dump();
  ASSERT_NE(r.page, nullptr);
  EXPECT_EQ(r.page->memory_limit_assigned.load(), 1u << 30);
  unmap(r);

  Connection other(d.path());
  const Registered o =
      register_on(other, {{"op", "register"}, {"tenant", "batch"}, {"class", "latency-critical"}});
  EXPECT_EQ(o.reply["class"], "best-effort") << o.reply.dump();
  EXPECT_FALSE(o.reply.contains("claim"));
  unmap(o);

  const json listed = d.list();
  ASSERT_EQ(listed["tenants"].size(), 2u) << listed.dump();
  EXPECT_EQ(listed["tenants"][0]["device"], 1) << "the grant's device, not the one asked for";
  EXPECT_EQ(listed["tenants"][0]["claim"], "6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79");
  EXPECT_EQ(listed["tenants"][0]["tpot_slo_ms"], 50);
  EXPECT_EQ(listed["tenants"][0]["sm_share"], 0.5);
  EXPECT_FALSE(listed["tenants"][1].contains("claim"));
  ASSERT_EQ(listed["grants"].size(), 1u);
  EXPECT_EQ(listed["grants"][0]["tenant"], "chat");
  EXPECT_EQ(listed["grants"][0]["memory_limit_bytes"], 1 << 30);

  // An operator's `set` still changes a granted tenant while it is registered.
  ASSERT_TRUE(send_request(d.path(), {{"op", "set"}, {"tenant", "chat"}, {"priority", 3}}));
  EXPECT_EQ(d.list()["tenants"][0]["priority"], 3);
}

// The same grant again is answered ok; the claim with other fields, the name under another claim
// and a share past what the device has free are refused naming what is wrong, and nothing of
// them is kept, in the daemon or in its file.
TEST(ControlServer, AGrantIsIdempotentDoesNotChangeAndFitsTheDevicesShares) {
  const std::string file = grants_file("idempotent");
  ServedDaemon d([&](ServerOptions& o) { o.grants_path = file; }, 2);
  ASSERT_TRUE(send_request(d.path(), chat_grant()));
  const auto again = send_request(d.path(), chat_grant());
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ((*again)["again"], true);

  json changed = chat_grant();
  changed["priority"] = 11;
  const auto refused = send_request(d.path(), changed);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find(
                "claim '6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79' is already granted"),
            std::string::npos)
      << refused.error().message();
  EXPECT_NE(refused.error().message().find("revoke it first"), std::string::npos);

  const auto taken = send_request(d.path(), chat_grant("second-claim"));
  ASSERT_FALSE(taken);
  EXPECT_NE(taken.error().message().find("already granted to claim "
                                         "'6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79'; claim "
                                         "'second-claim' cannot have it too"),
            std::string::npos)
      << taken.error().message();

  json big = chat_grant("big-claim");
  big["tenant"] = "train";
  big["sm_share"] = 0.75;
  const auto over = send_request(d.path(), big);
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message().find(
                "device 1 has 0.5 of its SMs free to grant; claim 'big-claim' asks 0.75"),
            std::string::npos)
      << over.error().message();
  big["device"] = 2;
  const auto nowhere = send_request(d.path(), big);
  ASSERT_FALSE(nowhere);
  EXPECT_NE(nowhere.error().message().find("device 2 is not one of this daemon's 2 GPU(s)"),
            std::string::npos)
      << nowhere.error().message();

  EXPECT_EQ(d.list()["grants"].size(), 1u);
  std::string warning;
  const GrantStore kept = GrantStore::open(file, warning);
  ASSERT_EQ(kept.size(), 1u) << warning;
  EXPECT_EQ(kept.grants()[0].settings.priority, 10);
}

// A revoke drops the grant (from the file too) and is answered ok whether or not there was one;
// the process registered under it keeps its settings until it leaves, and the next one under
// the name registers as it asks.
TEST(ControlServer, ARevokeIsIdempotentAndLeavesTheRegisteredProcessAlone) {
  const std::string file = grants_file("revoke");
  ServedDaemon d([&](ServerOptions& o) { o.grants_path = file; }, 2);
  ASSERT_TRUE(send_request(d.path(), chat_grant()));
  Connection chat(d.path());
  unmap(register_on(chat, {{"op", "register"}, {"tenant", "chat"}}));
  const auto revoked =
      send_request(d.path(), {{"op", "revoke"}, {"claim", "6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79"}});
  ASSERT_TRUE(revoked) << revoked.error().message();
  EXPECT_EQ((*revoked)["was_granted"], true);
  const auto again =
      send_request(d.path(), {{"op", "revoke"}, {"claim", "6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79"}});
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ((*again)["was_granted"], false);
  const auto unknown = send_request(d.path(), {{"op", "revoke"}, {"claim", "never-granted"}});
  ASSERT_TRUE(unknown) << unknown.error().message();
  EXPECT_EQ((*unknown)["was_granted"], false);

  json listed = d.list();
  EXPECT_TRUE(listed["grants"].empty());
  ASSERT_EQ(listed["tenants"].size(), 1u);
  EXPECT_EQ(listed["tenants"][0]["priority"], 10) << "it keeps what it was given";
  EXPECT_FALSE(listed["tenants"][0].contains("claim"));
  std::string warning;
  EXPECT_EQ(GrantStore::open(file, warning).size(), 0u);

  chat.close();
  EXPECT_TRUE(eventually([&] { return d.list()["tenants"].empty(); }));
  Connection next(d.path());
  const Registered r = register_on(next, {{"op", "register"}, {"tenant", "chat"}});
  EXPECT_EQ(r.reply["class"], "best-effort") << r.reply.dump();
  EXPECT_FALSE(r.reply.contains("claim"));
  unmap(r);
}

// Grants survive a restart of the daemon (its grants file): a process that registers again with
// the next daemon gets the grant's settings, and a grant revoked there is gone at the one after.
TEST(ControlServer, GrantsSurviveARestart) {
  const std::string file = grants_file("restart");
  const auto with_file = [&](ServerOptions& o) { o.grants_path = file; };
  {
    ServedDaemon first(with_file, 2);
    ASSERT_TRUE(send_request(first.path(), chat_grant()));
  }
  {
    ServedDaemon second(with_file, 2);
    const json listed = second.list();
    ASSERT_EQ(listed["grants"].size(), 1u) << listed.dump();
    Connection chat(second.path());
    const Registered r = register_on(chat, {{"op", "register"}, {"tenant", "chat"}});
    EXPECT_EQ(r.reply["claim"], "6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79") << r.reply.dump();
    EXPECT_EQ(r.reply["priority"], 10);
    ASSERT_NE(r.page, nullptr);
    EXPECT_EQ(r.page->memory_limit_assigned.load(), 1u << 30);
    unmap(r);
    const auto again = send_request(second.path(), chat_grant());
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_EQ((*again)["again"], true) << "the restored grant is the same grant";
    ASSERT_TRUE(send_request(
        second.path(), {{"op", "revoke"}, {"claim", "6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79"}}));
  }
  ServedDaemon third(with_file, 2);
  EXPECT_TRUE(third.list()["grants"].empty());
}

// A grant the daemon cannot keep in its file is refused (the DRA driver tries again), and not
// held either.
TEST(ControlServer, AGrantThatCannotBeKeptIsRefused) {
  ServedDaemon d([](ServerOptions& o) { o.grants_path = "/nonexistent/folder/grants.json"; }, 2);
  const auto refused = send_request(d.path(), chat_grant());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("is not granted"), std::string::npos)
      << refused.error().message();
  EXPECT_NE(refused.error().message().find("/nonexistent/folder/grants.json"), std::string::npos);
  EXPECT_TRUE(d.list()["grants"].empty());
}

// A process of another user may register under a granted name, not grant or revoke.
TEST(ControlServer, AnotherUsersClientCannotGrantOrRevoke) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another user";
  ServedDaemon d({}, 2);
  ASSERT_TRUE(send_request(d.path(), chat_grant()));
  const pid_t child = fork();
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    auto grant = send_request(d.path(), chat_grant("other-claim"));
    auto revoke = send_request(
        d.path(), {{"op", "revoke"}, {"claim", "6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79"}});
    const auto refused = [](const core::Result<json>& r) {
      return !r.has_value() &&
             r.error().message().find("need root or the daemon's user") != std::string::npos;
    };
    _exit(refused(grant) && refused(revoke) ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const json listed = d.list();
  ASSERT_EQ(listed["grants"].size(), 1u);
  EXPECT_EQ(listed["grants"][0]["claim"], "6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79");
}

TEST(ControlClient, SaysWhenNoDaemonListens) {
  auto r = send_request(::testing::TempDir() + "no-daemon.sock", {{"op", "list"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("no daemon answers"), std::string::npos);
}

}  // namespace
}  // namespace tessera::daemon
