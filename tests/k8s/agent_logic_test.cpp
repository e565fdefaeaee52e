// The node agent's state and loop without HTTP: a fake discovery, a manual clock, a fake push.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent_topologies.hpp"
#include "tessera/core/clock.hpp"
#include "tessera/hw/topology/json.hpp"
#include "tessera/k8s/node_agent.hpp"

namespace tessera::k8s {
namespace {

using testing::kGiB;
using testing::small_server;

constexpr core::Nanos kPeriod = 30 * core::kNanosPerSecond;

// What the "machine" looks like now; tests change it between refreshes.
struct FakeMachine {
  core::Result<hw::HostTopology> now = small_server("host-a");
  int discoveries = 0;
  DiscoverFn fn() {
    return [this]() -> core::Result<hw::HostTopology> {
      ++discoveries;
      return now;
    };
  }
};

AgentOptions options(std::string node = "node-a") {
  AgentOptions o;
  o.node_name = std::move(node);
  o.refresh_period = kPeriod;
  return o;
}

std::vector<PodAllocation> pods(const char* json) {
  auto parsed = parse_allocations(nlohmann::json::parse(json));
  EXPECT_TRUE(parsed) << parsed.error().message();
  return parsed ? *parsed : std::vector<PodAllocation>{};
}

// The status/used_by the topology JSON reports for GPU `index`.
nlohmann::json gpu_entry(const NodeAgent& agent, int index) {
  const auto j = agent.topology_json();
  const int id = agent.topology()->gpus()[static_cast<std::size_t>(index)];
  return j.at("topology").at("nodes")[static_cast<std::size_t>(id)];
}

class AgentTest : public ::testing::Test {
 protected:
  FakeMachine machine;
  core::ManualClock clock{1000};
  std::unique_ptr<NodeAgent> agent;
  void SetUp() override {
    auto a = NodeAgent::create(options(), machine.fn(), clock);
    ASSERT_TRUE(a) << a.error().message();
    agent = std::move(*a);
  }
};

TEST_F(AgentTest, StartsWithOneDiscoveryAtGenerationOne) {
  EXPECT_EQ(machine.discoveries, 1);
  EXPECT_EQ(agent->generation(), 1u);
  EXPECT_EQ(agent->topology_generation(), 1u);
  const auto j = agent->topology_json();
  EXPECT_EQ(j.at("node"), "node-a");
  EXPECT_EQ(j.at("generation"), 1);
  // The graph is hw::to_json's, plus status: every GPU free.
  EXPECT_EQ(j.at("topology").at("nodes").size(), agent->topology()->nodes().size());
  EXPECT_EQ(gpu_entry(*agent, 0).at("status"), "free");
  EXPECT_EQ(agent->health().at("gpus"), 4);
}

TEST_F(AgentTest, RefreshReportsChangeOnlyWhenTheTopologyDiffers) {
  auto same = agent->refresh();
  ASSERT_TRUE(same) << same.error().message();
  EXPECT_FALSE(same->changed);
  EXPECT_EQ(agent->generation(), 1u);

  machine.now = small_server("host-a", /*gpus_per_numa=*/3);
  auto changed = agent->refresh();
  ASSERT_TRUE(changed) << changed.error().message();
  EXPECT_TRUE(changed->changed);
  EXPECT_EQ(changed->generation, 2u);
  EXPECT_EQ(agent->topology_generation(), 2u);
  EXPECT_EQ(agent->topology()->gpus().size(), 6u);
}

TEST_F(AgentTest, FailedDiscoveryKeepsTheTopologyAndSaysWhy) {
  machine.now = core::fail(core::Domain::kTopology, core::Code::kNotFound, "hwloc said no");
  auto r = agent->refresh();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("hwloc said no"), std::string::npos);
  EXPECT_EQ(agent->topology()->gpus().size(), 4u);
  EXPECT_EQ(agent->generation(), 1u);
  EXPECT_EQ(agent->health().at("last_refresh_error"), "hwloc said no");

  machine.now = small_server("host-a");
  ASSERT_TRUE(agent->refresh());
  EXPECT_FALSE(agent->health().contains("last_refresh_error"));
}

TEST_F(AgentTest, RefreshIsDueAfterThePeriodOnTheInjectedClock) {
  EXPECT_FALSE(agent->refresh_due());
  clock.advance(kPeriod - 1);
  EXPECT_FALSE(agent->refresh_due());
  clock.advance(1);
  EXPECT_TRUE(agent->refresh_due());
  ASSERT_TRUE(agent->refresh());
  EXPECT_FALSE(agent->refresh_due());
  EXPECT_EQ(agent->next_refresh_at(), clock.now() + kPeriod);
}

TEST_F(AgentTest, AllocationsMarkComponentsUsedAndBumpTheGeneration) {
  auto r = agent->set_allocations(pods(R"({"pods": [
      {"name": "default/llm", "gpus": [1, 0], "core_groups": [0],
       "memory": [{"numa": 0, "bytes": 17179869184}]}]})"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->generation, 2u);
  EXPECT_EQ(agent->topology_generation(), 1u);  // the topology itself did not change
  EXPECT_EQ(gpu_entry(*agent, 0).at("status"), "allocated");
  EXPECT_EQ(gpu_entry(*agent, 0).at("used_by"), "default/llm");
  EXPECT_EQ(gpu_entry(*agent, 2).at("status"), "free");

  auto nrt = agent->node_resource_topology();
  ASSERT_TRUE(nrt);
  const auto& zone0 = nrt->at("zones")[0].at("resources");
  EXPECT_EQ(zone0[2].at("name"), "nvidia.com/gpu");
  EXPECT_EQ(zone0[2].at("available"), "0");
  EXPECT_EQ(zone0[1].at("available"), "48Gi");

  // The same set again changes nothing (a sender may retry).
  auto again = agent->set_allocations(pods(R"({"pods": [
      {"name": "default/llm", "gpus": [0, 1], "core_groups": [0],
       "memory": [{"numa": 0, "bytes": 17179869184}]}]})"));
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->changed);
  EXPECT_EQ(agent->generation(), 2u);

  // An empty set frees everything.
  auto none = agent->set_allocations({});
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->changed);
  EXPECT_EQ(gpu_entry(*agent, 0).at("status"), "free");
}

TEST_F(AgentTest, AllocationsThatDoNotFitChangeNothing) {
  ASSERT_TRUE(agent->set_allocations(pods(R"({"pods": [{"name": "a", "gpus": [0]}]})")));
  const auto before = agent->topology_json();

  auto missing = agent->set_allocations(pods(R"({"pods": [{"name": "a", "gpus": [4]}]})"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("GPU 4 does not exist"), std::string::npos)
      << missing.error().message();
  auto shared = agent->set_allocations(
      pods(R"({"pods": [{"name": "a", "gpus": [1]}, {"name": "b", "gpus": [1]}]})"));
  EXPECT_FALSE(shared);
  auto twice = agent->set_allocations(
      pods(R"({"pods": [{"name": "a", "gpus": [1]}, {"name": "a", "gpus": [2]}]})"));
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message().find("listed twice"), std::string::npos);
  auto no_numa = agent->set_allocations(
      pods(R"({"pods": [{"name": "a", "memory": [{"numa": 2, "bytes": 1}]}]})"));
  EXPECT_FALSE(no_numa);
  auto too_much = agent->set_allocations(
      pods(R"({"pods": [{"name": "a", "memory": [{"numa": 0, "bytes": 68719476737}]}]})"));
  ASSERT_FALSE(too_much);  // 64 GiB + 1 byte on a 64 GiB NUMA node
  EXPECT_NE(too_much.error().message().find("68719476737 bytes on NUMA node 0, which has "
                                            "68719476736"),
            std::string::npos)
      << too_much.error().message();

  EXPECT_EQ(agent->topology_json(), before);
  EXPECT_EQ(agent->generation(), 2u);
}

TEST_F(AgentTest, ATopologyThatLosesAComponentDropsOnlyThePodsHoldingIt) {
  ASSERT_TRUE(agent->set_allocations(pods(R"({"pods": [
      {"name": "keeps", "gpus": [0]}, {"name": "loses", "gpus": [3]}]})")));
  machine.now = small_server("host-a", /*gpus_per_numa=*/1);  // GPUs 2 and 3 gone
  auto r = agent->refresh();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->dropped_pods, std::vector<std::string>{"loses"});
  const auto left = agent->allocations();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].name, "keeps");
  EXPECT_EQ(gpu_entry(*agent, 0).at("used_by"), "keeps");
}

TEST(AgentReservations, AllocationsStayWithinAllocatableMemory) {
  // small_server with the kubelet reserving 4 GiB of NUMA node 0's 64.
  const hw::HostTopology plain = small_server("host-r");
  nlohmann::json j = hw::to_json(plain);
  j["nodes"][plain.numa_nodes()[0]]["reserved_memory_bytes"] = 4 * kGiB;
  auto reserved = hw::topology_from_json(j, "reserved.json");
  ASSERT_TRUE(reserved) << reserved.error().message();
  FakeMachine machine;
  machine.now = *reserved;
  core::ManualClock clock;
  auto agent = NodeAgent::create(options(), machine.fn(), clock);
  ASSERT_TRUE(agent) << agent.error().message();
  auto too_much = (*agent)->set_allocations(
      pods(R"({"pods": [{"name": "a", "memory": [{"numa": 0, "bytes": 64424509441}]}]})"));
  ASSERT_FALSE(too_much);
  EXPECT_NE(too_much.error().message().find("which has 64424509440 allocatable"), std::string::npos)
      << too_much.error().message();
  ASSERT_TRUE((*agent)->set_allocations(
      pods(R"({"pods": [{"name": "a", "memory": [{"numa": 0, "bytes": 64424509440}]}]})")));
  auto nrt = (*agent)->node_resource_topology();
  ASSERT_TRUE(nrt) << nrt.error().message();
  const auto& memory = nrt->at("zones")[0].at("resources")[1];
  EXPECT_EQ(memory.at("name"), "memory");
  EXPECT_EQ(memory.at("capacity"), "64Gi");
  EXPECT_EQ(memory.at("allocatable"), "60Gi");
  EXPECT_EQ(memory.at("available"), "0");
}

TEST(KubeletFlags, ReservedCpusAreTheKubeletsCpuList) {
  EXPECT_EQ(parse_cpu_list("0-1,64-65"), (std::vector<int>{0, 1, 64, 65}));
  EXPECT_EQ(parse_cpu_list("3"), std::vector<int>{3});
  EXPECT_EQ(parse_cpu_list("5,1-2,2"), (std::vector<int>{1, 2, 5}));
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  const auto error = [](std::string_view text) {
    auto r = parse_cpu_list(text);
    return r ? std::string("parsed") : r.error().message();
  };
  EXPECT_NE(error("3-1").find("--reserved-cpus '3-1': the range '3-1' runs backwards; write 1-3"),
            std::string::npos)
      << error("3-1");
  for (const std::string_view bad : {"a", "1-2-3", "1,,2", " 1", "-1", "1-", "8192", "0x1"}) {
    EXPECT_NE(error(bad).find(fmt::format("--reserved-cpus '{}': '", bad)), std::string::npos)
        << bad << ": " << error(bad);
    EXPECT_NE(error(bad).find("is not a CPU number or a range"), std::string::npos) << bad;
  }
}

TEST(KubeletFlags, ReservedMemoryIsTheKubeletsPerNumaList) {
  auto r = parse_reserved_memory({"0:memory=1Gi", "1:memory=2Gi,hugepages-1Gi=2Gi"});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, (std::map<int, std::int64_t>{{0, kGiB}, {1, 2 * kGiB}}));
  auto joined = parse_reserved_memory({"0:memory=1Gi;3:memory=512Mi", ""});
  ASSERT_TRUE(joined) << joined.error().message();
  EXPECT_EQ(*joined, (std::map<int, std::int64_t>{{0, kGiB}, {3, 512LL << 20}}));
  auto hugepages_only = parse_reserved_memory({"0:hugepages-2Mi=1Gi"});
  ASSERT_TRUE(hugepages_only);
  EXPECT_EQ(*hugepages_only, (std::map<int, std::int64_t>{{0, 0}}));

  const auto error = [](std::vector<std::string> values) {
    auto parsed = parse_reserved_memory(values);
    return parsed ? std::string("parsed") : parsed.error().message();
  };
  EXPECT_NE(error({"0"}).find("--reserved-memory '0': '0' is not NUMA:TYPE=QUANTITY"),
            std::string::npos)
      << error({"0"});
  EXPECT_NE(error({"x:memory=1Gi"}).find("'x:memory=1Gi' is not NUMA:TYPE=QUANTITY"),
            std::string::npos);
  EXPECT_NE(error({"0:memory"}).find("'memory' is not TYPE=QUANTITY"), std::string::npos);
  EXPECT_NE(error({"0:cpu=1"}).find("unknown memory type 'cpu'"), std::string::npos);
  EXPECT_NE(error({"0:memory=1Gx"}).find("--reserved-memory '0:memory=1Gx': memory '1Gx'"),
            std::string::npos)
      << error({"0:memory=1Gx"});
  EXPECT_NE(error({"0:memory=1Gi", "0:memory=2Gi"}).find("NUMA node 0 is given twice"),
            std::string::npos);
  EXPECT_NE(error({"0:memory=1Gi,memory=2Gi"}).find("memory is given twice for NUMA node 0"),
            std::string::npos);
}

TEST(AgentAllocations, ParseErrorsNameTheJsonPath) {
  const auto error = [](const char* json) {
    auto r = parse_allocations(nlohmann::json::parse(json));
    return r ? std::string("parsed") : r.error().message();
  };
  EXPECT_NE(error(R"({"pod": []})").find("expected {\"pods\""), std::string::npos);
  EXPECT_NE(error(R"([])").find("expected {\"pods\""), std::string::npos);
  EXPECT_NE(error(R"({"pods": [{"name": "a", "gpus": [0]}, {"name": "b", "gpus": [-1]}]})")
                .find("pods[1].gpus[0]"),
            std::string::npos);
  EXPECT_NE(error(R"({"pods": [{"name": "a", "gpus": "0"}]})").find("pods[0].gpus"),
            std::string::npos);
  EXPECT_NE(error(R"({"pods": [{"gpus": [0]}]})").find("pods[0].name"), std::string::npos);
  EXPECT_NE(error(R"({"pods": [{"name": "a", "gpu": [0]}]})").find("pods[0].gpu: unknown field"),
            std::string::npos);
  EXPECT_NE(error(R"({"pods": [{"name": "a"}]})").find("holds nothing"), std::string::npos);
  EXPECT_NE(
      error(R"({"pods": [{"name": "a", "memory": [{"numa": 0}]}]})").find("pods[0].memory[0]"),
      std::string::npos);
  EXPECT_NE(error(R"({"pods": [7]})").find("pods[0]"), std::string::npos);
  EXPECT_NE(
      error(R"({"pods": [{"name": "a", "gpus": [1, 0, 1]}]})").find("index 1 is listed twice"),
      std::string::npos);
  EXPECT_NE(error(R"({"pods": [{"name": "a", "memory": [{"numa": 0, "bytes": 1},
                                                       {"numa": 0, "bytes": 2}]}]})")
                .find("NUMA node 0 is listed twice"),
            std::string::npos);
  EXPECT_NE(error(R"({"pods": [{"name": "a", "memory": [{"numa": 0, "bytes": 0}]}]})")
                .find("pods[0].memory[0].bytes: expected an integer > 0, got 0"),
            std::string::npos);
  // Nested values are named by type, never dumped (a deep one would recurse as deep).
  EXPECT_NE(error(R"({"pods": [{"name": "a", "gpus": [[[[0]]]]}]})").find("got an array"),
            std::string::npos);
}

TEST(AgentAllocations, JsonRoundTrips) {
  const auto body = nlohmann::json::parse(R"({"pods": [
      {"name": "a", "gpus": [0, 2], "core_groups": [1], "memory": [{"numa": 1, "bytes": 5}]},
      {"name": "b", "gpus": [], "core_groups": [3], "memory": []}]})");
  auto parsed = parse_allocations(body);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(allocations_json(*parsed), body);
}

TEST(AgentCreate, RejectsBadOptions) {
  FakeMachine machine;
  core::ManualClock clock;
  EXPECT_FALSE(NodeAgent::create(options("Bad_Name"), machine.fn(), clock));
  AgentOptions zero = options();
  zero.refresh_period = 0;
  EXPECT_FALSE(NodeAgent::create(zero, machine.fn(), clock));
  EXPECT_FALSE(NodeAgent::create(options(), DiscoverFn{}, clock));
  machine.now = core::fail(core::Domain::kTopology, core::Code::kNotFound, "no hwloc");
  auto r = NodeAgent::create(options(), machine.fn(), clock);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("no hwloc"), std::string::npos);
}

// The loop: refresh every period, push on a new topology and every period, retry failures.
class AgentLoopTest : public AgentTest {
 protected:
  struct Push {
    std::string node;
    nlohmann::json topology;
  };
  std::vector<Push> pushes;
  bool extender_up = true;
  PushFn push() {
    return [this](const std::string& node, const hw::HostTopology& t) -> core::Status {
      if (!extender_up) {
        return core::fail(core::Domain::kK8s, core::Code::kFailedPrecondition, "refused");
      }
      pushes.push_back({node, hw::to_json(t)});
      return {};
    };
  }
};

TEST_F(AgentLoopTest, PushesAtStartThenEveryPeriodAndOnChange) {
  AgentLoop loop(*agent, push(), clock);
  auto first = loop.tick();
  EXPECT_FALSE(first.refreshed);
  EXPECT_TRUE(first.pushed);
  ASSERT_EQ(pushes.size(), 1u);
  EXPECT_EQ(pushes[0].node, "node-a");
  EXPECT_EQ(pushes[0].topology, hw::to_json(*agent->topology()));

  EXPECT_FALSE(loop.tick().pushed);  // nothing new, period not over
  EXPECT_EQ(loop.next_wake(), clock.now() + kPeriod);

  clock.advance(kPeriod);
  auto periodic = loop.tick();
  EXPECT_TRUE(periodic.refreshed);
  ASSERT_TRUE(periodic.refresh);
  EXPECT_FALSE(periodic.refresh->changed);
  EXPECT_TRUE(periodic.pushed);
  EXPECT_EQ(pushes.size(), 2u);
  EXPECT_EQ(machine.discoveries, 2);

  // A GPU appears: found at the next refresh and pushed at once.
  machine.now = small_server("host-a", 3);
  clock.advance(kPeriod);
  auto changed = loop.tick();
  ASSERT_TRUE(changed.refresh);
  EXPECT_TRUE(changed.refresh->changed);
  ASSERT_EQ(pushes.size(), 3u);
  EXPECT_EQ(pushes[2].topology, hw::to_json(*agent->topology()));

  // Allocation changes do not change what is pushed: no extra push.
  ASSERT_TRUE(agent->set_allocations(pods(R"({"pods": [{"name": "a", "gpus": [0]}]})")));
  EXPECT_FALSE(loop.tick().pushed);
}

TEST_F(AgentLoopTest, AFailedPushIsRetriedNextPeriodAndNeverStopsTheLoop) {
  extender_up = false;
  AgentLoop loop(*agent, push(), clock);
  auto failed = loop.tick();
  EXPECT_TRUE(failed.pushed);
  ASSERT_TRUE(failed.push_error);
  EXPECT_NE(failed.push_error->message().find("refused"), std::string::npos);

  extender_up = true;
  clock.advance(kPeriod / 2);
  EXPECT_FALSE(loop.tick().pushed);  // not before the period
  clock.advance(kPeriod / 2);
  auto retried = loop.tick();
  EXPECT_TRUE(retried.pushed);
  EXPECT_FALSE(retried.push_error);
  EXPECT_EQ(pushes.size(), 1u);
}

TEST_F(AgentLoopTest, ANewTopologyIsPushedEvenRightAfterAFailure) {
  extender_up = false;
  AgentLoop loop(*agent, push(), clock);
  ASSERT_TRUE(loop.tick().push_error);
  extender_up = true;
  machine.now = small_server("host-a", 1);
  ASSERT_TRUE(agent->refresh());  // e.g. an earlier refresh in the same period
  EXPECT_TRUE(loop.tick().pushed);
  ASSERT_EQ(pushes.size(), 1u);
  EXPECT_EQ(pushes[0].topology, hw::to_json(*agent->topology()));
}

TEST_F(AgentLoopTest, WithoutPushOnlyRefreshes) {
  AgentLoop loop(*agent, PushFn{}, clock);
  EXPECT_FALSE(loop.tick().pushed);
  EXPECT_EQ(loop.next_wake(), clock.now() + kPeriod);
  clock.advance(kPeriod);
  EXPECT_TRUE(loop.tick().refreshed);
}

}  // namespace
}  // namespace tessera::k8s
