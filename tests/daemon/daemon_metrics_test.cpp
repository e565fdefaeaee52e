#include "tessera/daemon/daemon_metrics.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tessera/hw/gpu_spec.hpp"

namespace tessera::daemon {
namespace {

// `promtool check metrics` on `text` (its stdin); returns its exit status and output.
std::pair<int, std::string> promtool_check(const std::string& text) {
  const std::string path = ::testing::TempDir() + "tessera_metrics_" + std::to_string(getpid());
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  std::FILE* p = popen(("promtool check metrics < " + path + " 2>&1").c_str(), "r");
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, p) != nullptr) output += buffer;
  const int status = pclose(p);
  std::remove(path.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

bool have_promtool() {
  return std::system("command -v promtool >/dev/null 2>&1") == 0;
}

// An inference and a trainer, both busy, the trainer with a memory limit it met once.
struct TwoTenants {
  daemon_abi::AssignmentPage chat{}, train{};
  TenantTable table{{*gpu::PartitionGrid::of(*hw::find_gpu("h100"))}, *make_node_policy("cogpu")};
  TwoTenants() {
    RegisterRequest r;
    r.tenant = "chat";
    r.settings.tenant_class = TenantClass::kLatencyCritical;
    EXPECT_TRUE(table.add(r, &chat, 0));
    r.tenant = "train";
    r.settings.tenant_class = TenantClass::kBestEffort;
    EXPECT_TRUE(table.add(r, &train, 0));
    for (auto* p : {&chat, &train}) {
      p->launches.store(5);
      p->last_launch_ns.store(core::millis(1));
    }
    train.memory_used.store(1 << 30);
    train.memory_limit.store(2ULL << 30);
    train.memory_refused.store(1);
    train.held_launches.store(2);
    train.held_ns.store(1'500'000);
    table.tick(core::millis(2));
  }
};

TEST(DaemonMetrics, TheExpositionSaysWhatEachTenantHasAndPassesPromtool) {
  TwoTenants t;
  const std::string text = exposition_text(snapshot_of(t.table));
  for (
      const char* line : {
          R"(tessera_daemon_info{mechanism="green-contexts",policy="cogpu"} 1)",
          R"(tessera_daemon_tenants 2)",
          R"(tessera_daemon_device_usable_sms{device="0"} 128)",
          R"(tessera_tenant_assigned_sms{class="latency-critical",device="0",tenant="chat"} 120)",
          R"(tessera_tenant_assigned_sms{class="best-effort",device="0",tenant="train"} 8)",
          R"(tessera_tenant_stream_priority{class="best-effort",device="0",tenant="train"} 0)",
          R"(tessera_tenant_launches_total{class="best-effort",device="0",tenant="train"} 5)",
          R"(tessera_tenant_held_seconds_total{class="best-effort",device="0",tenant="train"} 0.0015)",
          R"(tessera_tenant_memory_limit_bytes{class="best-effort",device="0",tenant="train"} 2147483648)",
          R"(tessera_tenant_memory_refused_total{class="best-effort",device="0",tenant="train"} 1)",
      }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(text.find(R"(tessera_tenant_memory_limit_bytes{class="latency-critical")"),
            std::string::npos)
      << "no limit, no limit series";
  if (!have_promtool()) GTEST_SKIP() << "promtool is not on PATH (Debian's prometheus package)";
  const auto [status, output] = promtool_check(text);
  EXPECT_EQ(status, 0) << output << "\n" << text;
}

// Under priority-fill with --slo-guided the reserve of each GPU is a series of its own; without
// slo_guided there is none.
TEST(DaemonMetrics, TheSloGuidedReserveIsExposedPerDevice) {
  TableOptions options;
  options.policy.slo_guided = true;
  const auto grid = *gpu::PartitionGrid::of(*hw::find_gpu("h100"));
  TenantTable table({grid, grid}, *make_node_policy("priority-fill", options.policy), options);
  daemon_abi::AssignmentPage page{};
  RegisterRequest r;
  r.tenant = "train";
  ASSERT_TRUE(table.add(r, &page, 0));
  table.tick(core::millis(1));
  const std::string text = exposition_text(snapshot_of(table));
  for (const char* line : {R"(tessera_daemon_device_reserve_sms{device="0"} 8)",
                           R"(tessera_daemon_device_reserve_sms{device="1"} 8)"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  TwoTenants fixed;
  EXPECT_EQ(exposition_text(snapshot_of(fixed.table)).find("reserve_sms"), std::string::npos);
  if (!have_promtool()) GTEST_SKIP() << "promtool is not on PATH (Debian's prometheus package)";
  const auto [status, output] = promtool_check(text);
  EXPECT_EQ(status, 0) << output << "\n" << text;
}

TEST(DaemonMetrics, ServesTheSnapshotOverHttp) {
  TwoTenants t;
  auto metrics = DaemonMetrics::serve("127.0.0.1:0");
  ASSERT_TRUE(metrics.has_value()) << metrics.error().message();
  (*metrics)->observe(t.table, core::millis(3));
  ASSERT_FALSE((*metrics)->ports().empty());
  httplib::Client client("127.0.0.1", (*metrics)->ports().front());
  const auto response = client.Get("/metrics");
  ASSERT_TRUE(response) << httplib::to_string(response.error());
  EXPECT_EQ(response->status, 200);
  EXPECT_NE(response->body.find(
                R"(tessera_tenant_assigned_sms{class="best-effort",device="0",tenant="train"} 8)"),
            std::string::npos)
      << response->body;
  if (!have_promtool()) GTEST_SKIP() << "promtool is not on PATH (Debian's prometheus package)";
  const auto [status, output] = promtool_check(response->body);
  EXPECT_EQ(status, 0) << output;
}

TEST(DaemonMetrics, AnAddressItCannotServeIsAnErrorNamingIt) {
  auto metrics = DaemonMetrics::serve("256.1.1.1:9");
  ASSERT_FALSE(metrics.has_value());
  EXPECT_NE(metrics.error().message().find("--metrics 256.1.1.1:9"), std::string::npos)
      << metrics.error().message();
}

}  // namespace
}  // namespace tessera::daemon
