#include "tessera/daemon/settings_store.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace tessera::daemon {
namespace {

std::string fresh_path(const char* name) {
  const std::string path =
      ::testing::TempDir() + "settings_" + std::to_string(getpid()) + "_" + name + ".json";
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".unreadable");
  return path;
}

// What `set` gave a tenant survives a new store on the same file, field by field as given; a
// tenant that leaves is forgotten there too.
TEST(SettingsStore, KeepsWhatSetGaveEachTenantAcrossOpens) {
  const std::string path = fresh_path("roundtrip");
  std::string warning;
  SettingsStore first = SettingsStore::open(path, warning);
  EXPECT_TRUE(warning.empty());
  SetRequest chat;
  chat.tenant = "chat";
  chat.priority = 7;
  chat.tpot_slo = core::millis(40);
  ASSERT_TRUE(first.remember(chat));
  SetRequest more;
  more.tenant = "chat";
  more.memory_limit = 8ULL << 30;
  ASSERT_TRUE(first.remember(more));
  SetRequest train;
  train.tenant = "train";
  train.tenant_class = TenantClass::kBestEffort;
  train.sm_share = 0.25;
  ASSERT_TRUE(first.remember(train));

  SettingsStore second = SettingsStore::open(path, warning);
  EXPECT_TRUE(warning.empty()) << warning;
  ASSERT_EQ(second.size(), 2u);
  const auto kept = second.find("chat");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->priority, 7);
  EXPECT_EQ(kept->tpot_slo, core::millis(40));
  EXPECT_EQ(kept->memory_limit, 8ULL << 30);
  EXPECT_FALSE(kept->tenant_class) << "never set, so not kept";
  EXPECT_EQ(second.find("train")->sm_share, 0.25);

  ASSERT_TRUE(second.forget("chat"));
  EXPECT_FALSE(SettingsStore::open(path, warning).find("chat"));
  EXPECT_TRUE(SettingsStore::open(path, warning).find("train"));
}

// A file that is not one (truncated, or an entry the protocol refuses) is moved aside, named in
// the warning, and the store starts empty; nothing of it is lost.
TEST(SettingsStore, AnUnreadableFileIsMovedAsideAndNamed) {
  for (const char* text :
       {"{\"tenants\": {\"chat\": {\"op\": \"set\"", R"({"tenants": {"chat": {"op": "set",
         "tenant": "chat", "priority": 5000}}})",
        R"({"tenants": {"chat": {"op": "set", "tenant": "other", "priority": 1}}})"}) {
    const std::string path = fresh_path("bad");
    std::ofstream(path) << text;
    std::string warning;
    SettingsStore store = SettingsStore::open(path, warning);
    EXPECT_EQ(store.size(), 0u);
    EXPECT_NE(warning.find(path), std::string::npos) << warning;
    EXPECT_NE(warning.find(".unreadable"), std::string::npos) << warning;
    EXPECT_TRUE(std::filesystem::exists(path + ".unreadable")) << text;
    EXPECT_FALSE(std::filesystem::exists(path));
  }
}

// Without a path nothing is written; a path in a folder that does not exist is an error naming
// it, and what was asked is kept in memory.
TEST(SettingsStore, WithoutAPathNothingIsKeptAndAnUnwritablePathIsNamed) {
  std::string warning;
  SettingsStore none = SettingsStore::open("", warning);
  SetRequest r;
  r.tenant = "chat";
  r.priority = 1;
  EXPECT_TRUE(none.remember(r));
  EXPECT_EQ(none.size(), 0u);
  SettingsStore lost = SettingsStore::open("/nonexistent/folder/settings.json", warning);
  const auto written = lost.remember(r);
  ASSERT_FALSE(written);
  EXPECT_NE(written.error().message().find("/nonexistent/folder/settings.json"), std::string::npos)
      << written.error().message();
  EXPECT_TRUE(lost.find("chat"));
}

TEST(SettingsStore, SetRequestJsonIsWhatTheParserReadsBack) {
  SetRequest r;
  r.tenant = "chat";
  r.tenant_class = TenantClass::kLatencyCritical;
  r.ttft_slo = core::millis(500);
  r.sm_share = 0.5;
  const auto back = parse_request(set_request_json(r).dump());
  ASSERT_TRUE(back) << back.error().message();
  const auto& s = std::get<SetRequest>(*back);
  EXPECT_EQ(s.tenant_class, TenantClass::kLatencyCritical);
  EXPECT_EQ(s.ttft_slo, core::millis(500));
  EXPECT_EQ(s.sm_share, 0.5);
  EXPECT_FALSE(s.priority);
}

}  // namespace
}  // namespace tessera::daemon
