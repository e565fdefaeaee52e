#include "tessera/daemon/grant_store.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tessera::daemon {
namespace {

std::string fresh_path(const char* name) {
  const std::string path =
      ::testing::TempDir() + "grants_" + std::to_string(getpid()) + "_" + name + ".json";
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".unreadable");
  return path;
}

GrantRequest chat_grant() {
  GrantRequest g;
  g.claim = "6f1c2a9e-1b7d-4c1e-9a0e-2f3d4c5b6a79";
  g.tenant = "chat";
  g.device = 1;
  g.settings.tenant_class = TenantClass::kLatencyCritical;
  g.settings.priority = 10;
  g.settings.tpot_slo = core::millis(50);
  g.settings.ttft_slo = core::micros(500'500);
  g.settings.sm_share = 0.5;
  g.settings.memory_limit = 20ULL << 30;
  return g;
}

// Every field of every grant survives a new store on the same file; a revoked one is gone there.
TEST(GrantStore, KeepsEveryGrantAcrossOpensUntilForgotten) {
  const std::string path = fresh_path("roundtrip");
  std::string warning;
  GrantStore first = GrantStore::open(path, warning);
  EXPECT_TRUE(warning.empty());
  ASSERT_TRUE(first.put(chat_grant()));
  GrantRequest train;
  train.claim = "claim-2";
  train.tenant = "train";
  ASSERT_TRUE(first.put(train));

  GrantStore second = GrantStore::open(path, warning);
  EXPECT_TRUE(warning.empty()) << warning;
  ASSERT_EQ(second.size(), 2u);
  const std::vector<GrantRequest> kept = second.grants();
  EXPECT_EQ(kept[0], chat_grant()) << "by claim: '6f1c...' before 'claim-2'";
  EXPECT_EQ(kept[1], train);

  ASSERT_TRUE(second.forget(chat_grant().claim));
  ASSERT_TRUE(second.forget("never-granted"));
  const GrantStore third = GrantStore::open(path, warning);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third.grants()[0].claim, "claim-2");
}

// A file that is not one (truncated, an entry the protocol refuses, an entry under another claim)
// is moved aside, named in the warning, and the store starts empty; nothing of it is lost.
TEST(GrantStore, AnUnreadableFileIsMovedAsideAndNamed) {
  for (const char* text :
       {"{\"grants\": {\"c1\": {\"op\": \"grant\"",
        R"({"grants": {"c1": {"op": "grant", "claim": "c1", "tenant": "chat"}}})",
        R"({"grants": {"c1": {"op": "grant", "claim": "c2", "tenant": "chat", "device": 0}}})",
        R"({"grants": {"c1": {"op": "set", "tenant": "chat", "priority": 1}}})",
        R"({"tenants": {}})"}) {
    const std::string path = fresh_path("bad");
    std::ofstream(path) << text;
    std::string warning;
    GrantStore store = GrantStore::open(path, warning);
    EXPECT_EQ(store.size(), 0u) << text;
    EXPECT_NE(warning.find(path), std::string::npos) << warning;
    EXPECT_NE(warning.find(".unreadable"), std::string::npos) << warning;
    EXPECT_TRUE(std::filesystem::exists(path + ".unreadable")) << text;
    EXPECT_FALSE(std::filesystem::exists(path)) << text;
  }
}

// Without a path nothing is kept; a path in a folder that does not exist is an error naming it,
// and the store is left as it was (the server then refuses the grant).
TEST(GrantStore, WithoutAPathNothingIsKeptAndAnUnwritablePathChangesNothing) {
  std::string warning;
  GrantStore none = GrantStore::open("", warning);
  EXPECT_TRUE(none.put(chat_grant()));
  EXPECT_EQ(none.size(), 0u);
  GrantStore lost = GrantStore::open("/nonexistent/folder/grants.json", warning);
  const auto written = lost.put(chat_grant());
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message().find("/nonexistent/folder/grants.json"), std::string::npos)
      << written.error().message();
  EXPECT_EQ(lost.size(), 0u);
}

}  // namespace
}  // namespace tessera::daemon
