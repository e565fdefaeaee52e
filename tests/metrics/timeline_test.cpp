#include "tessera/metrics/timeline.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace tessera::metrics {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

workload::Kernel named(std::string_view name) {
  workload::Kernel k;
  k.name = name;
  return k;
}
const workload::Kernel kGemm = named("gemm_qkv");
const workload::Kernel kNorm = named("rms_norm");

device::KernelEvent kernel(const workload::Kernel& k, device::DomainId domain, core::Nanos start,
                           core::Nanos end, device::StreamId stream = 1) {
  return {.stream = stream,
          .context = 0,
          .bandwidth_domain = domain,
          .kernel = &k,
          .submission_tag = 9,
          .start = start,
          .end = end,
          .sms = 66};
}

// Names of threads, keyed by (pid, tid), from the trace's metadata events.
std::map<std::pair<int, int>, std::string> thread_names(const json& trace) {
  std::map<std::pair<int, int>, std::string> names;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      names[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"].get<std::string>();
    }
  }
  return names;
}

std::map<int, std::string> process_names(const json& trace) {
  std::map<int, std::string> names;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      names[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
    }
  }
  return names;
}

// "process/thread" of every complete event with this name, in output order.
std::vector<std::string> placements(const json& trace, const std::string& name) {
  const auto threads = thread_names(trace);
  const auto processes = process_names(trace);
  std::vector<std::string> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["name"] != name) continue;
    const int pid = e["pid"].get<int>();
    out.push_back(processes.at(pid) + "/" + threads.at({pid, e["tid"].get<int>()}));
  }
  return out;
}

std::vector<json> complete_events(const json& trace) {
  std::vector<json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") out.push_back(e);
  }
  return out;
}

TEST(Timeline, EmptyTraceIsValidChromeTraceJson) {
  const Timeline timeline;
  const json trace = json::parse(timeline.to_json().dump());
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  EXPECT_TRUE(trace["traceEvents"].is_array());
  EXPECT_EQ(trace["otherData"]["kernel_events_dropped"], 0);
}

TEST(Timeline, NamesProcessesAndTracks) {
  Timeline timeline;
  const int mps = timeline.add_process("mps");
  timeline.add_track(mps, "tenant chat");
  timeline.add_track(mps, "partition all");
  const int slicing = timeline.add_process("time-slicing");
  timeline.add_track(slicing, "tenant chat");
  const json trace = timeline.to_json();

  EXPECT_THAT(process_names(trace),
              testing::UnorderedElementsAre(testing::Pair(testing::_, "mps"),
                                            testing::Pair(testing::_, "time-slicing")));
  std::vector<std::string> threads;
  for (const auto& [key, name] : thread_names(trace)) threads.push_back(name);
  EXPECT_THAT(threads,
              testing::UnorderedElementsAre("tenant chat", "partition all", "tenant chat"));
}

TEST(Timeline, SpansCarryMicrosecondsAndArgs) {
  Timeline timeline;
  const int track = timeline.add_track(timeline.add_process("mps"), "tenant chat");
  timeline.add_span(track, "decode", 1'500, 4'000, {{"batch", 12}});
  const auto events = complete_events(timeline.to_json());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["name"], "decode");
  EXPECT_DOUBLE_EQ(events[0]["ts"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(events[0]["dur"].get<double>(), 2.5);
  EXPECT_EQ(events[0]["args"]["batch"], 12);
}

TEST(Timeline, RoutesKernelsByProcessAndDomain) {
  Timeline timeline;
  const int a = timeline.add_process("static-partitions");
  const int left = timeline.add_track(a, "partition left");
  const int right = timeline.add_track(a, "partition right");
  timeline.route_domain(a, 1, left);
  timeline.route_domain(a, 2, right);
  const int b = timeline.add_process("mps");
  const int all = timeline.add_track(b, "partition all");
  timeline.route_domain(b, device::kWholeDevice, all);

  timeline.set_current_process(a);
  timeline.on_kernel_complete(kernel(kGemm, 1, 0, 1'000));
  timeline.on_kernel_complete(kernel(kNorm, 2, 0, 1'000));
  timeline.on_kernel_complete(kernel(kNorm, 5, 2'000, 3'000));  // no route: "device" track
  timeline.set_current_process(b);
  timeline.on_kernel_complete(kernel(kGemm, device::kWholeDevice, 0, 1'000));
  timeline.on_kernel_complete(kernel(kGemm, 1, 2'000, 3'000));  // routed only in process a

  const json trace = timeline.to_json();
  EXPECT_THAT(
      placements(trace, "gemm_qkv"),
      testing::ElementsAre("static-partitions/partition left", "mps/partition all", "mps/device"));
  EXPECT_THAT(
      placements(trace, "rms_norm"),
      testing::ElementsAre("static-partitions/partition right", "static-partitions/device"));
  const auto events = complete_events(trace);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0]["cat"], "kernel");
  EXPECT_EQ(events[0]["args"]["sms"], 66);
  EXPECT_EQ(events[0]["args"]["tag"], 9);
}

TEST(Timeline, KernelsWithoutAnyProcessGetADefaultOne) {
  Timeline timeline;
  timeline.on_kernel_complete(kernel(kGemm, 0, 0, 10));
  EXPECT_THAT(placements(timeline.to_json(), "gemm_qkv"), testing::ElementsAre("gpu/device"));
}

TEST(Timeline, OverlappingKernelsGetSeparateLanesThatNeverOverlap) {
  Timeline timeline;
  const int p = timeline.add_process("mps");
  const int all = timeline.add_track(p, "partition all");
  timeline.route_domain(p, 0, all);
  // Two streams' kernels overlap; completions arrive in end order, not start order.
  timeline.on_kernel_complete(kernel(kGemm, 0, 100, 300, 1));
  timeline.on_kernel_complete(kernel(kNorm, 0, 0, 400, 2));
  timeline.on_kernel_complete(kernel(kGemm, 0, 400, 500, 1));
  const json trace = timeline.to_json();

  std::vector<std::string> threads;
  for (const auto& [key, name] : thread_names(trace)) threads.push_back(name);
  EXPECT_THAT(threads, testing::ElementsAre("partition all", "partition all (2)"));

  std::map<int, core::Nanos> lane_end;
  for (const auto& e : complete_events(trace)) {
    const core::Nanos start = std::llround(e["ts"].get<double>() * 1000);
    const core::Nanos end = start + std::llround(e["dur"].get<double>() * 1000);
    const int tid = e["tid"].get<int>();
    EXPECT_GE(start, lane_end[tid]) << e.dump();
    lane_end[tid] = end;
  }
}

TEST(Timeline, CapsKernelEventsAndReportsDrops) {
  Timeline timeline(3);
  const int p = timeline.add_process("mps");
  timeline.route_domain(p, 0, timeline.add_track(p, "partition all"));
  for (int i = 0; i < 5; ++i) timeline.on_kernel_complete(kernel(kGemm, 0, i * 10, i * 10 + 5));
  EXPECT_EQ(timeline.kernel_events_dropped(), 2u);
  const json trace = timeline.to_json();
  EXPECT_EQ(complete_events(trace).size(), 3u);
  EXPECT_EQ(trace["otherData"]["kernel_events_dropped"], 2);
  EXPECT_EQ(trace["otherData"]["kernel_events"], 5);
  // The first kernels are the ones kept.
  EXPECT_DOUBLE_EQ(complete_events(trace).back()["ts"].get<double>(), 0.02);
}

TEST(Timeline, CapIsPerProcessSoEveryRunKeepsItsFirstKernels) {
  Timeline timeline(2);
  const int a = timeline.add_process("mps");
  const int b = timeline.add_process("static-partitions");
  timeline.route_domain(a, 0, timeline.add_track(a, "partition all"));
  timeline.route_domain(b, 0, timeline.add_track(b, "partition chat"));
  for (int p : {a, b}) {
    timeline.set_current_process(p);
    for (int i = 0; i < 3; ++i) timeline.on_kernel_complete(kernel(kGemm, 0, i * 10, i * 10 + 5));
  }
  EXPECT_EQ(timeline.kernel_events_dropped(), 2u);
  const json trace = timeline.to_json();
  int per_pid[3] = {0, 0, 0};
  for (const auto& e : complete_events(trace)) ++per_pid[e["pid"].get<int>()];
  EXPECT_EQ(per_pid[1], 2);
  EXPECT_EQ(per_pid[2], 2);
}

TEST(Timeline, WriteProducesTheSameDocumentAsToJson) {
  Timeline timeline;
  const int p = timeline.add_process("mps");
  const int chat = timeline.add_track(p, "tenant \"chat\"");  // needs escaping
  timeline.add_span(chat, "prefill", 0, 2'000);
  timeline.on_kernel_complete(kernel(kGemm, 0, 0, 1'000));
  const std::string path = ::testing::TempDir() + "tessera_timeline_test.json";
  ASSERT_TRUE(timeline.write(path).has_value());
  std::ifstream in(path);
  const json written = json::parse(in);
  EXPECT_EQ(written, timeline.to_json());
  EXPECT_THAT(placements(written, "prefill"), testing::ElementsAre("mps/tenant \"chat\""));
}

TEST(Timeline, InvalidUtf8InNamesStillGivesValidJson) {
  Timeline timeline;
  const int track = timeline.add_track(timeline.add_process("bad \xff name"), "tenant \xfe");
  timeline.add_span(track, "step \xc3", 0, 10, {{"note", "\xff"}});
  const json trace = timeline.to_json();  // parses the written text, so it must be valid JSON
  EXPECT_EQ(complete_events(trace).size(), 1u);
  EXPECT_TRUE(timeline.write(::testing::TempDir() + "tessera_timeline_utf8.json").has_value());
}

TEST(Timeline, WriteToAnImpossiblePathNamesIt) {
  const Timeline timeline;
  const std::string path = "/nonexistent-tessera-dir/deeper/trace.json";
  const core::Status status = timeline.write(path);
  ASSERT_FALSE(status.has_value());
  EXPECT_EQ(status.error().domain(), core::Domain::kIo);
  EXPECT_THAT(status.error().message(), HasSubstr(path));
}

TEST(Timeline, MisuseIsReportedNotIgnored) {
  Timeline timeline;
  const int p = timeline.add_process("mps");
  timeline.add_track(p, "tenant chat");
  EXPECT_TRUE(timeline.status().has_value());
  timeline.add_span(7, "decode", 0, 10);
  ASSERT_FALSE(timeline.status().has_value());
  EXPECT_THAT(timeline.status().error().message(), HasSubstr("track 7"));
  const std::string path = ::testing::TempDir() + "tessera_timeline_misuse.json";
  const core::Status written = timeline.write(path);
  ASSERT_FALSE(written.has_value());
  EXPECT_THAT(written.error().message(), HasSubstr(path));
  EXPECT_THAT(written.error().message(), HasSubstr("track 7"));
}

TEST(Timeline, RejectsReversedSpansAndForeignTracks) {
  Timeline reversed;
  const int track = reversed.add_track(reversed.add_process("mps"), "tenant chat");
  reversed.add_span(track, "decode", 10, 5);
  ASSERT_FALSE(reversed.status().has_value());
  EXPECT_THAT(reversed.status().error().message(), HasSubstr("before its start"));
  EXPECT_TRUE(complete_events(reversed.to_json()).empty());

  Timeline foreign;
  const int a = foreign.add_process("a");
  const int b = foreign.add_process("b");
  foreign.route_domain(a, 1, foreign.add_track(b, "partition x"));
  ASSERT_FALSE(foreign.status().has_value());
  foreign.add_track(5, "nowhere");
  EXPECT_THAT(foreign.status().error().message(), HasSubstr("route_domain"));  // first kept
}

}  // namespace
}  // namespace tessera::metrics
