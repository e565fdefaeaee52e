#include "tessera/daemon/control_protocol.hpp"

#include <gtest/gtest.h>

#include <string>
#include <variant>

namespace tessera::daemon {
namespace {

TEST(ControlProtocol, ReadsARegistrationWithEveryField) {
  auto r = parse_request(
      R"({"op":"register","tenant":"chat-1","class":"latency-critical","priority":10,)"
      R"("tpot_slo_ms":50,"ttft_slo_ms":500.5,"device":1})");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const auto& reg = std::get<RegisterRequest>(*r);
  EXPECT_EQ(reg.tenant, "chat-1");
  EXPECT_EQ(reg.settings.tenant_class, TenantClass::kLatencyCritical);
  EXPECT_EQ(reg.settings.priority, 10);
  EXPECT_EQ(reg.settings.tpot_slo, core::millis(50));
  EXPECT_EQ(reg.settings.ttft_slo, core::micros(500'500));
  EXPECT_EQ(reg.device, 1);
  EXPECT_EQ(reg.pid, 0);  // the server's to fill, from the socket
}

TEST(ControlProtocol, ARegistrationDefaultsToBestEffortOnDeviceZero) {
  auto r = parse_request(R"({"op":"register","tenant":"train"})");
  ASSERT_TRUE(r.has_value());
  const auto& reg = std::get<RegisterRequest>(*r);
  EXPECT_EQ(reg.settings.tenant_class, TenantClass::kBestEffort);
  EXPECT_EQ(reg.settings.priority, 0);
  EXPECT_EQ(reg.settings.tpot_slo, 0);
  EXPECT_EQ(reg.device, 0);
}

TEST(ControlProtocol, ReadsTheOtherRequests) {
  EXPECT_TRUE(std::holds_alternative<ListRequest>(*parse_request(R"({"op":"list"})")));
  auto set = parse_request(R"({"op":"set","tenant":"a","priority":-3})");
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(std::get<SetRequest>(*set).priority, -3);
  EXPECT_FALSE(std::get<SetRequest>(*set).tenant_class.has_value());
  EXPECT_FALSE(std::get<SetRequest>(*set).memory_limit.has_value());
  auto limit = parse_request(R"({"op":"set","tenant":"a","memory_limit_bytes":21474836480})");
  ASSERT_TRUE(limit.has_value()) << limit.error().message();
  EXPECT_EQ(std::get<SetRequest>(*limit).memory_limit, 21474836480ULL);
  auto share = parse_request(R"({"op":"register","tenant":"a","sm_share":0.25})");
  ASSERT_TRUE(share.has_value()) << share.error().message();
  EXPECT_EQ(std::get<RegisterRequest>(*share).settings.sm_share, 0.25);
  EXPECT_EQ(std::get<PolicyRequest>(*parse_request(R"({"op":"policy","name":"tpot-first"})")).name,
            "tpot-first");
  EXPECT_TRUE(std::get<DrainRequest>(*parse_request(R"({"op":"drain"})")).drain);
  EXPECT_FALSE(std::get<DrainRequest>(*parse_request(R"({"op":"undrain"})")).drain);
}

TEST(ControlProtocol, ReadsAGrantWithEveryField) {
  auto r = parse_request(
      R"({"op":"grant","claim":"6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79","tenant":"chat","device":1,)"
      R"("class":"latency-critical","priority":10,"tpot_slo_ms":50,"ttft_slo_ms":500,)"
      R"("sm_share":0.5,"memory_limit_bytes":21474836480})");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const auto& g = std::get<GrantRequest>(*r);
  EXPECT_EQ(g.claim, "6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79");
  EXPECT_EQ(g.tenant, "chat");
  EXPECT_EQ(g.device, 1);
  EXPECT_EQ(g.settings.tenant_class, TenantClass::kLatencyCritical);
  EXPECT_EQ(g.settings.priority, 10);
  EXPECT_EQ(g.settings.tpot_slo, core::millis(50));
  EXPECT_EQ(g.settings.ttft_slo, core::millis(500));
  EXPECT_EQ(g.settings.sm_share, 0.5);
  EXPECT_EQ(g.settings.memory_limit, 21474836480ULL);
  // What the grant store writes is what the parser reads back.
  const auto back = parse_request(grant_request_json(g).dump());
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(std::get<GrantRequest>(*back), g);
}

// The settings a grant leaves out are a registration's defaults; the device is not one of them.
TEST(ControlProtocol, AGrantDefaultsToBestEffortWithoutLimitsOnItsDevice) {
  auto r = parse_request(R"({"op":"grant","claim":"c1","tenant":"train","device":0})");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const auto& g = std::get<GrantRequest>(*r);
  EXPECT_EQ(g.settings, TenantSettings{});
  auto revoke = parse_request(R"({"op":"revoke","claim":"c1"})");
  ASSERT_TRUE(revoke.has_value()) << revoke.error().message();
  EXPECT_EQ(std::get<RevokeRequest>(*revoke).claim, "c1");
}

// A registration under a granted name takes the grant's device and settings, whatever it asked.
TEST(ControlProtocol, AGrantReplacesWhatARegistrationAskedFor) {
  GrantRequest g;
  g.claim = "c1";
  g.tenant = "chat";
  g.device = 2;
  g.settings.priority = 4;
  g.settings.memory_limit = 1 << 30;
  RegisterRequest r;
  r.tenant = "chat";
  r.pid = 42;
  r.device = 0;
  r.settings.tenant_class = TenantClass::kLatencyCritical;
  r.settings.priority = 1000;
  apply(g, r);
  EXPECT_EQ(r.device, 2);
  EXPECT_EQ(r.settings, g.settings);
  EXPECT_EQ(r.pid, 42);
}

// Each malformed request is refused with a message that names what is wrong.
TEST(ControlProtocol, RefusesMalformedRequestsNamingWhatIsWrong) {
  const std::pair<std::string, std::string> cases[] = {
      {"not json", "not JSON"},
      {"[1,2]", "not a JSON object"},
      {R"({"tenant":"a"})", "no 'op'"},
      {R"({"op":"fly"})",
       "unknown op 'fly' (register, list, set, policy, drain, undrain, grant, "
       "revoke)"},
      {R"({"op":"register"})", "'tenant' is missing"},
      {R"({"op":"register","tenant":""})", "1-63 characters"},
      {R"({"op":"register","tenant":"a/b"})", "tenant name 'a/b'"},
      {R"({"op":"register","tenant":"a","prio":1})", "unknown key 'prio'"},
      {R"({"op":"register","tenant":"a","priority":"high"})", "'priority' must be an integer"},
      {R"({"op":"register","tenant":"a","priority":5000})", "outside [-1000, 1000]"},
      {R"({"op":"register","tenant":"a","class":"gold"})", "'class' must be"},
      {R"({"op":"register","tenant":"a","tpot_slo_ms":-1})", "'tpot_slo_ms' is -1"},
      {R"({"op":"register","tenant":"a","device":64})", "'device' is 64"},
      {R"({"op":"register","tenant":"a","pid":7})", "unknown key 'pid'"},
      {R"({"op":"set","tenant":"a"})", "nothing to set"},
      {R"({"op":"set","tenant":"a","memory_limit_bytes":-1})", "'memory_limit_bytes' must be"},
      {R"({"op":"set","tenant":"a","memory_limit_bytes":1.5})", "'memory_limit_bytes' must be"},
      {R"({"op":"set","tenant":"a","memory_limit_bytes":"20Gi"})", "'memory_limit_bytes' must be"},
      {R"({"op":"set","tenant":"a","memory_limit_bytes":2251799813685248})", "more than"},
      {R"({"op":"register","tenant":"a","memory_limit_bytes":1})", "unknown key"},
      {R"({"op":"register","tenant":"a","sm_share":1.5})", "'sm_share' must be a fraction"},
      {R"({"op":"set","tenant":"a","sm_share":"half"})", "'sm_share' must be a fraction"},
      {R"({"op":"policy"})", "'name' must be"},
      {R"({"op":"list","verbose":true})", "unknown key 'verbose'"},
      {R"({"op":"grant","tenant":"a","device":0})", "'grant' request: 'claim' is missing"},
      {R"({"op":"grant","claim":7,"tenant":"a","device":0})", "'claim' must be a string"},
      {R"({"op":"grant","claim":"","tenant":"a","device":0})", "claim '' must be 1-63"},
      {R"({"op":"grant","claim":"a b","tenant":"a","device":0})", "claim 'a b' must be 1-63"},
      {R"({"op":"grant","claim":")" + std::string(64, 'c') + R"(","tenant":"a","device":0})",
       "must be 1-63 characters"},
      {R"({"op":"grant","claim":"c","device":0})", "'grant' request: 'tenant' is missing"},
      {R"({"op":"grant","claim":"c","tenant":"a/b","device":0})", "tenant name 'a/b'"},
      {R"({"op":"grant","claim":"c","tenant":"a"})", "'grant' request: 'device' is missing"},
      {R"({"op":"grant","claim":"c","tenant":"a","device":64})", "'device' is 64"},
      {R"({"op":"grant","claim":"c","tenant":"a","device":"0"})", "'device' must be an integer"},
      {R"({"op":"grant","claim":"c","tenant":"a","device":0,"class":"gold"})", "'class' must be"},
      {R"({"op":"grant","claim":"c","tenant":"a","device":0,"priority":1001})",
       "'priority' is 1001"},
      {R"({"op":"grant","claim":"c","tenant":"a","device":0,"tpot_slo_ms":-5})",
       "'tpot_slo_ms' is -5"},
      {R"({"op":"grant","claim":"c","tenant":"a","device":0,"ttft_slo_ms":"fast"})",
       "'ttft_slo_ms' must be a number"},
      {R"({"op":"grant","claim":"c","tenant":"a","device":0,"sm_share":2})",
       "'grant' request: 'sm_share' must be a fraction"},
      {R"({"op":"grant","claim":"c","tenant":"a","device":0,"memory_limit_bytes":-1})",
       "'grant' request: 'memory_limit_bytes' must be"},
      {R"({"op":"grant","claim":"c","tenant":"a","device":0,"pid":7})", "unknown key 'pid'"},
      {R"({"op":"revoke"})", "'revoke' request: 'claim' is missing"},
      {R"({"op":"revoke","claim":"c/d"})", "claim 'c/d' must be"},
      {R"({"op":"revoke","claim":"c","tenant":"a"})", "'revoke' request: unknown key 'tenant'"},
  };
  for (const auto& [line, expected] : cases) {
    auto r = parse_request(line);
    ASSERT_FALSE(r.has_value()) << line;
    EXPECT_NE(r.error().message().find(expected), std::string::npos)
        << line << " -> " << r.error().message();
  }
}

TEST(ControlProtocol, ErrorRepliesAreOneJsonLine) {
  const std::string reply = error_reply("bad \"thing\"\n");
  ASSERT_EQ(reply.back(), '\n');
  EXPECT_EQ(reply.find('\n'), reply.size() - 1);
  const auto j = nlohmann::json::parse(reply);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"], "bad \"thing\"\n");
}

}  // namespace
}  // namespace tessera::daemon
