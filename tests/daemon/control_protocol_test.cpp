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

// Each malformed request is refused with a message that names what is wrong.
TEST(ControlProtocol, RefusesMalformedRequestsNamingWhatIsWrong) {
  const std::pair<std::string, std::string> cases[] = {
      {"not json", "not JSON"},
      {"[1,2]", "not a JSON object"},
      {R"({"tenant":"a"})", "no 'op'"},
      {R"({"op":"fly"})", "unknown op 'fly'"},
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
