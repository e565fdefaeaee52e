// The fake libcuda itself (tests/support/native/fake_cuda): the driver behaviour the backend's
// tests rely on, checked through the same DriverApi the backend uses.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "support/cuda_test_env.hpp"
#include "tessera/backends/cuda/kernel_params.h"

namespace tessera::cuda {
namespace {

using nlohmann::json;
using testing::FakeCuda;

// A module image the fake accepts: text naming the kernels (the fake finds names in the bytes).
constexpr const char* kImage =
    ".entry k_first\n.entry k_second\n.entry tessera_emulate\n.entry tessera_control\n"
    ".entry tessera_range_dot\n";

class FakeCudaTest : public ::testing::Test {
 protected:
  void start(const json& script) {
    fake_.reset(script);
    driver_ = fake_.open_driver();
    ASSERT_NE(driver_, nullptr);
    ASSERT_EQ(api().primary_ctx_retain(&primary_, 0), CUDA_SUCCESS);
    ASSERT_EQ(api().ctx_set_current(primary_), CUDA_SUCCESS);
    ASSERT_EQ(api().library_load_data(&library_, kImage, nullptr, nullptr, 0, nullptr, nullptr, 0),
              CUDA_SUCCESS);
  }
  const DriverApi& api() const { return driver_->api(); }
  CUkernel kernel(const char* name) {
    CUkernel k = nullptr;
    EXPECT_EQ(api().library_get_kernel(&k, library_, name), CUDA_SUCCESS) << name;
    return k;
  }
  CUresult launch(CUkernel k, CUstream s, unsigned grid = 1, void* params = nullptr) {
    void* args[] = {params};
    return api().launch_kernel(reinterpret_cast<CUfunction>(k), grid, 1, 1, 128, 1, 1, 0, s,
                               params != nullptr ? args : nullptr, nullptr);
  }
  CUstream stream() {
    CUstream s = nullptr;
    EXPECT_EQ(api().stream_create(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    return s;
  }
  // The kernels of the executed launches, in execution order.
  std::vector<std::string> launched() const {
    std::vector<std::string> out;
    const json log = fake_.log();  // named: a range-for over a temporary's member dangles
    for (const auto& op : log["ops"]) {
      if (op["op"] == "launch") out.push_back(op["kernel"]);
    }
    return out;
  }
  CUdevResource device_resource() {
    CUdevResource r{};
    EXPECT_EQ(api().device_get_dev_resource(0, &r, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
    return r;
  }
  CUgreenCtx green(CUdevResource* resources, unsigned n) {
    CUdevResourceDesc desc = nullptr;
    EXPECT_EQ(api().dev_resource_generate_desc(&desc, resources, n), CUDA_SUCCESS);
    CUgreenCtx g = nullptr;
    EXPECT_EQ(api().green_ctx_create(&g, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);
    return g;
  }

  FakeCuda fake_;
  std::unique_ptr<DriverLibrary> driver_;
  CUcontext primary_ = nullptr;
  CUlibrary library_ = nullptr;
};

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

TEST_F(FakeCudaTest, GetProcAddressResolvesBaseNamesByVersionAndStreamMode) {
  start(json::object());
  void* h = dlopen(FakeCuda::path().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  auto gpa = reinterpret_cast<GetProcAddress>(dlsym(h, "cuGetProcAddress_v2"));
  ASSERT_NE(gpa, nullptr);
  auto get = [&](const char* name, int version, cuuint64_t flags,
                 CUdriverProcAddressQueryResult* st) {
    void* p = nullptr;
    gpa(name, &p, version, flags, st);
    return p;
  };
  CUdriverProcAddressQueryResult st{};
  // cudaTypedefs.h: cuEventElapsedTime_v2 from 12.8, cuCtxSynchronize_v2 from 13.0.
  EXPECT_EQ(get("cuEventElapsedTime", 13000, 0, &st), dlsym(h, "cuEventElapsedTime_v2"));
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(get("cuEventElapsedTime", 12000, 0, &st), dlsym(h, "cuEventElapsedTime"));
  EXPECT_EQ(get("cuCtxSynchronize", 13000, 0, &st), dlsym(h, "cuCtxSynchronize_v2"));
  EXPECT_EQ(get("cuCtxSynchronize", 12090, 0, &st), dlsym(h, "cuCtxSynchronize"));
  EXPECT_EQ(get("cuMemAlloc", 13000, 0, &st), dlsym(h, "cuMemAlloc_v2"));
  EXPECT_EQ(get("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st),
            dlsym(h, "cuLaunchKernel_ptsz"));
  EXPECT_EQ(get("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st),
            dlsym(h, "cuLaunchKernel"));
  EXPECT_EQ(get("cuGraphLaunch", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st),
            dlsym(h, "cuGraphLaunch_ptsz"));
  EXPECT_EQ(get("cuNoSuchCall", 13000, 0, &st), nullptr);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(get("cuGreenCtxStreamCreate", 12040, 0, &st), nullptr);  // introduced in 12.5
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  void* p = nullptr;
  EXPECT_EQ(gpa("cuNoSuchCall", &p, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
  // A 12.3 driver does not know green contexts at all.
  fake_.reset(json{{"driver_version", 12030}});
  EXPECT_EQ(get("cuGreenCtxCreate", 13000, 0, &st), nullptr);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_NE(get("cuLaunchKernel", 13000, 0, &st), nullptr);
  fake_.reset(json{{"green_contexts", false}});
  EXPECT_EQ(get("cuDevSmResourceSplitByCount", 13000, 0, &st), nullptr);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  dlclose(h);
}

TEST_F(FakeCudaTest, SplitFollowsGranularityAndGroupLimits) {
  start(json::object());  // 132 SMs, minimum 8, alignment 8
  CUdevResource dev = device_resource();
  EXPECT_EQ(dev.sm.smCount, 132u);
  EXPECT_EQ(dev.sm.minSmPartitionSize, 8u);
  EXPECT_EQ(dev.sm.smCoscheduledAlignment, 8u);
  unsigned n = 0;
  ASSERT_EQ(api().dev_sm_resource_split_by_count(nullptr, &n, &dev, nullptr, 0, 16), CUDA_SUCCESS);
  EXPECT_EQ(n, 8u);  // floor(132 / 16)
  ASSERT_EQ(api().dev_sm_resource_split_by_count(nullptr, &n, &dev, nullptr, 0, 12), CUDA_SUCCESS);
  EXPECT_EQ(n, 8u);  // 12 rounds up to 16
  ASSERT_EQ(api().dev_sm_resource_split_by_count(nullptr, &n, &dev, nullptr, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(n, 16u);  // at least the minimum partition, 8
  EXPECT_EQ(api().dev_sm_resource_split_by_count(nullptr, &n, &dev, nullptr, 0, 133),
            CUDA_ERROR_INVALID_VALUE);

  CUdevResource groups[4]{};
  CUdevResource rest{};
  n = 2;  // fewer groups than fit
  ASSERT_EQ(api().dev_sm_resource_split_by_count(groups, &n, &dev, &rest, 0, 16), CUDA_SUCCESS);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(groups[0].sm.smCount, 16u);
  EXPECT_EQ(groups[1].sm.smCount, 16u);
  EXPECT_EQ(rest.sm.smCount, 100u);
  // A split's outputs cannot be split again (cuda.h); a green context's resource can.
  EXPECT_EQ(api().dev_sm_resource_split_by_count(nullptr, &n, &groups[0], nullptr, 0, 8),
            CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
  CUgreenCtx g = green(&rest, 1);
  CUdevResource of_green{};
  ASSERT_EQ(api().green_ctx_get_dev_resource(g, &of_green, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  EXPECT_EQ(of_green.sm.smCount, 100u);
  n = 4;
  ASSERT_EQ(api().dev_sm_resource_split_by_count(groups, &n, &of_green, nullptr, 0, 24),
            CUDA_SUCCESS);
  EXPECT_EQ(n, 4u);  // 4 x 24 of 100
}

TEST_F(FakeCudaTest, GreenContextsHoldDisjointSmSetsLessTheShortfall) {
  start(json{{"devices", {{{"sms", 64}, {"shortfall", 2}}}}});
  CUdevResource dev = device_resource();
  CUdevResource groups[2]{};
  unsigned n = 2;
  ASSERT_EQ(api().dev_sm_resource_split_by_count(groups, &n, &dev, nullptr, 0, 32), CUDA_SUCCESS);
  CUgreenCtx a = green(&groups[0], 1);
  CUgreenCtx b = green(&groups[1], 1);
  CUdevResource ra{};
  ASSERT_EQ(api().green_ctx_get_dev_resource(a, &ra, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  EXPECT_EQ(ra.sm.smCount, 30u);  // 32 asked, 2 short (pytorch issue #195378)
  const json greens = fake_.log()["green_contexts"];
  ASSERT_EQ(greens.size(), 2u);
  std::set<int> seen;
  for (const auto& g : greens) {
    EXPECT_EQ(g["requested"], 32);
    EXPECT_EQ(g["sm_ids"].size(), 30u);
    for (int sm : g["sm_ids"]) EXPECT_TRUE(seen.insert(sm).second) << "SM " << sm << " twice";
  }
  // Streams of a green context must be non-blocking; launches on them report its SMs.
  CUstream s = nullptr;
  EXPECT_EQ(api().green_ctx_stream_create(&s, b, 0, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(api().green_ctx_stream_create(&s, b, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
  ASSERT_EQ(launch(kernel("k_first"), s), CUDA_SUCCESS);
  ASSERT_EQ(api().stream_synchronize(s), CUDA_SUCCESS);
  const json op = fake_.log()["ops"][0];
  EXPECT_EQ(op["sms"], 30);
  EXPECT_NE(op["green_ctx"], 0);
  // Destroying the green context with a live stream is allowed and noted.
  ASSERT_EQ(api().green_ctx_destroy(b), CUDA_SUCCESS);
  const json notes = fake_.log()["notes"];
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(),
                          [](const json& e) { return e.value("live_streams", 0) == 1; }));
}

TEST_F(FakeCudaTest, DescriptorsTakeSeveralResourcesOnlyFromOneSplit) {
  start(json::object());
  CUdevResource dev = device_resource();
  CUdevResource first[1]{};
  CUdevResource first_rest{};
  CUdevResource second[1]{};
  unsigned n = 1;
  ASSERT_EQ(api().dev_sm_resource_split_by_count(first, &n, &dev, &first_rest, 0, 8), CUDA_SUCCESS);
  n = 1;
  ASSERT_EQ(api().dev_sm_resource_split_by_count(second, &n, &dev, nullptr, 0, 8), CUDA_SUCCESS);
  CUdevResourceDesc desc = nullptr;
  CUdevResource mixed[2] = {first[0], second[0]};
  EXPECT_EQ(api().dev_resource_generate_desc(&desc, mixed, 2),
            CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);  // 915, cuda.h:3167
  CUdevResource same[2] = {first[0], first_rest};
  EXPECT_EQ(api().dev_resource_generate_desc(&desc, same, 2), CUDA_SUCCESS);
}

TEST_F(FakeCudaTest, ReverseScheduleReordersStreamsUnlessAWaitOrdersThem) {
  start(json{{"schedule", "reverse"}});
  CUstream a = stream();
  CUstream b = stream();
  ASSERT_EQ(launch(kernel("k_first"), a), CUDA_SUCCESS);
  ASSERT_EQ(launch(kernel("k_second"), b), CUDA_SUCCESS);
  EXPECT_TRUE(fake_.log()["ops"].empty());  // nothing runs at enqueue time
  ASSERT_EQ(api().ctx_synchronize(), CUDA_SUCCESS);
  EXPECT_EQ(launched(), (std::vector<std::string>{"k_second", "k_first"}));

  fake_.reset(json{{"schedule", "reverse"}});
  start(json{{"schedule", "reverse"}});
  a = stream();
  b = stream();
  CUevent e = nullptr;
  ASSERT_EQ(api().event_create(&e, 0), CUDA_SUCCESS);
  ASSERT_EQ(launch(kernel("k_first"), a), CUDA_SUCCESS);
  ASSERT_EQ(api().event_record(e, a), CUDA_SUCCESS);
  ASSERT_EQ(api().stream_wait_event(b, e, 0), CUDA_SUCCESS);
  ASSERT_EQ(launch(kernel("k_second"), b), CUDA_SUCCESS);
  ASSERT_EQ(api().stream_synchronize(b), CUDA_SUCCESS);
  EXPECT_EQ(launched(), (std::vector<std::string>{"k_first", "k_second"}));
}

TEST_F(FakeCudaTest, AWaitOnANeverRecordedEventDoesNotWait) {
  start(json{{"schedule", "reverse"}});
  CUstream a = stream();
  CUstream b = stream();
  CUevent e = nullptr;
  ASSERT_EQ(api().event_create(&e, 0), CUDA_SUCCESS);
  ASSERT_EQ(api().stream_wait_event(b, e, 0), CUDA_SUCCESS);
  ASSERT_EQ(api().event_record(e, a), CUDA_SUCCESS);  // after the wait: not waited for
  ASSERT_EQ(launch(kernel("k_second"), b), CUDA_SUCCESS);
  ASSERT_EQ(api().stream_synchronize(b), CUDA_SUCCESS);
  const json ops = fake_.log()["ops"];
  ASSERT_GE(ops.size(), 2u);
  EXPECT_EQ(ops[0]["op"], "wait");
  EXPECT_TRUE(ops[0]["record"].is_null());
}

TEST_F(FakeCudaTest, EventTimesFollowTheScriptedKernelDurations) {
  start(json{{"kernel_ns", {{"k_first", 250000}, {"*", 1000}}}});
  CUstream s = stream();
  CUevent begin = nullptr;
  CUevent end = nullptr;
  ASSERT_EQ(api().event_create(&begin, 0), CUDA_SUCCESS);
  ASSERT_EQ(api().event_create(&end, 0), CUDA_SUCCESS);
  ASSERT_EQ(api().event_record(begin, s), CUDA_SUCCESS);
  ASSERT_EQ(launch(kernel("k_first"), s), CUDA_SUCCESS);
  ASSERT_EQ(launch(kernel("k_second"), s), CUDA_SUCCESS);
  ASSERT_EQ(api().event_record(end, s), CUDA_SUCCESS);
  float ms = 0;
  EXPECT_EQ(api().event_elapsed_time(&ms, begin, end), CUDA_ERROR_NOT_READY);  // not run yet
  ASSERT_EQ(api().event_synchronize(end), CUDA_SUCCESS);
  ASSERT_EQ(api().event_elapsed_time(&ms, begin, end), CUDA_SUCCESS);
  EXPECT_FLOAT_EQ(ms, 0.251f);
  CUevent untimed = nullptr;
  ASSERT_EQ(api().event_create(&untimed, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(api().event_record(untimed, s), CUDA_SUCCESS);
  ASSERT_EQ(api().stream_synchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(api().event_elapsed_time(&ms, begin, untimed), CUDA_ERROR_INVALID_HANDLE);
}

// The control kernel's mailbox and the emulation of tessera_emulate's yield protocol.
TEST_F(FakeCudaTest, ControlKernelServicesItsMailboxAndEmulateYields) {
  start(json::object());
  void* host = nullptr;
  ASSERT_EQ(api().mem_host_alloc(&host, sizeof(TesseraControlMailbox), CU_MEMHOSTALLOC_DEVICEMAP),
            CUDA_SUCCESS);
  CUdeviceptr box_dev = 0;
  ASSERT_EQ(api().mem_host_get_device_pointer(&box_dev, host, 0), CUDA_SUCCESS);
  EXPECT_EQ(box_dev, reinterpret_cast<CUdeviceptr>(host));  // mapped: the same address
  auto* box = static_cast<TesseraControlMailbox*>(host);
  CUdeviceptr flags = 0;
  CUdeviceptr progress = 0;
  CUdeviceptr yielded = 0;
  ASSERT_EQ(api().mem_alloc(&flags, 2 * 4), CUDA_SUCCESS);
  ASSERT_EQ(api().mem_alloc(&progress, 4 * 4), CUDA_SUCCESS);
  ASSERT_EQ(api().mem_alloc(&yielded, 4), CUDA_SUCCESS);
  ASSERT_EQ(api().memset_d8(flags, 0, 8), CUDA_SUCCESS);
  ASSERT_EQ(api().memset_d8(progress, 0, 16), CUDA_SUCCESS);
  ASSERT_EQ(api().memset_d8(yielded, 0, 4), CUDA_SUCCESS);

  CUstream control = stream();
  CUstream work = stream();
  TesseraControlParams cp{box_dev, flags, 2, 1000};
  ASSERT_EQ(launch(kernel(TESSERA_KERNEL_CONTROL), control, 1, &cp), CUDA_SUCCESS);
  TesseraEmulateParams ep{};
  ep.virtual_blocks = 4;
  ep.yield_flag = flags + 4;  // slot 1
  ep.progress = progress;
  ep.yielded_blocks = yielded;
  ep.checkpoints = 3;

  box->op = TESSERA_CONTROL_YIELD;
  box->slot = 1;
  __atomic_store_n(&box->seq, 1u, __ATOMIC_RELEASE);
  ASSERT_EQ(launch(kernel(TESSERA_KERNEL_EMULATE), work, 4, &ep), CUDA_SUCCESS);
  ASSERT_EQ(api().stream_synchronize(work), CUDA_SUCCESS);
  EXPECT_EQ(__atomic_load_n(&box->ack_seq, __ATOMIC_ACQUIRE), 1u);
  std::uint32_t got[4] = {};
  std::uint32_t y = 0;
  ASSERT_EQ(api().memcpy_dtoh(got, progress, sizeof got), CUDA_SUCCESS);
  ASSERT_EQ(api().memcpy_dtoh(&y, yielded, 4), CUDA_SUCCESS);
  EXPECT_EQ(std::vector<std::uint32_t>(got, got + 4), std::vector<std::uint32_t>(4, 1));
  EXPECT_EQ(y, 4u);  // every block stopped at its first checkpoint

  box->op = TESSERA_CONTROL_CLEAR;
  __atomic_store_n(&box->seq, 2u, __ATOMIC_RELEASE);
  ep.block_offset = 2;  // resume only blocks 2 and 3
  ASSERT_EQ(launch(kernel(TESSERA_KERNEL_EMULATE), work, 2, &ep), CUDA_SUCCESS);
  ASSERT_EQ(api().stream_synchronize(work), CUDA_SUCCESS);
  ASSERT_EQ(api().memcpy_dtoh(got, progress, sizeof got), CUDA_SUCCESS);
  EXPECT_EQ(std::vector<std::uint32_t>(got, got + 4), (std::vector<std::uint32_t>{1, 1, 4, 4}));

  // The control kernel is resident: its stream cannot drain, and an event behind it never fires.
  CUevent behind = nullptr;
  ASSERT_EQ(api().event_create(&behind, 0), CUDA_SUCCESS);
  ASSERT_EQ(api().event_record(behind, control), CUDA_SUCCESS);
  EXPECT_EQ(api().event_query(behind), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(api().stream_synchronize(control), CUDA_ERROR_LAUNCH_TIMEOUT);
  box->op = TESSERA_CONTROL_EXIT;
  __atomic_store_n(&box->seq, 3u, __ATOMIC_RELEASE);
  EXPECT_EQ(api().stream_synchronize(control), CUDA_SUCCESS);
  EXPECT_EQ(api().event_query(behind), CUDA_SUCCESS);
  EXPECT_EQ(__atomic_load_n(&box->ack_seq, __ATOMIC_ACQUIRE), 3u);
}

TEST_F(FakeCudaTest, LaunchesAreValidatedAndCopyTheirParameters) {
  start(json::object());
  CUkernel missing = nullptr;
  EXPECT_EQ(api().library_get_kernel(&missing, library_, "k_frist"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(api().library_get_kernel(&missing, library_, "k_firs"), CUDA_ERROR_NOT_FOUND);
  CUstream s = stream();
  CUfunction f = reinterpret_cast<CUfunction>(kernel("k_first"));
  EXPECT_EQ(api().launch_kernel(f, 1, 1, 1, 1025, 1, 1, 0, s, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().launch_kernel(f, 0, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().launch_kernel(f, 1, 1, 1, 32, 1, 1, 64 * 1024, s, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);  // over 48 KiB without the opt-in attribute

  // tessera_range_dot computes out[bid]; the parameters are taken at launch, not at execution.
  const std::uint32_t per_block = 3;
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<float> w = {1, 10, 100};
  CUdeviceptr dx = 0;
  CUdeviceptr dw = 0;
  CUdeviceptr dout = 0;
  ASSERT_EQ(api().mem_alloc(&dx, 24), CUDA_SUCCESS);
  ASSERT_EQ(api().mem_alloc(&dw, 12), CUDA_SUCCESS);
  ASSERT_EQ(api().mem_alloc(&dout, 8), CUDA_SUCCESS);
  ASSERT_EQ(api().memcpy_htod(dx, x.data(), 24), CUDA_SUCCESS);
  ASSERT_EQ(api().memcpy_htod(dw, w.data(), 12), CUDA_SUCCESS);
  ASSERT_EQ(api().memset_d8(dout, 0, 8), CUDA_SUCCESS);
  TesseraRangeDotParams p{0, 2, dx, dw, dout, per_block, 0};
  ASSERT_EQ(launch(kernel(TESSERA_KERNEL_RANGE_DOT), s, 2, &p), CUDA_SUCCESS);
  p.out = 0;  // too late to matter
  ASSERT_EQ(api().stream_synchronize(s), CUDA_SUCCESS);
  float out[2] = {};
  ASSERT_EQ(api().memcpy_dtoh(out, dout, sizeof out), CUDA_SUCCESS);
  EXPECT_FLOAT_EQ(out[0], 321.0f);
  EXPECT_FLOAT_EQ(out[1], 654.0f);

  // A kernel whose pointers leave every allocation faults, and the error sticks.
  TesseraRangeDotParams bad{0, 2, dx, dw, dout + 8, per_block, 0};
  ASSERT_EQ(launch(kernel(TESSERA_KERNEL_RANGE_DOT), s, 2, &bad), CUDA_SUCCESS);
  EXPECT_EQ(api().stream_synchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(api().ctx_synchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
}

TEST_F(FakeCudaTest, InjectedFailuresHitTheNthCallOnly) {
  start(json{{"fail", {{{"call", "cuMemAlloc"}, {"nth", 2}, {"ret", 2}}}}});
  CUdeviceptr p = 0;
  EXPECT_EQ(api().mem_alloc(&p, 64), CUDA_SUCCESS);
  CUdeviceptr q = 0;
  EXPECT_EQ(api().mem_alloc(&q, 64), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(q, 0u);  // did nothing
  EXPECT_EQ(api().mem_alloc(&q, 64), CUDA_SUCCESS);
  int failed = 0;
  const json log = fake_.log();
  for (const auto& c : log["calls"]) {
    if (c["call"] == "cuMemAlloc" && c["ret"] == 2) ++failed;
  }
  EXPECT_EQ(failed, 1);
}

TEST_F(FakeCudaTest, MemoryIsAccountedPerDevice) {
  start(json{{"devices", {{{"memory_mib", 1}}}}});
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  ASSERT_EQ(api().mem_get_info(&free_bytes, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, 1u << 20);
  CUdeviceptr p = 0;
  ASSERT_EQ(api().mem_alloc(&p, 768 * 1024), CUDA_SUCCESS);
  CUdeviceptr q = 0;
  EXPECT_EQ(api().mem_alloc(&q, 512 * 1024), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(api().mem_free(p), CUDA_SUCCESS);
  EXPECT_EQ(api().mem_alloc(&q, 512 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(api().mem_free(p), CUDA_ERROR_INVALID_VALUE);  // freed already
}

TEST(FakeCudaScript, MalformedScriptsAreRefusedWithTheReason) {
  FakeCuda fake;
  void* h = dlopen(FakeCuda::path().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  auto reset = reinterpret_cast<int (*)(const char*)>(dlsym(h, "fake_cuda_reset"));
  auto why = reinterpret_cast<const char* (*)()>(dlsym(h, "fake_cuda_last_error"));
  ASSERT_TRUE(reset && why);
  EXPECT_EQ(reset(R"({"devices": [{"smz": 8}]})"), -1);
  EXPECT_NE(std::string(why()).find("smz"), std::string::npos) << why();
  EXPECT_EQ(reset(R"({"shedule": "fifo"})"), -1);
  EXPECT_NE(std::string(why()).find("shedule"), std::string::npos) << why();
  EXPECT_EQ(reset(R"({"schedule": "lifo"})"), -1);
  EXPECT_EQ(reset("{not json"), -1);
  EXPECT_EQ(reset(""), 0);
  dlclose(h);
}

// FAKE_CUDA_SCRIPT and FAKE_CUDA_LOG, for processes a test cannot reset: a fresh copy of the fake
// (its own link-map namespace, so none of this process's state) reads them.
TEST(FakeCudaEnvironment, ScriptAndLogFileComeFromTheEnvironment) {
#ifdef TESSERA_SANITIZED
  GTEST_SKIP() << "not in a sanitizer build: the fake's fresh namespace would load a second copy "
                  "of the sanitizer's runtime, which refuses to start";
#endif
  const std::string log_path =
      (std::filesystem::temp_directory_path() / ("fake_cuda_env_" + std::to_string(getpid())))
          .string();
  std::filesystem::remove(log_path);
  setenv("FAKE_CUDA_SCRIPT", R"({"devices": [{"sms": 20}, {"sms": 30}]})", 1);
  setenv("FAKE_CUDA_LOG", log_path.c_str(), 1);
  void* h = dlmopen(LM_ID_NEWLM, FakeCuda::path().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(h, "cuInit"));
  auto count = reinterpret_cast<CUresult (*)(int*)>(dlsym(h, "cuDeviceGetCount"));
  auto progress = reinterpret_cast<void (*)()>(dlsym(h, "fake_cuda_progress"));
  ASSERT_TRUE(init && count && progress);
  const CUresult initialised = init(0);  // the script is read at first use
  unsetenv("FAKE_CUDA_SCRIPT");
  ASSERT_EQ(initialised, CUDA_SUCCESS);
  int n = 0;
  ASSERT_EQ(count(&n), CUDA_SUCCESS);
  EXPECT_EQ(n, 2);
  progress();
  unsetenv("FAKE_CUDA_LOG");
  std::ifstream in(log_path);
  ASSERT_TRUE(in) << log_path << " was not written";
  const json log = json::parse(in);
  ASSERT_TRUE(log.contains("calls"));
  EXPECT_EQ(log["calls"][0]["call"], "cuInit");
  EXPECT_EQ(log["calls"][1]["call"], "cuDeviceGetCount");
  dlclose(h);
  std::filesystem::remove(log_path);
}

}  // namespace
}  // namespace tessera::cuda
