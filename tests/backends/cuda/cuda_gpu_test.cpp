// CudaGpu against the fake libcuda (tests/support/native/fake_cuda), scheduled "reverse" (newest
// stream first) so that a missing cuStreamWaitEvent would show as a reordering in the execution
// log; and on a real GPU (suite RealGpuCudaGpu, skipped without one).

#include "tessera/backends/cuda/cuda_gpu.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/nvml/fake_nvml_env.hpp"
#include "support/cuda_test_env.hpp"
#include "tessera/backends/cuda/kernel_params.h"
#include "tessera/device/argument_checks.hpp"
#include "tessera/device/wall_clock_executor.hpp"
#include "tessera/gpu/check/determinism_checker.hpp"
#include "tessera/gpu/modes/lithos/lithos_options.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::cuda {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

json reverse_script(json extra = json::object()) {
  json s{{"schedule", "reverse"}, {"kernel_ns", {{"tessera_emulate", 10000}, {"*", 5000}}}};
  for (auto& [k, v] : extra.items()) s[k] = v;
  return s;
}

CudaGpuOptions small_options() {
  CudaGpuOptions o;
  o.scratch_bytes = std::int64_t{1} << 20;  // the fake's device memory is host memory
  o.yield_slots = 8;
  o.max_checkpointed_blocks = 1024;
  return o;
}

// A kernel of `blocks` blocks; the name must outlive the kernel (a literal).
workload::Kernel kernel(std::string_view name, std::int64_t blocks, int checkpoints = 0) {
  workload::Kernel k;
  k.name = name;
  k.blocks = blocks;
  k.block.threads = 128;
  k.block.registers_per_thread = 32;
  k.flops_per_block = 256.0 * 1000;
  k.bytes_per_block = 4096;
  k.checkpoints = checkpoints;
  return k;
}

TesseraEmulateParams decode(const std::string& hex) {
  TesseraEmulateParams p{};
  std::vector<unsigned char> bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<unsigned char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  EXPECT_EQ(bytes.size(), sizeof(p));
  std::memcpy(&p, bytes.data(), std::min(bytes.size(), sizeof(p)));
  return p;
}

std::vector<json> emulate_launches(const json& log) {
  std::vector<json> out;
  for (const auto& op : log["ops"]) {
    if (op.value("op", "") == "launch" && op.value("kernel", "") == TESSERA_KERNEL_EMULATE) {
      out.push_back(op);
    }
  }
  return out;
}

// KernelEvent::kernel is valid only during the notification: names are copied.
struct Recorder final : device::DeviceObserver {
  std::vector<device::KernelEvent> events;
  std::vector<std::string> names;
  void on_kernel_complete(const device::KernelEvent& e) override {
    events.push_back(e);
    names.emplace_back(e.kernel->name);
  }
};

// The fake driver, a CudaGpu over it and an observer.
struct Rig {
  explicit Rig(const json& script, CudaGpuOptions options = small_options())
      : fake(script), driver(fake.open_driver()) {
    if (driver == nullptr) return;
    auto g = CudaGpu::create(*driver, executor, options);
    if (!g) {
      error = g.error().message();
      return;
    }
    gpu = std::move(*g);
    gpu->add_observer(&recorder);
  }
  ~Rig() { gpu.reset(); }  // before the driver
  core::Status drain() { return gpu->run_until(executor.now() + core::seconds(10)); }

  testing::FakeCuda fake;
  std::unique_ptr<DriverLibrary> driver;
  device::WallClockExecutor executor;
  std::unique_ptr<CudaGpu> gpu;
  std::string error;
  Recorder recorder;
};

device::StreamConfig config(device::SmMask sms, device::ContextId context = 1) {
  return device::StreamConfig{.context = context, .sms = sms};
}

TEST(CudaGpu, SpecFromTheCatalogWithTheDriversSmsAndGranules) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  EXPECT_EQ(rig.gpu->spec().name, "H200-SXM-141GB");
  EXPECT_EQ(rig.gpu->spec().sms, 132);
  EXPECT_EQ(rig.gpu->granule_sms(), 8);
  EXPECT_EQ(rig.gpu->granules(), 16);  // 128 SMs; 4 left for the control kernel
  EXPECT_EQ(rig.gpu->spec().green_ctx_sm_granularity, 8);
  const auto caps = rig.gpu->capabilities();
  EXPECT_TRUE(caps.sm_partitions);
  EXPECT_TRUE(caps.block_ranges);
  EXPECT_TRUE(caps.kernel_preemption);
  EXPECT_FALSE(caps.context_preemption);
  EXPECT_FALSE(caps.bandwidth_partitions);
  EXPECT_FALSE(caps.sm_limit);
  EXPECT_FALSE(caps.clock_control);  // no NVML given
  auto domain = rig.gpu->create_bandwidth_domain(0.5);
  ASSERT_FALSE(domain);
  EXPECT_THAT(domain.error().message(), HasSubstr("does not support bandwidth domains"));
  EXPECT_TRUE(caps.stream_priorities);
  EXPECT_TRUE(caps.early_end);
  EXPECT_FALSE(rig.gpu->suspend_context(1));
  EXPECT_FALSE(rig.gpu->set_clock_mhz(1000));
}

TEST(CudaGpu, WithoutYieldSlotsThereIsNoControlKernelAndNoKernelPreemption) {
  auto options = small_options();
  options.yield_slots = 0;
  Rig rig(reverse_script(), options);
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  EXPECT_FALSE(rig.gpu->capabilities().kernel_preemption);
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 8)));
  ASSERT_TRUE(s);
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("c", 4, 3)), 0, nullptr));
  ASSERT_TRUE(rig.gpu->request_yield(*s));  // nothing to stop: runs to its end
  ASSERT_TRUE(rig.drain());
  ASSERT_EQ(rig.recorder.events.size(), 1u);
  EXPECT_FALSE(rig.recorder.events[0].yielded);
  const json log = rig.fake.log();
  for (const auto& op : log["ops"]) {
    EXPECT_NE(op.value("kernel", ""), TESSERA_KERNEL_CONTROL);
  }
}

TEST(CudaGpu, AStreamsPriorityReachesItsCuStreamsInCudasNumbering) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  // One stream on SMs 0-7, one on the whole GPU.
  device::StreamConfig urgent = config(device::SmMask::range(0, 8));
  urgent.priority = 3;
  device::StreamConfig whole = config(device::SmMask{}, 2);
  whole.priority = 1;
  const auto a = rig.gpu->create_stream(urgent);
  const auto b = rig.gpu->create_stream(whole);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(rig.gpu->submit(*a, workload::single_kernel(kernel("a", 4)), 0, nullptr));
  ASSERT_TRUE(rig.gpu->submit(*b, workload::single_kernel(kernel("b", 4)), 0, nullptr));
  ASSERT_TRUE(rig.drain());
  ASSERT_EQ(rig.recorder.events.size(), 2u);
  std::vector<int> priorities;
  const json log = rig.fake.log();
  for (const auto& op : log["ops"]) {
    if (op["op"] != "launch" || op.value("kernel", "") == TESSERA_KERNEL_CONTROL) continue;
    priorities.push_back(op["priority"].get<int>());
  }
  std::ranges::sort(priorities);
  EXPECT_EQ(priorities, (std::vector<int>{-3, -1}));
  // The same priority may be configured again; another one needs another stream.
  EXPECT_TRUE(rig.gpu->configure_stream(*a, urgent));
  urgent.priority = 4;
  const auto changed = rig.gpu->configure_stream(*a, urgent);
  ASSERT_FALSE(changed);
  EXPECT_THAT(changed.error().message(), HasSubstr("fixes a stream's priority"));
}

TEST(CudaGpu, TheControlKernelFallsBackToThePrimaryContextWithoutARemainderContext) {
  // The remainder's green context is the only one made at creation: the first cuGreenCtxCreate.
  Rig rig(reverse_script(
      {{"fail", json::array({{{"call", "cuGreenCtxCreate"}, {"nth", 1}, {"ret", 2}}})}}));
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  EXPECT_TRUE(rig.gpu->capabilities().kernel_preemption);
  const json log = rig.fake.log();
  bool control_in_primary = false;
  for (const auto& op : log["ops"]) {
    if (op.value("kernel", "") == TESSERA_KERNEL_CONTROL) control_in_primary = op["green_ctx"] == 0;
  }
  EXPECT_TRUE(control_in_primary) << log["ops"].dump(1);
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 8)));
  ASSERT_TRUE(s);
  int done = 0;
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("persistent", 6, 4)), 0,
                              [&](const device::SubmissionDone&) { ++done; }));
  ASSERT_TRUE(rig.gpu->request_yield(*s));
  ASSERT_TRUE(rig.drain());
  EXPECT_EQ(done, 1);
  ASSERT_GE(rig.recorder.events.size(), 2u);
  EXPECT_TRUE(rig.recorder.events.front().yielded);
}

TEST(CudaGpu, UnknownGpuNameIsAnErrorNamingTheOption) {
  testing::FakeCuda fake(
      reverse_script({{"devices", json::array({{{"name", "NVIDIA Tesla K80"}, {"sms", 13}}})}}));
  auto driver = fake.open_driver();
  ASSERT_NE(driver, nullptr);
  device::WallClockExecutor executor;
  auto gpu = CudaGpu::create(*driver, executor, small_options());
  ASSERT_FALSE(gpu);
  EXPECT_THAT(gpu.error().message(), HasSubstr("Tesla K80"));
  EXPECT_THAT(gpu.error().message(), HasSubstr("gpu_spec"));
  // Naming a catalog GPU makes it usable.
  auto options = small_options();
  options.gpu_spec = "a100-40gb";
  auto named = CudaGpu::create(*driver, executor, options);
  ASSERT_TRUE(named) << named.error().message();
  EXPECT_EQ((*named)->spec().sms, 13);
}

TEST(CudaGpu, KernelsOfOneStreamStayInOrderAcrossRemaps) {
  auto options = small_options();
  options.issue_window = 8;  // everything issued at once: only the waits keep the order
  Rig rig(reverse_script(), options);
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  const auto a = device::SmMask::range(0, 16);
  const auto b = device::SmMask::range(64, 96);
  auto s = rig.gpu->create_stream(config(a));
  ASSERT_TRUE(s);
  static constexpr std::string_view kNames[] = {"k0", "k1", "k2", "k3", "k4", "k5"};
  int done = 0;
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(rig.gpu->configure_stream(*s, config(i % 2 == 0 ? a : b)));
    ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel(kNames[i], i + 1)), i,
                                [&](const device::SubmissionDone&) { ++done; }));
  }
  ASSERT_TRUE(rig.drain());
  EXPECT_EQ(done, 6);
  // The log runs them in submission order (virtual_blocks tells them apart), alternating contexts.
  const auto launches = emulate_launches(rig.fake.log());
  ASSERT_EQ(launches.size(), 6u);
  for (std::size_t i = 0; i < launches.size(); ++i) {
    EXPECT_EQ(decode(launches[i]["params_hex"]).virtual_blocks, i + 1) << launches[i].dump();
    EXPECT_EQ(launches[i]["sms"], i % 2 == 0 ? 16 : 32);
  }
  EXPECT_NE(launches[0]["green_ctx"], launches[1]["green_ctx"]);
  // Observers see the same order, each kernel starting after the previous one ended.
  ASSERT_EQ(rig.recorder.events.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(rig.recorder.names[i], kNames[i]);
    EXPECT_EQ(rig.recorder.events[i].sms, i % 2 == 0 ? 16 : 32);
    EXPECT_LE(rig.recorder.events[i].start, rig.recorder.events[i].end);
    if (i > 0) {
      EXPECT_GE(rig.recorder.events[i].start, rig.recorder.events[i - 1].end);
    }
  }
}

TEST(CudaGpu, ARemapWaitsOnThePreviousKernelsEvent) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 8)));
  ASSERT_TRUE(s);
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("first", 2)), 0, nullptr));
  ASSERT_TRUE(rig.gpu->configure_stream(*s, config(device::SmMask::range(8, 16))));
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("second", 3)), 1, nullptr));
  ASSERT_TRUE(rig.drain());
  const json log = rig.fake.log();
  // The second launch's stream executes a wait on an event recorded, before it, in the first's.
  std::optional<std::size_t> first;
  std::optional<std::size_t> wait;
  std::optional<std::size_t> second;
  std::uint64_t first_stream = 0;
  for (std::size_t i = 0; i < log["ops"].size(); ++i) {
    const json& op = log["ops"][i];
    if (op["op"] == "launch" && op.value("kernel", "") == TESSERA_KERNEL_EMULATE) {
      (first ? second : first) = i;
      if (!second) first_stream = op["stream"];
    }
    if (op["op"] == "wait" && !op["record"].is_null() && first && !second &&
        op["stream"] != first_stream) {
      wait = i;
    }
  }
  ASSERT_TRUE(first && wait && second) << log["ops"].dump(1);
  EXPECT_LT(*first, *wait);
  EXPECT_LT(*wait, *second);
  EXPECT_NE(log["ops"][*first]["stream"], log["ops"][*second]["stream"]);
}

std::set<int> sm_ids_of(const json& log, std::uint64_t green) {
  for (const auto& g : log["green_contexts"]) {
    if (g["id"] == green) return g["sm_ids"].get<std::set<int>>();
  }
  ADD_FAILURE() << "no green context " << green;
  return {};
}

TEST(CudaGpu, DisjointMasksRunInGreenContextsWithDisjointSms) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s0 = rig.gpu->create_stream(config(device::SmMask::range(0, 64), 1));
  auto s1 = rig.gpu->create_stream(config(device::SmMask::range(64, 128), 2));
  ASSERT_TRUE(s0 && s1);
  ASSERT_TRUE(rig.gpu->submit(*s0, workload::single_kernel(kernel("a", 4)), 0, nullptr));
  ASSERT_TRUE(rig.gpu->submit(*s1, workload::single_kernel(kernel("b", 4)), 0, nullptr));
  ASSERT_TRUE(rig.drain());
  const json log = rig.fake.log();
  const auto launches = emulate_launches(log);
  ASSERT_EQ(launches.size(), 2u);
  ASSERT_NE(launches[0]["green_ctx"], launches[1]["green_ctx"]);
  const auto x = sm_ids_of(log, launches[0]["green_ctx"]);
  const auto y = sm_ids_of(log, launches[1]["green_ctx"]);
  EXPECT_EQ(x.size(), 64u);
  EXPECT_EQ(y.size(), 64u);
  for (const int sm : x) EXPECT_FALSE(y.contains(sm)) << "SM " << sm << " in both";
  ASSERT_EQ(rig.recorder.events.size(), 2u);
  for (const auto& e : rig.recorder.events) EXPECT_EQ(e.sms, 64);
}

TEST(CudaGpu, AUnionMaskGetsOneGreenContextCoveringBothGranules) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  const auto g0 = device::SmMask::range(0, 8);
  const auto g1 = device::SmMask::range(8, 16);
  auto s = rig.gpu->create_stream(config(g0 | g1));
  ASSERT_TRUE(s);
  EXPECT_EQ(*rig.gpu->partition_sms(*s), 16);
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("u", 4)), 0, nullptr));
  ASSERT_TRUE(rig.drain());
  const json log = rig.fake.log();
  const auto launches = emulate_launches(log);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0]["sms"], 16);
  EXPECT_EQ(sm_ids_of(log, launches[0]["green_ctx"]).size(), 16u);
  ASSERT_EQ(rig.recorder.events.size(), 1u);
  EXPECT_EQ(rig.recorder.events[0].sms, 16);
  // A mask inside one granule gets that granule; the whole GPU gets the primary context.
  ASSERT_TRUE(rig.gpu->configure_stream(*s, config(device::SmMask::range(2, 6))));
  EXPECT_EQ(*rig.gpu->partition_sms(*s), 8);
  ASSERT_TRUE(rig.gpu->configure_stream(*s, config(device::SmMask{})));
  EXPECT_EQ(*rig.gpu->partition_sms(*s), 132);
}

TEST(CudaGpu, TheLeastRecentlyUsedIdleGreenContextIsDestroyedWhenTheCacheIsFull) {
  auto options = small_options();
  options.max_green_contexts = 2;
  Rig rig(reverse_script(), options);
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 8)));
  ASSERT_TRUE(s);
  static constexpr std::string_view kNames[] = {"g0", "g1", "g2"};
  for (int g = 0; g < 3; ++g) {
    ASSERT_TRUE(rig.gpu->configure_stream(*s, config(device::SmMask::range(8 * g, 8 * g + 8))));
    ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel(kNames[g], 2)), 0, nullptr));
    ASSERT_TRUE(rig.drain());
  }
  const json log = rig.fake.log();
  // Granule 0's context went (granule 1's still held the stream's last event); its stream first.
  std::vector<std::set<int>> destroyed;
  for (const auto& g : log["green_contexts"]) {
    if (g["destroyed"] == true) destroyed.push_back(g["sm_ids"].get<std::set<int>>());
  }
  ASSERT_EQ(destroyed.size(), 1u) << log["green_contexts"].dump(1);
  const auto launches = emulate_launches(log);
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(destroyed[0], sm_ids_of(log, launches[0]["green_ctx"]));
  for (const auto& note : log["notes"]) {
    EXPECT_NE(note.value("call", ""), "cuGreenCtxDestroy") << "destroyed with live streams";
  }
  EXPECT_EQ(rig.recorder.events.size(), 3u);
}

TEST(CudaGpu, TeardownWithKernelsInFlightAndEmptySubmissionsRefused) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 8)));
  ASSERT_TRUE(s);
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("k1", 2)), 0, nullptr));
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("k2", 2)), 1, nullptr));
  // As by the simulator: a sequence without kernels is refused.
  const auto empty =
      rig.gpu->submit(*s, std::make_shared<const workload::KernelSequence>(), 2, nullptr);
  ASSERT_FALSE(empty);
  EXPECT_THAT(empty.error().message(), HasSubstr("no kernels"));
  // The device goes with both kernels in flight; every event and stream it made is destroyed
  // once (the fake's calls log their return codes).
  rig.gpu.reset();
  const json log = rig.fake.log();
  for (const auto& call : log["calls"]) {
    EXPECT_EQ(call.value("ret", 0), 0) << call.dump();
  }
}

TEST(CudaGpu, SubmitRangeLaunchesExactlyTheRangesBlocks) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 32)));
  ASSERT_TRUE(s);
  const auto seq = workload::single_kernel(kernel("atom", 10));
  int done = 0;
  ASSERT_TRUE(rig.gpu->submit_range(*s, seq, {.begin = 3, .end = 7}, 5,
                                    [&](const device::SubmissionDone& d) {
                                      EXPECT_EQ(d.tag, 5u);
                                      ++done;
                                    }));
  ASSERT_TRUE(rig.drain());
  EXPECT_EQ(done, 1);
  const auto launches = emulate_launches(rig.fake.log());
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0]["grid"][0], 4);
  const auto p = decode(launches[0]["params_hex"]);
  EXPECT_EQ(p.block_offset, 3u);
  EXPECT_EQ(p.virtual_blocks, 10u);
  ASSERT_EQ(rig.recorder.events.size(), 1u);
  EXPECT_EQ(rig.recorder.events[0].blocks, (device::BlockRange{.begin = 3, .end = 7}));
  // Ranges outside the grid are refused, as by the simulator.
  EXPECT_FALSE(rig.gpu->submit_range(*s, seq, {.begin = 8, .end = 11}, 6, nullptr));
}

TEST(CudaGpu, RequestYieldStopsAKernelAndTheRestCompletes) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 32)));
  ASSERT_TRUE(s);
  int done = 0;
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("persistent", 6, 4)), 9,
                              [&](const device::SubmissionDone&) { ++done; }));
  ASSERT_TRUE(rig.gpu->request_yield(*s));
  // The stream moves while the kernel is stopped: its rest runs in the new partition.
  ASSERT_TRUE(rig.gpu->configure_stream(*s, config(device::SmMask::range(64, 72))));
  ASSERT_TRUE(rig.drain());
  EXPECT_EQ(done, 1);
  ASSERT_GE(rig.recorder.events.size(), 2u);
  EXPECT_TRUE(rig.recorder.events.front().yielded);
  EXPECT_FALSE(rig.recorder.events.back().yielded);
  EXPECT_EQ(rig.recorder.events.back().sms, 8);
  for (const auto& e : rig.recorder.events) EXPECT_EQ(e.submission_tag, 9u);
  // Every launch ran the same grid with the same progress buffer; the last finished every block.
  const auto launches = emulate_launches(rig.fake.log());
  ASSERT_EQ(launches.size(), rig.recorder.events.size());
  EXPECT_GT(launches.front()["yielded"].get<int>(), 0);
  EXPECT_EQ(launches.back()["yielded"], 0);
  EXPECT_EQ(decode(launches.front()["params_hex"]).progress,
            decode(launches.back()["params_hex"]).progress);
  EXPECT_EQ(rig.gpu->stats().kernels_completed, 1);
}

TEST(CudaGpu, AKernelAboveTheProgressBufferRunsToItsEnd) {
  Rig rig(reverse_script());  // max_checkpointed_blocks 1024
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 32)));
  ASSERT_TRUE(s);
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("big", 2048, 4)), 0, nullptr));
  ASSERT_TRUE(rig.gpu->request_yield(*s));
  ASSERT_TRUE(rig.drain());
  ASSERT_EQ(rig.recorder.events.size(), 1u);
  EXPECT_FALSE(rig.recorder.events[0].yielded);
  const auto launches = emulate_launches(rig.fake.log());
  ASSERT_EQ(launches.size(), 1u);
  const auto p = decode(launches[0]["params_hex"]);
  EXPECT_EQ(p.yield_flag, 0u);  // no flag, no progress buffer: it cannot stop
  EXPECT_EQ(p.progress, 0u);
}

TEST(CudaGpu, AYieldRequestedWhileTheRestWaitsStopsTheRestAtItsNextCheckpoint) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 32)));
  ASSERT_TRUE(s);
  int done = 0;
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("persistent", 6, 4)), 1,
                              [&](const device::SubmissionDone&) { ++done; }));
  ASSERT_TRUE(rig.gpu->request_yield(*s));
  // Polls until the first launch has yielded (its rest waits for the flag to be cleared).
  for (int i = 0; i < 100 && rig.recorder.events.empty(); ++i) ASSERT_TRUE(rig.gpu->poll());
  ASSERT_EQ(rig.recorder.events.size(), 1u);
  ASSERT_TRUE(rig.recorder.events[0].yielded);
  ASSERT_TRUE(rig.gpu->request_yield(*s));
  ASSERT_TRUE(rig.drain());
  EXPECT_EQ(done, 1);
  // Yielded, yielded again (one more chunk per block), then the rest of the rest.
  ASSERT_EQ(rig.recorder.events.size(), 3u);
  EXPECT_TRUE(rig.recorder.events[1].yielded);
  EXPECT_FALSE(rig.recorder.events[2].yielded);
}

// --- Spans (submit_span) and end_after_head ---

// The grids of the emulated launches, in the order the fake ran them (the kernels of these tests
// have block counts of their own, so a grid names its kernel).
std::vector<int> grids_run(const json& log) {
  std::vector<int> out;
  for (const auto& launch : emulate_launches(log)) out.push_back(launch["grid"][0].get<int>());
  return out;
}

// cuLaunchKernel* calls made so far (issued launches, run or not; the control kernel's too).
int launch_calls(const json& log) {
  int n = 0;
  for (const auto& call : log["calls"]) {
    if (call.value("call", "").starts_with("cuLaunchKernel")) ++n;
  }
  return n;
}

// What done callbacks reported, in the order they ran.
struct Dones {
  std::vector<device::SubmissionDone> got;
  device::DoneCallback callback() {
    return [this](const device::SubmissionDone& d) { got.push_back(d); };
  }
};

workload::SequenceCursor at(std::uint32_t group, std::int32_t rep, std::uint32_t index) {
  return {.group = group, .rep = rep, .index = index};
}

// a b a b a b | c | d e d e: 11 kernels in three groups; grids 2, 3, 5, 7 and 11.
workload::KernelSequencePtr layered_sequence() {
  workload::KernelSequence s;
  s.groups.push_back({.kernels = {kernel("a", 2), kernel("b", 3)}, .repeat = 3});
  s.groups.push_back({.kernels = {kernel("c", 5)}, .repeat = 1});
  s.groups.push_back({.kernels = {kernel("d", 7), kernel("e", 11)}, .repeat = 2});
  return std::make_shared<const workload::KernelSequence>(std::move(s));
}

// a b, ten times: 20 kernels.
workload::KernelSequencePtr long_sequence() {
  workload::KernelSequence s;
  s.groups.push_back({.kernels = {kernel("a", 2), kernel("b", 3)}, .repeat = 10});
  return std::make_shared<const workload::KernelSequence>(std::move(s));
}

// w x y z: grids 13, 17, 19 and 23.
workload::KernelSequencePtr four_kernels() {
  workload::KernelSequence s;
  s.groups.push_back(
      {.kernels = {kernel("w", 13), kernel("x", 17), kernel("y", 19), kernel("z", 23)}});
  return std::make_shared<const workload::KernelSequence>(std::move(s));
}

std::vector<std::uint64_t> tags_seen(const Recorder& recorder) {
  std::vector<std::uint64_t> out;
  for (const auto& e : recorder.events) out.push_back(e.submission_tag);
  return out;
}

TEST(CudaGpu, ASpanRunsExactlyItsKernelsFromItsStart) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 32)));
  ASSERT_TRUE(s);
  const auto seq = layered_sequence();
  ASSERT_EQ(seq->kernel_count(), 11);
  Dones dones;
  // From the second kernel of the first group's second repetition, on into the next group.
  ASSERT_TRUE(
      rig.gpu->submit_span(*s, seq, {.from = at(0, 1, 1), .count = 4}, 1, dones.callback()));
  // From the middle of a repetition into the next one.
  ASSERT_TRUE(
      rig.gpu->submit_span(*s, seq, {.from = at(2, 0, 1), .count = 2}, 2, dones.callback()));
  // The sequence's last kernel alone.
  ASSERT_TRUE(
      rig.gpu->submit_span(*s, seq, {.from = at(2, 1, 1), .count = 1}, 3, dones.callback()));
  // The whole sequence, as a span and as a submission; then a block range.
  ASSERT_TRUE(rig.gpu->submit_span(*s, seq, {.from = {}, .count = 11}, 4, dones.callback()));
  ASSERT_TRUE(rig.gpu->submit(*s, seq, 5, dones.callback()));
  ASSERT_TRUE(rig.gpu->submit_range(*s, workload::single_kernel(kernel("atom", 10)),
                                    {.begin = 3, .end = 7}, 6, dones.callback()));
  ASSERT_TRUE(rig.drain());

  const std::vector<int> whole{2, 3, 2, 3, 2, 3, 5, 7, 11, 7, 11};
  std::vector<int> grids{3, 2, 3, 5, 11, 7, 11};
  grids.insert(grids.end(), whole.begin(), whole.end());
  grids.insert(grids.end(), whole.begin(), whole.end());
  grids.push_back(4);  // the range's blocks
  EXPECT_EQ(grids_run(rig.fake.log()), grids);

  const std::vector<std::string> whole_names{"a", "b", "a", "b", "a", "b", "c", "d", "e", "d", "e"};
  std::vector<std::string> names{"b", "a", "b", "c", "e", "d", "e"};
  names.insert(names.end(), whole_names.begin(), whole_names.end());
  names.insert(names.end(), whole_names.begin(), whole_names.end());
  names.emplace_back("atom");
  EXPECT_EQ(rig.recorder.names, names);

  std::vector<std::uint64_t> tags;
  const std::vector<std::pair<std::uint64_t, std::int64_t>> counts{{1, 4},  {2, 2},  {3, 1},
                                                                   {4, 11}, {5, 11}, {6, 1}};
  for (const auto& [tag, count] : counts) tags.insert(tags.end(), count, tag);
  EXPECT_EQ(tags_seen(rig.recorder), tags);
  ASSERT_FALSE(rig.recorder.events.empty());
  EXPECT_EQ(rig.recorder.events.back().blocks, (device::BlockRange{.begin = 3, .end = 7}));

  ASSERT_EQ(dones.got.size(), counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) {
    EXPECT_EQ(dones.got[i].stream, *s);
    EXPECT_EQ(dones.got[i].tag, counts[i].first);
    EXPECT_EQ(dones.got[i].kernels, counts[i].second) << "tag " << counts[i].first;
    EXPECT_LE(dones.got[i].started, dones.got[i].finished);
  }
  EXPECT_EQ(rig.gpu->stats().kernels_completed, 4 + 2 + 1 + 11 + 11 + 1);
}

TEST(CudaGpu, ABadSpanIsRefusedAsByEveryBackend) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 32)));
  ASSERT_TRUE(s);
  const auto seq = layered_sequence();  // 11 kernels; groups of 2 x 3, 1 x 1 and 2 x 2
  const auto never = [](const device::SubmissionDone& d) {
    ADD_FAILURE() << "a refused span (tag " << d.tag << ") reported done";
  };
  const std::vector<device::KernelSpan> bad{
      {.from = {}, .count = 0},            // empty
      {.from = {}, .count = -1},           // negative
      {.from = {}, .count = 12},           // one past the sequence's end
      {.from = at(2, 0, 1), .count = 4},   // 3 kernels from there
      {.from = at(0, 2, 1), .count = 7},   // 6 kernels from there
      {.from = at(0, 0, 2), .count = 1},   // group 0 has kernels 0 and 1
      {.from = at(1, 0, 1), .count = 1},   // group 1 has kernel 0
      {.from = at(0, 3, 0), .count = 1},   // group 0 repeats 3 times
      {.from = at(1, 1, 0), .count = 1},   // group 1 runs once
      {.from = at(0, -1, 0), .count = 1},  // no repetition before the first
      {.from = at(3, 0, 0), .count = 1},   // there are 3 groups
  };
  for (const auto& span : bad) {
    SCOPED_TRACE(::testing::Message()
                 << "group " << span.from.group << ", repetition " << span.from.rep << ", kernel "
                 << span.from.index << ", count " << span.count);
    const auto want = device::check_span(*s, seq, span);
    ASSERT_FALSE(want);
    const auto got = rig.gpu->submit_span(*s, seq, span, 1, never);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code(), core::Code::kInvalidArgument);
    EXPECT_EQ(got.error().message(), want.error().message());
  }
  const device::KernelSpan first{.from = {}, .count = 1};
  // No sequence.
  {
    const auto want = device::check_span(*s, nullptr, first);
    ASSERT_FALSE(want);
    const auto got = rig.gpu->submit_span(*s, nullptr, first, 2, never);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code(), core::Code::kInvalidArgument);
    EXPECT_EQ(got.error().message(), want.error().message());
  }
  // No such stream (one stream was created).
  {
    const auto got = rig.gpu->submit_span(*s + 1, seq, first, 3, never);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code(), core::Code::kNotFound);
    EXPECT_EQ(got.error().message(), device::check_stream_id(*s + 1, 1).error().message());
  }
  // Nothing was queued, and the device still takes a good span.
  Dones dones;
  ASSERT_TRUE(
      rig.gpu->submit_span(*s, seq, {.from = at(0, 2, 1), .count = 2}, 4, dones.callback()));
  ASSERT_TRUE(rig.drain());
  EXPECT_EQ(grids_run(rig.fake.log()), (std::vector<int>{3, 5}));
  EXPECT_EQ(tags_seen(rig.recorder), (std::vector<std::uint64_t>{4, 4}));
  ASSERT_EQ(dones.got.size(), 1u);
  EXPECT_EQ(dones.got[0].tag, 4u);
  EXPECT_EQ(dones.got[0].kernels, 2);
  EXPECT_EQ(rig.gpu->stats().kernels_completed, 2);
}

TEST(CudaGpu, EndAfterHeadEndsASubmissionAfterItsIssuedKernels) {
  auto options = small_options();
  options.issue_window = 3;
  Rig rig(reverse_script(), options);
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  ASSERT_TRUE(rig.gpu->capabilities().early_end);
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 32)));
  ASSERT_TRUE(s);
  const auto seq = long_sequence();
  Dones dones;
  // Cut as soon as it is handed over: the window's kernels are issued and run, the rest never
  // does; the submission queued behind it runs whole.
  ASSERT_TRUE(
      rig.gpu->submit_span(*s, seq, {.from = at(0, 1, 1), .count = 15}, 1, dones.callback()));
  ASSERT_TRUE(rig.gpu->submit(*s, four_kernels(), 2, dones.callback()));
  ASSERT_TRUE(rig.gpu->end_after_head(*s));
  ASSERT_TRUE(rig.drain());
  EXPECT_EQ(grids_run(rig.fake.log()), (std::vector<int>{3, 2, 3, 13, 17, 19, 23}));
  EXPECT_EQ(tags_seen(rig.recorder), (std::vector<std::uint64_t>{1, 1, 1, 2, 2, 2, 2}));
  ASSERT_EQ(dones.got.size(), 2u);
  EXPECT_EQ(dones.got[0].tag, 1u);
  EXPECT_EQ(dones.got[0].kernels, options.issue_window);
  EXPECT_EQ(dones.got[1].tag, 2u);
  EXPECT_EQ(dones.got[1].kernels, 4);
  EXPECT_EQ(rig.gpu->stats().kernels_completed, 7);

  // Cut while it runs: the kernels that ran and those issued when it was cut; nothing more.
  ASSERT_TRUE(rig.gpu->submit_span(*s, seq, {.from = {}, .count = 20}, 3, dones.callback()));
  const std::size_t before = rig.recorder.events.size();
  for (int i = 0; i < 100 && rig.recorder.events.size() == before; ++i) {
    ASSERT_TRUE(rig.gpu->poll());
  }
  const auto ran = static_cast<std::int64_t>(rig.recorder.events.size() - before);
  ASSERT_GT(ran, 0);
  ASSERT_LT(ran + options.issue_window, 20);  // so that the cut leaves kernels out
  ASSERT_TRUE(rig.gpu->end_after_head(*s));
  ASSERT_TRUE(rig.drain());
  ASSERT_EQ(dones.got.size(), 3u);
  EXPECT_EQ(dones.got[2].tag, 3u);
  EXPECT_EQ(dones.got[2].kernels, ran + options.issue_window);
  ASSERT_EQ(static_cast<std::int64_t>(rig.recorder.events.size() - before),
            ran + options.issue_window);
  for (std::size_t i = before; i < rig.recorder.events.size(); ++i) {
    EXPECT_EQ(rig.recorder.events[i].submission_tag, 3u);
    EXPECT_EQ(rig.recorder.names[i], (i - before) % 2 == 0 ? "a" : "b");
  }
  EXPECT_EQ(emulate_launches(rig.fake.log()).size(), 7 + ran + options.issue_window);
  EXPECT_EQ(rig.gpu->stats().kernels_completed, 7 + ran + options.issue_window);
}

TEST(CudaGpu, EndAfterHeadLeavesALaterSubmissionAlone) {
  // Window 2: the head submission's two kernels fill it and the next has nothing issued;
  // window 3: the next has its first kernel issued behind them.
  for (const int window : {2, 3}) {
    SCOPED_TRACE(::testing::Message() << "issue_window " << window);
    auto options = small_options();
    options.issue_window = window;
    Rig rig(reverse_script(), options);
    ASSERT_NE(rig.gpu, nullptr) << rig.error;
    auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 32)));
    ASSERT_TRUE(s);
    Dones dones;
    // b a: both issued at once, so the span has issued its last kernel.
    ASSERT_TRUE(rig.gpu->submit_span(*s, layered_sequence(), {.from = at(0, 0, 1), .count = 2}, 1,
                                     dones.callback()));
    ASSERT_TRUE(rig.gpu->end_after_head(*s));
    ASSERT_TRUE(rig.gpu->submit(*s, four_kernels(), 2, dones.callback()));
    ASSERT_TRUE(rig.gpu->end_after_head(*s));
    ASSERT_TRUE(rig.drain());
    EXPECT_EQ(grids_run(rig.fake.log()), (std::vector<int>{3, 2, 13, 17, 19, 23}));
    EXPECT_EQ(tags_seen(rig.recorder), (std::vector<std::uint64_t>{1, 1, 2, 2, 2, 2}));
    ASSERT_EQ(dones.got.size(), 2u);
    EXPECT_EQ(dones.got[0].tag, 1u);
    EXPECT_EQ(dones.got[0].kernels, 2);
    EXPECT_EQ(dones.got[1].tag, 2u);
    EXPECT_EQ(dones.got[1].kernels, 4);
    EXPECT_EQ(rig.gpu->stats().kernels_completed, 6);
  }
}

TEST(CudaGpu, EndAfterHeadOnAnIdleStreamDoesNothing) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s0 = rig.gpu->create_stream(config(device::SmMask::range(0, 8), 1));
  auto s1 = rig.gpu->create_stream(config(device::SmMask::range(8, 16), 2));
  ASSERT_TRUE(s0 && s1);
  Dones dones;
  // A stream that never had work; then one whose neighbour has work, which is left alone.
  ASSERT_TRUE(rig.gpu->end_after_head(*s0));
  ASSERT_TRUE(rig.gpu->submit(*s1, four_kernels(), 1, dones.callback()));
  ASSERT_TRUE(rig.gpu->end_after_head(*s0));
  // No such stream (two were created).
  const auto missing = rig.gpu->end_after_head(2);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), core::Code::kNotFound);
  EXPECT_EQ(missing.error().message(), device::check_stream_id(2, 2).error().message());
  ASSERT_TRUE(rig.drain());
  ASSERT_EQ(dones.got.size(), 1u);
  EXPECT_EQ(dones.got[0].tag, 1u);
  EXPECT_EQ(dones.got[0].kernels, 4);
  // A stream whose work has all run: nothing to end, and nothing carries over to its next
  // submission.
  ASSERT_TRUE(rig.gpu->submit_span(*s0, layered_sequence(), {.from = at(1, 0, 0), .count = 2}, 2,
                                   dones.callback()));
  ASSERT_TRUE(rig.drain());
  ASSERT_TRUE(rig.gpu->end_after_head(*s0));
  ASSERT_TRUE(rig.gpu->submit(*s0, four_kernels(), 3, dones.callback()));
  ASSERT_TRUE(rig.drain());
  EXPECT_EQ(grids_run(rig.fake.log()), (std::vector<int>{13, 17, 19, 23, 5, 7, 13, 17, 19, 23}));
  ASSERT_EQ(dones.got.size(), 3u);
  EXPECT_EQ(dones.got[1].tag, 2u);
  EXPECT_EQ(dones.got[1].kernels, 2);
  EXPECT_EQ(dones.got[2].tag, 3u);
  EXPECT_EQ(dones.got[2].kernels, 4);
  EXPECT_EQ(rig.gpu->stats().kernels_completed, 10);
}

TEST(CudaGpu, EndAfterHeadWhileAYieldedKernelWaitsRunsItsRestAndNoMore) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 32)));
  ASSERT_TRUE(s);
  // p has checkpoints (issued alone); q and r wait behind it.
  workload::KernelSequence seq;
  seq.groups.push_back({.kernels = {kernel("p", 6, 4), kernel("q", 3), kernel("r", 5)}});
  Dones dones;
  ASSERT_TRUE(rig.gpu->submit(*s, std::make_shared<const workload::KernelSequence>(seq), 1,
                              dones.callback()));
  ASSERT_TRUE(rig.gpu->request_yield(*s));
  for (int i = 0; i < 100 && rig.recorder.events.empty(); ++i) ASSERT_TRUE(rig.gpu->poll());
  ASSERT_EQ(rig.recorder.events.size(), 1u);
  ASSERT_TRUE(rig.recorder.events[0].yielded);
  EXPECT_TRUE(dones.got.empty());
  // Queued behind it, before the cut: it must run whole.
  ASSERT_TRUE(rig.gpu->submit(*s, four_kernels(), 2, dones.callback()));
  ASSERT_TRUE(rig.gpu->end_after_head(*s));
  ASSERT_TRUE(rig.drain());
  // p's first part, its rest, then the later submission; q and r never.
  EXPECT_EQ(grids_run(rig.fake.log()), (std::vector<int>{6, 6, 13, 17, 19, 23}));
  EXPECT_EQ(rig.recorder.names, (std::vector<std::string>{"p", "p", "w", "x", "y", "z"}));
  ASSERT_EQ(rig.recorder.events.size(), 6u);
  EXPECT_FALSE(rig.recorder.events[1].yielded);
  EXPECT_EQ(tags_seen(rig.recorder), (std::vector<std::uint64_t>{1, 1, 2, 2, 2, 2}));
  ASSERT_EQ(dones.got.size(), 2u);
  EXPECT_EQ(dones.got[0].tag, 1u);
  EXPECT_EQ(dones.got[0].kernels, 1);  // p, counted once
  EXPECT_EQ(dones.got[1].tag, 2u);
  EXPECT_EQ(dones.got[1].kernels, 4);
  EXPECT_EQ(rig.gpu->stats().kernels_completed, 5);
}

TEST(CudaGpu, EndAfterHeadBeforeAnyKernelIsIssuedRunsTheFirstAlone) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 32)));
  ASSERT_TRUE(s);
  const int launches_at_start = launch_calls(rig.fake.log());  // the control kernel
  Dones dones;
  // x (one checkpoint) goes alone; the span behind it starts with a checkpointed kernel too.
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("x", 6, 1)), 1, dones.callback()));
  workload::KernelSequence later;
  later.groups.push_back({.kernels = {kernel("u", 5, 2), kernel("v", 7), kernel("w", 9)}});
  ASSERT_TRUE(rig.gpu->submit_span(*s, std::make_shared<const workload::KernelSequence>(later),
                                   {.from = {}, .count = 3}, 2, dones.callback()));
  // x yields; asked again while its rest waits, the rest runs with the yield flag up and ends
  // (its one checkpoint was its last). The flag is then cleared, and u, which can yield, waits
  // for that: the span has nothing issued.
  ASSERT_TRUE(rig.gpu->request_yield(*s));
  for (int i = 0; i < 100 && rig.recorder.events.empty(); ++i) ASSERT_TRUE(rig.gpu->poll());
  ASSERT_EQ(rig.recorder.events.size(), 1u);
  ASSERT_TRUE(rig.recorder.events[0].yielded);
  ASSERT_TRUE(rig.gpu->request_yield(*s));
  for (int i = 0; i < 100 && rig.recorder.events.size() < 2; ++i) ASSERT_TRUE(rig.gpu->poll());
  ASSERT_EQ(rig.recorder.events.size(), 2u);
  ASSERT_FALSE(rig.recorder.events[1].yielded);
  ASSERT_EQ(dones.got.size(), 1u);
  EXPECT_EQ(dones.got[0].tag, 1u);
  EXPECT_EQ(dones.got[0].kernels, 1);
  ASSERT_EQ(launch_calls(rig.fake.log()), launches_at_start + 2) << "u was issued already";

  ASSERT_TRUE(rig.gpu->end_after_head(*s));
  ASSERT_TRUE(rig.drain());
  EXPECT_EQ(grids_run(rig.fake.log()), (std::vector<int>{6, 6, 5}));
  EXPECT_EQ(rig.recorder.names, (std::vector<std::string>{"x", "x", "u"}));
  EXPECT_EQ(tags_seen(rig.recorder), (std::vector<std::uint64_t>{1, 1, 2}));
  ASSERT_EQ(dones.got.size(), 2u);
  EXPECT_EQ(dones.got[1].tag, 2u);
  EXPECT_EQ(dones.got[1].kernels, 1);
  EXPECT_EQ(rig.gpu->stats().kernels_completed, 2);
  // The stream goes on as usual.
  ASSERT_TRUE(rig.gpu->submit(*s, four_kernels(), 3, dones.callback()));
  ASSERT_TRUE(rig.drain());
  ASSERT_EQ(dones.got.size(), 3u);
  EXPECT_EQ(dones.got[2].kernels, 4);
  EXPECT_EQ(grids_run(rig.fake.log()), (std::vector<int>{6, 6, 5, 13, 17, 19, 23}));
}

TEST(CudaGpu, PayloadRunsOnTheLaunchsStreamAndContext) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 24)));
  ASSERT_TRUE(s);
  std::vector<PayloadLaunch> calls;
  CUdeviceptr buffer = 0;
  ASSERT_EQ(rig.driver->api().mem_alloc(&buffer, 64), CUDA_SUCCESS);
  const std::vector<unsigned char> bytes(64, 7);
  rig.gpu->bind_payload("gemm", [&](const PayloadLaunch& p) -> core::Status {
    calls.push_back(p);
    CUcontext current = nullptr;
    EXPECT_EQ(rig.driver->api().ctx_get_current(&current), CUDA_SUCCESS);
    EXPECT_EQ(current, p.context);
    return rig.driver->check(
        rig.driver->api().memcpy_htod_async(buffer, bytes.data(), bytes.size(), p.stream),
        "cuMemcpyHtoDAsync");
  });
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("gemm", 4)), 3, nullptr));
  ASSERT_TRUE(rig.drain());
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_NE(calls[0].stream, nullptr);
  EXPECT_EQ(calls[0].partition_sms, 24);
  EXPECT_EQ(calls[0].device_stream, *s);
  EXPECT_EQ(calls[0].submission_tag, 3u);
  // The copy ran between the launch's two event records, on their stream; no emulation ran.
  const json log = rig.fake.log();
  EXPECT_TRUE(emulate_launches(log).empty());
  std::vector<std::string> on_stream;
  std::optional<std::uint64_t> stream;
  for (const auto& op : log["ops"]) {
    if (op["op"] == "memcpy_htod") {
      stream = op["stream"];
    }
  }
  ASSERT_TRUE(stream) << log["ops"].dump(1);
  for (const auto& op : log["ops"]) {
    if (op["stream"] == *stream) on_stream.push_back(op["op"]);
  }
  // (The context's reference event, then the launch's start, the copy and its end.)
  const auto copy = std::ranges::find(on_stream, "memcpy_htod");
  ASSERT_NE(copy, on_stream.end()) << log["ops"].dump(1);
  ASSERT_TRUE(copy != on_stream.begin() && copy + 1 != on_stream.end());
  EXPECT_EQ(*(copy - 1), "event_record");
  EXPECT_EQ(*(copy + 1), "event_record");
  EXPECT_EQ(on_stream.end() - copy, 2);
  ASSERT_EQ(rig.recorder.events.size(), 1u);
  EXPECT_EQ(rig.recorder.events[0].sms, 24);
}

TEST(CudaGpu, NvmlOfTheSameGpuLocksClocksAndCountsEnergy) {
  test::FakeNvmlEnv nvml_env(json{{"mig_mode", 0}, {"mig_pending", 0}});
  auto nvml = test::FakeNvmlEnv::open_library();
  ASSERT_TRUE(nvml) << nvml.error().message();
  auto options = small_options();
  options.nvml = nvml->get();
  // The fake NVML's GPU has this UUID; the CUDA device gets it from the script.
  const json same = {
      {"devices", json::array({{{"name", "NVIDIA H200"},
                                {"uuid", "GPU-fa4e0000-0000-4000-8000-000000000000"}}})}};
  {
    Rig rig(reverse_script(same), options);
    ASSERT_NE(rig.gpu, nullptr) << rig.error;
    ASSERT_TRUE(rig.gpu->capabilities().clock_control);
    EXPECT_EQ(rig.gpu->clock_mhz(), rig.gpu->spec().boost_clock_mhz);
    const auto set = rig.gpu->set_clock_mhz(1200);
    ASSERT_TRUE(set) << set.error().message();
    EXPECT_EQ(rig.gpu->clock_mhz(), 1200);  // a clock the fake lists
    EXPECT_FALSE(rig.gpu->set_clock_mhz(5000));
    EXPECT_GT(rig.gpu->stats().energy_joules, 0);
  }
  // Another GPU's NVML is refused, naming the UUID.
  const json other = {
      {"devices", json::array({{{"name", "NVIDIA H200"},
                                {"uuid", "GPU-00000000-0000-4000-8000-000000000001"}}})}};
  Rig rig(reverse_script(other), options);
  EXPECT_EQ(rig.gpu, nullptr);
  EXPECT_THAT(rig.error, HasSubstr("GPU-00000000-0000-4000-8000-000000000001"));
}

TEST(CudaGpu, WithoutGreenContextsEverythingRunsInThePrimaryContext) {
  Rig rig(reverse_script({{"green_contexts", false}}));
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  EXPECT_FALSE(rig.gpu->capabilities().sm_partitions);
  EXPECT_EQ(rig.gpu->granules(), 0);
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 8)));
  ASSERT_TRUE(s);
  ASSERT_TRUE(rig.gpu->submit(*s, workload::single_kernel(kernel("p", 4)), 0, nullptr));
  ASSERT_TRUE(rig.drain());
  const json log = rig.fake.log();
  EXPECT_TRUE(log["green_contexts"].empty());
  ASSERT_EQ(emulate_launches(log).size(), 1u);
  EXPECT_EQ(emulate_launches(log)[0]["sms"], 132);
  ASSERT_EQ(rig.recorder.events.size(), 1u);
  EXPECT_EQ(rig.recorder.events[0].sms, 132);
}

TEST(CudaGpu, AFailedLaunchIsReturnedByPollNamingTheCall) {
  Rig rig(reverse_script({{"fail", json::array({{{"call", "cuLaunchKernel"},
                                                 {"nth", 2},  // the first is the control kernel
                                                 {"ret", 1}}})}}));
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto s = rig.gpu->create_stream(config(device::SmMask::range(0, 8)));
  ASSERT_TRUE(s);
  (void)rig.gpu->submit(*s, workload::single_kernel(kernel("f", 4)), 0, nullptr);
  const auto st = rig.gpu->poll();
  ASSERT_FALSE(st);
  EXPECT_THAT(st.error().message(), HasSubstr("cuLaunchKernel"));
  // The device stays failed: later calls say the same.
  EXPECT_FALSE(rig.gpu->submit(*s, workload::single_kernel(kernel("g", 4)), 1, nullptr));
  EXPECT_FALSE(rig.gpu->run_until(rig.executor.now() + core::millis(10)));
}

// Two tenants under a registered sharing mode, checked by the determinism checker.
void run_two_tenants(device::GpuDevice& gpu, const char* mode_name,
                     const std::function<core::Status()>& drain) {
  gpu::ModeSettings settings;
  settings.of<gpu::LithosOptions>("lithos").atom_duration = core::micros(20);
  auto inner = gpu::make_sharing_mode(mode_name, settings);
  ASSERT_TRUE(inner) << inner.error().message();
  gpu::CheckedMode mode(std::move(*inner));
  const std::vector<gpu::TenantInfo> tenants{
      {.id = 0, .name = "llm", .latency_critical = true, .priority = 10},
      {.id = 1, .name = "batch"}};
  const auto attached = mode.attach(gpu, tenants);
  ASSERT_TRUE(attached) << attached.error().message();
  workload::KernelSequence llm;
  llm.phase = workload::Phase::kDecode;
  llm.groups.push_back({.kernels = {kernel("attn", 16), kernel("mlp", 32)}, .repeat = 3});
  workload::KernelSequence batch;
  batch.groups.push_back({.kernels = {kernel("train", 64, 3), kernel("opt", 8)}, .repeat = 2});
  const auto llm_seq = std::make_shared<const workload::KernelSequence>(llm);
  const auto batch_seq = std::make_shared<const workload::KernelSequence>(batch);
  int done = 0;
  const auto count = [&done](const device::SubmissionDone&) { ++done; };
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(mode.submit(0, llm_seq, i, count));
    ASSERT_TRUE(mode.submit(1, batch_seq, i, count));
  }
  const auto drained = drain();
  ASSERT_TRUE(drained) << drained.error().message();
  EXPECT_EQ(done, 6);
  const auto verdict = mode.verdict();
  EXPECT_TRUE(verdict) << verdict.error().message();
  EXPECT_EQ(mode.checker().kernels_checked(), 3 * (6 + 4));
}

class CudaGpuModes : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaGpuModes, TwoTenantsPassTheDeterminismCheck) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  run_two_tenants(*rig.gpu, GetParam(), [&] { return rig.drain(); });
}

INSTANTIATE_TEST_SUITE_P(Modes, CudaGpuModes, ::testing::Values("cogpu", "lithos", "tpot-first"));

TEST(CudaGpu, StaticPartitionsRunInDisjointGreenContextsSharingBandwidth) {
  Rig rig(reverse_script());
  ASSERT_NE(rig.gpu, nullptr) << rig.error;
  auto mode = gpu::make_sharing_mode("static-partitions");
  ASSERT_TRUE(mode);
  const std::vector<gpu::TenantInfo> tenants{{.id = 0, .name = "a"}, {.id = 1, .name = "b"}};
  ASSERT_TRUE((*mode)->attach(*rig.gpu, tenants));
  const auto parts = (*mode)->partitions();
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_FALSE(parts[0].sms.overlaps(parts[1].sms));
  EXPECT_EQ(parts[0].bandwidth_domain, device::kWholeDevice);
  ASSERT_EQ((*mode)->counters().size(), 1u);
}

// --- On a GPU (scripts/device-check.sh) ---

TEST(RealGpuCudaGpu, ModesPassTheDeterminismCheck) {
  REAL_GPU_OR_SKIP(driver);
  device::WallClockExecutor executor;
  for (const char* mode : {"cogpu", "lithos"}) {
    SCOPED_TRACE(mode);
    auto gpu = CudaGpu::create(*driver, executor);
    ASSERT_TRUE(gpu) << gpu.error().message();
    run_two_tenants(**gpu, mode,
                    [&] { return (*gpu)->run_until(executor.now() + core::seconds(20)); });
  }
}

TEST(RealGpuCudaGpu, KernelEventTimesArePositiveAndOrdered) {
  REAL_GPU_OR_SKIP(driver);
  device::WallClockExecutor executor;
  auto gpu = CudaGpu::create(*driver, executor);
  ASSERT_TRUE(gpu) << gpu.error().message();
  Recorder recorder;
  (*gpu)->add_observer(&recorder);
  const auto created = executor.now();
  auto s = (*gpu)->create_stream(config(device::SmMask::range(0, 16)));
  ASSERT_TRUE(s);
  static constexpr std::string_view kNames[] = {"r0", "r1", "r2", "r3"};
  for (int i = 0; i < 4; ++i) {
    // Alternate partitions: each launch after a move is timed from its context's reference.
    ASSERT_TRUE((*gpu)->configure_stream(
        *s, config(i % 2 == 0 ? device::SmMask::range(0, 16) : device::SmMask::range(64, 96))));
    auto k = kernel(kNames[i], 264);
    k.flops_per_block = 1e7;
    k.bytes_per_block = 1 << 20;
    ASSERT_TRUE((*gpu)->submit(*s, workload::single_kernel(k), i, nullptr));
  }
  const auto drained = (*gpu)->run_until(executor.now() + core::seconds(20));
  ASSERT_TRUE(drained) << drained.error().message();
  ASSERT_EQ(recorder.events.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    const auto& e = recorder.events[i];
    EXPECT_GE(e.start, created);
    EXPECT_GT(e.end, e.start) << "kernel " << i;
    EXPECT_LE(e.end, executor.now());
    if (i > 0) {
      EXPECT_GE(e.start, recorder.events[i - 1].end);
    }
  }
}

}  // namespace
}  // namespace tessera::cuda
