// The compute models on a GPU (decode_step.hpp), cuBLASLt loading (cublaslt_library.hpp) and the
// GEMM variants (lt_gemm.hpp). Here, without a GPU: cuBLASLt loading and its errors (the
// toolkit's libcublasLt.so.13 loads and reports its version with no device), option checks, and a
// model's creation against the fake driver failing cleanly where cuBLASLt has no GPU. The step
// sequences are pure and tested in tests/workload/models/compute_data_test.cpp. RealGpu* tests run
// the models (scripts/device-check.sh runs them on an H100/H200).

#include "tessera/backends/cuda/decode_step.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cuda_test_env.hpp"
#include "tessera/backends/cuda/cublaslt_library.hpp"
#include "tessera/backends/cuda/green_partitions.hpp"
#include "tessera/backends/cuda/lt_gemm.hpp"
#include "tessera/workload/models/compute_data.hpp"

namespace tessera::cuda {
namespace {

using nlohmann::json;
using testing::FakeCuda;
using ::testing::HasSubstr;
namespace cd = workload::compute_data;

constexpr const char* kToolkitCublasLt = "/usr/local/cuda/lib64/libcublasLt.so.13";

// Sets an environment variable for one test and restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST(CublasLtLibrary, AMissingFileIsNamed) {
  auto lt = CublasLt::open("/nonexistent/libcublasLt.so.13");
  ASSERT_FALSE(lt);
  EXPECT_EQ(lt.error().domain(), core::Domain::kCuda);
  EXPECT_EQ(lt.error().code(), core::Code::kNotFound);
  EXPECT_THAT(lt.error().message(), HasSubstr("/nonexistent/libcublasLt.so.13"));
  EXPECT_THAT(lt.error().message(), HasSubstr("TESSERA_CUBLASLT_LIBRARY"));
}

TEST(CublasLtLibrary, TheEnvironmentReplacesTheDefaultNames) {
  {
    ScopedEnv env("TESSERA_CUBLASLT_LIBRARY", "/elsewhere/libcublasLt.so");
    EXPECT_EQ(CublasLt::default_paths(), std::vector<std::string>{"/elsewhere/libcublasLt.so"});
    auto lt = CublasLt::open();
    ASSERT_FALSE(lt);
    EXPECT_THAT(lt.error().message(), HasSubstr("/elsewhere/libcublasLt.so"));
  }
  unsetenv("TESSERA_CUBLASLT_LIBRARY");
  EXPECT_EQ(CublasLt::default_paths(),
            (std::vector<std::string>{"libcublasLt.so.13", "libcublasLt.so.12"}));
}

// cublasLtGetVersion and cublasLtGetStatusString need no device.
TEST(CublasLtLibrary, TheToolkitLibraryLoadsAndReportsItsVersionWithoutAGpu) {
  if (!std::filesystem::exists(kToolkitCublasLt)) {
    GTEST_SKIP() << kToolkitCublasLt << " is not installed";
  }
  auto lt = CublasLt::open(kToolkitCublasLt);
  ASSERT_TRUE(lt) << lt.error().message();
  EXPECT_EQ((*lt)->path(), kToolkitCublasLt);
  // cublasLt.h of CUDA 13: version = major * 10000 + minor * 100 + patch.
  EXPECT_GE((*lt)->version(), 130000u);
  EXPECT_LT((*lt)->version(), 140000u);
  std::cout << "cuBLASLt " << (*lt)->version() << " from " << (*lt)->path() << "\n";
}

TEST(CublasLtLibrary, StatusErrorsNameTheCallAndTheLibrarysText) {
  if (!std::filesystem::exists(kToolkitCublasLt)) {
    GTEST_SKIP() << kToolkitCublasLt << " is not installed";
  }
  auto lt = CublasLt::open(kToolkitCublasLt);
  ASSERT_TRUE(lt) << lt.error().message();
  EXPECT_TRUE((*lt)->check(CUBLAS_STATUS_SUCCESS, "cublasLtMatmul"));
  auto bad = (*lt)->check(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(bad.error().message(), HasSubstr("cublasLtMatmul: "));
  EXPECT_THAT(bad.error().message(),
              HasSubstr((*lt)->api().get_status_string(CUBLAS_STATUS_INVALID_VALUE)));
  EXPECT_THAT(bad.error().message(), HasSubstr("cuBLAS status 7"));
  EXPECT_EQ(cublas_error_code(CUBLAS_STATUS_ALLOC_FAILED), core::Code::kResourceExhausted);
  EXPECT_EQ(cublas_error_code(CUBLAS_STATUS_NOT_SUPPORTED), core::Code::kUnsupported);
  EXPECT_EQ(cublas_error_code(CUBLAS_STATUS_NOT_INITIALIZED), core::Code::kFailedPrecondition);
  EXPECT_EQ(cublas_error_code(CUBLAS_STATUS_EXECUTION_FAILED), core::Code::kInternal);
}

TEST(CublasLtLibrary, AHandleNeedsAGpu) {
  if (!std::filesystem::exists(kToolkitCublasLt)) {
    GTEST_SKIP() << kToolkitCublasLt << " is not installed";
  }
  std::string why;
  const bool gpu = testing::real_driver(&why) != nullptr;
  auto lt = CublasLt::open(kToolkitCublasLt);
  ASSERT_TRUE(lt) << lt.error().message();
  auto handle = CublasLtHandle::create(**lt);
  if (gpu) {
    EXPECT_TRUE(handle) << handle.error().message();
  } else {
    ASSERT_FALSE(handle);
    EXPECT_THAT(handle.error().message(), HasSubstr("cublasLtCreate"));
    EXPECT_THAT(handle.error().message(), HasSubstr("needs the NVIDIA driver and a GPU"));
  }
}

TEST(GemmVariants, ParseAndPrint) {
  for (GemmVariant v : {GemmVariant::kFixed, GemmVariant::kDrift}) {
    auto parsed = parse_gemm_variant(to_string(v));
    ASSERT_TRUE(parsed) << parsed.error().message();
    EXPECT_EQ(*parsed, v);
  }
  auto bad = parse_gemm_variant("stable");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), core::Code::kInvalidArgument);
  EXPECT_THAT(bad.error().message(), HasSubstr("'stable'"));
  EXPECT_THAT(bad.error().message(), HasSubstr("fixed or drift"));
  const GemmAlgorithm a{.id = 21, .tile = 20, .split_k = 4, .reduction = 2, .stages = 8};
  EXPECT_EQ(to_string(a),
            "id 21 tile 20 splitk 4 reduction compute-type swizzle 0 stages 8 cluster 0 "
            "workspace 0");
}

TEST(ModelOptions, DecodeShapesAreChecked) {
  EXPECT_TRUE(validate(DecodeModelOptions{}));
  DecodeModelOptions o;
  o.shape.batch = 0;
  EXPECT_FALSE(validate(o));
  o.shape = {.batch = 64, .hidden = 128, .vocab = 32};
  auto more_than_vocab = validate(o);
  ASSERT_FALSE(more_than_vocab);
  EXPECT_THAT(more_than_vocab.error().message(), HasSubstr("batch 64 exceeds vocab 32"));
  o.shape = {};
  o.gemm.sm_count_target = -1;
  EXPECT_FALSE(validate(o));
}

TEST(ModelOptions, TrainingShapesAreChecked) {
  TrainingModelOptions o;
  EXPECT_TRUE(validate(o));
  EXPECT_EQ(o.gemm.sm_count_target, 0);  // the load uses cuBLASLt's choice for the device
  EXPECT_FALSE(o.checksums);
  o.shape.k = -3;
  EXPECT_FALSE(validate(o));
  o.shape = {};
  o.learning_rate = std::nanf("");
  EXPECT_FALSE(validate(o));
}

// Against the fake driver the models get as far as cublasLtCreate, which needs the real driver;
// everything made before it is released again.
TEST(CudaModels, CreationFailsCleanlyWhereCuBlasLtHasNoGpu) {
  std::string why;
  if (testing::real_driver(&why) != nullptr) {
    GTEST_SKIP() << "a GPU is present: cuBLASLt would find the real driver";
  }
  if (!std::filesystem::exists(kToolkitCublasLt)) {
    GTEST_SKIP() << kToolkitCublasLt << " is not installed";
  }
  FakeCuda fake;
  auto driver = fake.open_driver();
  ASSERT_NE(driver, nullptr);
  auto lt = CublasLt::open(kToolkitCublasLt);
  ASSERT_TRUE(lt) << lt.error().message();
  auto decode = CudaDecodeModel::create(*driver, **lt, {});
  ASSERT_FALSE(decode);
  EXPECT_THAT(decode.error().message(), HasSubstr("cublasLtCreate"));
  auto train = CudaTrainingModel::create(*driver, **lt, {});
  ASSERT_FALSE(train);
  EXPECT_THAT(train.error().message(), HasSubstr("cublasLtCreate"));
  int retained = 0;
  int released = 0;
  int loaded = 0;
  int unloaded = 0;
  const json log = fake.log();  // the loop below must not outlive it
  for (const json& c : log.at("calls")) {
    if (c.at("ret").get<int>() != 0) continue;
    const std::string call = c.at("call");
    retained += call == "cuDevicePrimaryCtxRetain";
    released += call == "cuDevicePrimaryCtxRelease";
    loaded += call == "cuLibraryLoadData";
    unloaded += call == "cuLibraryUnload";
  }
  EXPECT_EQ(retained, 2);
  EXPECT_EQ(released, retained);
  EXPECT_EQ(loaded, 2);  // the decode kernels' fatbin loads (the fake finds its kernels by name)
  EXPECT_EQ(unloaded, loaded);
}

// A failure before cuBLASLt (here the module load) names the call and releases the context.
TEST(CudaModels, AFailedModuleLoadIsNamedAndReleasesTheContext) {
  if (!std::filesystem::exists(kToolkitCublasLt)) {
    GTEST_SKIP() << kToolkitCublasLt << " is not installed";
  }
  FakeCuda fake(
      json{{"fail", json::array({json{{"call", "cuLibraryLoadData"}, {"nth", 1}, {"ret", 2}}})}});
  auto driver = fake.open_driver();
  ASSERT_NE(driver, nullptr);
  auto lt = CublasLt::open(kToolkitCublasLt);
  ASSERT_TRUE(lt) << lt.error().message();
  auto decode = CudaDecodeModel::create(*driver, **lt, {});
  ASSERT_FALSE(decode);
  EXPECT_THAT(decode.error().message(), HasSubstr("cuLibraryLoadData(decode_kernels)"));
  EXPECT_EQ(decode.error().code(), core::Code::kResourceExhausted);  // CUDA_ERROR_OUT_OF_MEMORY
  const json log = fake.log();
  int retained = 0;
  int released = 0;
  for (const json& c : log.at("calls")) {
    if (c.at("ret").get<int>() != 0) continue;
    retained += c.at("call") == "cuDevicePrimaryCtxRetain";
    released += c.at("call") == "cuDevicePrimaryCtxRelease";
  }
  EXPECT_EQ(retained, 1);
  EXPECT_EQ(released, 1);
}

// ---------------------------------------------------------------------------------------------
// On a GPU.

// Runs one step of `model`, every kernel on `stream` with `context` current (as CudaGpu's payloads
// do), and reads it back.
workload::StepOutput run_step(const DriverLibrary& driver, workload::ComputeModel& model,
                              CUcontext context, CUstream stream, int sms) {
  EXPECT_EQ(driver.api().ctx_push_current(context), CUDA_SUCCESS);
  for (const auto& k : model.step_sequence()->groups.at(0).kernels) {
    auto st = model.run_kernel(
        k.name, {.partition_sms = sms, .stream = stream, .block_begin = 0, .block_end = k.blocks});
    EXPECT_TRUE(st) << st.error().message();
  }
  CUcontext popped = nullptr;
  EXPECT_EQ(driver.api().ctx_pop_current(&popped), CUDA_SUCCESS);
  auto out = model.finish_step();
  EXPECT_TRUE(out) << out.error().message();
  return out ? *out : workload::StepOutput{};
}

// The device's primary context and a non-blocking stream in it.
struct PrimaryStream {
  explicit PrimaryStream(const DriverLibrary& d) : driver(d) {
    auto dev = d.device(0);
    EXPECT_TRUE(dev);
    device = dev.value().handle;
    sms = dev->sms;
    EXPECT_EQ(d.api().primary_ctx_retain(&context, device), CUDA_SUCCESS);
    EXPECT_EQ(d.api().ctx_push_current(context), CUDA_SUCCESS);
    EXPECT_EQ(d.api().stream_create(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUcontext popped = nullptr;
    d.api().ctx_pop_current(&popped);
  }
  ~PrimaryStream() {
    driver.api().stream_destroy(stream);
    driver.api().primary_ctx_release(device);
  }
  const DriverLibrary& driver;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  int sms = 0;
};

std::unique_ptr<CublasLt> real_cublaslt() {
  auto lt = CublasLt::open();
  EXPECT_TRUE(lt) << lt.error().message();
  return lt ? std::move(*lt) : nullptr;
}

void print_algorithms(const char* what, const std::vector<GemmAlgorithmsSeen>& seen) {
  for (const auto& s : seen) {
    std::cout << what << ": " << s.partition_sms << " SMs, " << s.launches << " launches:";
    for (const auto& a : s.algorithms) std::cout << " [" << to_string(a) << "]";
    std::cout << "\n";
  }
}

TEST(RealGpuDecode, SixteenTokensTwiceAreIdentical) {
  REAL_GPU_OR_SKIP(driver);
  auto lt = real_cublaslt();
  ASSERT_NE(lt, nullptr);
  PrimaryStream ps(*driver);
  auto model = CudaDecodeModel::create(*driver, *lt, {.seed = 1});
  ASSERT_TRUE(model) << model.error().message();
  std::vector<workload::StepOutput> first;
  for (int i = 0; i < 16; ++i) {
    first.push_back(run_step(*driver, **model, ps.context, ps.stream, ps.sms));
  }
  ASSERT_TRUE((*model)->reset(1));
  for (int i = 0; i < 16; ++i) {
    const auto again = run_step(*driver, **model, ps.context, ps.stream, ps.sms);
    EXPECT_EQ(again.tokens, first[i].tokens) << "step " << i;
    EXPECT_EQ(again.kernel_checksums, first[i].kernel_checksums) << "step " << i;
  }
  std::cout << "tokens of sequence 0:";
  for (const auto& s : first) {
    ASSERT_EQ(s.tokens.size(), 4u);
    for (std::int32_t t : s.tokens) {
      EXPECT_GE(t, 0);
      EXPECT_LT(t, 32000);
    }
    std::cout << " " << s.tokens[0];
  }
  std::cout << "\n";
  print_algorithms("decode.lm_head", (*model)->algorithms_seen());
}

// The first step against the host: the embedding is a copy (its checksum is the host's over the
// first B rows of E), the logits are W^T h within fp32 rounding, the token is the largest logit,
// and the GPU's checksum kernels agree with compute_data::checksum.
TEST(RealGpuDecode, FirstStepMatchesTheHost) {
  REAL_GPU_OR_SKIP(driver);
  auto lt = real_cublaslt();
  ASSERT_NE(lt, nullptr);
  PrimaryStream ps(*driver);
  const cd::DecodeShape shape{.batch = 4, .hidden = 256, .vocab = 4096};
  auto model = CudaDecodeModel::create(*driver, *lt, {.shape = shape, .seed = 9});
  ASSERT_TRUE(model) << model.error().message();
  ASSERT_EQ(driver->api().ctx_push_current(ps.context), CUDA_SUCCESS);
  for (const auto& k : (*model)->step_sequence()->groups.at(0).kernels) {
    ASSERT_TRUE((*model)->run_kernel(k.name, {.partition_sms = ps.sms, .stream = ps.stream}));
  }
  CUcontext popped = nullptr;
  driver->api().ctx_pop_current(&popped);
  auto logits = (*model)->read_logits();
  ASSERT_TRUE(logits) << logits.error().message();
  auto out = (*model)->finish_step();
  ASSERT_TRUE(out) << out.error().message();

  const auto h = static_cast<std::size_t>(shape.hidden);
  const auto v = static_cast<std::size_t>(shape.vocab);
  const auto e = cd::generate_fp16(9, cd::Tensor::kDecodeEmbedding, v * h);
  const auto w = cd::generate_fp16(9, cd::Tensor::kDecodeLmHead, v * h);
  const std::span<const std::uint16_t> hidden(e.data(), 4 * h);  // tokens 0..3
  EXPECT_EQ(out->kernel_checksums.at(0).first, "decode.embed");
  EXPECT_EQ(out->kernel_checksums.at(0).second, cd::checksum_of(hidden));
  EXPECT_EQ(out->kernel_checksums.at(1).second, cd::checksum_of(std::span<const float>(*logits)));
  EXPECT_EQ(out->kernel_checksums.at(3).second,
            cd::checksum_of(std::span<const std::int32_t>(out->tokens)));
  for (std::size_t b = 0; b < 4; ++b) {
    float best = -1e30f;
    for (std::size_t row = 0; row < v; ++row) {
      double ref = 0;
      for (std::size_t i = 0; i < h; ++i) {
        ref += static_cast<double>(cd::fp16_to_float(w[row * h + i])) *
               cd::fp16_to_float(hidden[b * h + i]);
      }
      const float got = (*logits)[b * v + row];
      ASSERT_NEAR(got, ref, 1e-3 * (1 + std::abs(ref))) << "sequence " << b << " row " << row;
      best = std::max(best, got);
    }
    EXPECT_EQ((*logits)[b * v + static_cast<std::size_t>(out->tokens[b])], best) << b;
  }
}

struct PartitionRun {
  std::vector<workload::StepOutput> steps;
  std::vector<std::vector<float>> logits;
};

// `steps` decode steps from seed 3 with every kernel in `partition`, keeping each step's logits.
PartitionRun run_in(const DriverLibrary& driver, CudaDecodeModel& model,
                    const GreenPartition& partition, int steps) {
  PartitionRun run;
  EXPECT_TRUE(model.reset(3));
  for (int i = 0; i < steps; ++i) {
    EXPECT_EQ(driver.api().ctx_push_current(partition.context), CUDA_SUCCESS);
    for (const auto& k : model.step_sequence()->groups.at(0).kernels) {
      auto st = model.run_kernel(
          k.name, {.partition_sms = partition.sms, .stream = partition.streams.at(0).get()});
      EXPECT_TRUE(st) << st.error().message();
    }
    CUcontext popped = nullptr;
    driver.api().ctx_pop_current(&popped);
    auto logits = model.read_logits();
    EXPECT_TRUE(logits) << logits.error().message();
    run.logits.push_back(logits ? *logits : std::vector<float>{});
    auto out = model.finish_step();
    EXPECT_TRUE(out) << out.error().message();
    run.steps.push_back(out ? *out : workload::StepOutput{});
  }
  return run;
}

// How many of the steps' logits differ bit for bit.
int differing_steps(const PartitionRun& a, const PartitionRun& b) {
  int n = 0;
  for (std::size_t i = 0; i < a.logits.size() && i < b.logits.size(); ++i) {
    const bool same = a.logits[i].size() == b.logits[i].size() &&
                      std::memcmp(a.logits[i].data(), b.logits[i].data(),
                                  a.logits[i].size() * sizeof(float)) == 0;
    n += same ? 0 : 1;
  }
  return n;
}

// Notes section 7 item 3: the same algorithm with a fixed SM target in a 16-SM and a 64-SM green
// context gives bitwise-equal output.
TEST(RealGpuDecode, FixedVariantIsBitwiseEqualIn16And64SmPartitions) {
  REAL_GPU_OR_SKIP(driver);
  auto lt = real_cublaslt();
  ASSERT_NE(lt, nullptr);
  auto dev = driver->device(0);
  ASSERT_TRUE(dev);
  const std::vector<int> sizes = {16, 64};
  auto set = GreenPartitionSet::create(*driver, dev->handle, sizes);
  ASSERT_TRUE(set) << set.error().message();
  const auto& parts = (*set)->partitions();
  DecodeModelOptions options;
  options.gemm = {.variant = GemmVariant::kFixed, .sm_count_target = 16};
  auto model = CudaDecodeModel::create(*driver, *lt, options);
  ASSERT_TRUE(model) << model.error().message();
  const auto small = run_in(*driver, **model, parts[0], 8);
  const auto large = run_in(*driver, **model, parts[1], 8);
  std::cout << "fixed: partitions of " << parts[0].sms << " and " << parts[1].sms
            << " SMs; steps whose logits differ: " << differing_steps(small, large) << " of 8\n";
  print_algorithms("fixed decode.lm_head", (*model)->algorithms_seen());
  EXPECT_EQ(differing_steps(small, large), 0);
  for (std::size_t i = 0; i < small.steps.size(); ++i) {
    EXPECT_EQ(small.steps[i].tokens, large.steps[i].tokens) << "step " << i;
    EXPECT_EQ(small.steps[i].kernel_checksums, large.steps[i].kernel_checksums) << "step " << i;
  }
  // One algorithm, whatever the partition.
  const auto seen = (*model)->algorithms_seen();
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& s : seen) {
    ASSERT_EQ(s.algorithms.size(), 1u);
    EXPECT_EQ(s.algorithms[0], (*model)->gemm_algorithm());
    EXPECT_EQ(s.algorithms[0].reduction, 0u);  // CUBLASLT_REDUCTION_SCHEME_NONE
  }
}

// The failure mode: the algorithm follows the partition. Whether the bits change is what the
// device check reports; nothing is asserted about it.
TEST(RealGpuDecode, DriftVariantReportsWhetherPartitionsDiffer) {
  REAL_GPU_OR_SKIP(driver);
  auto lt = real_cublaslt();
  ASSERT_NE(lt, nullptr);
  auto dev = driver->device(0);
  ASSERT_TRUE(dev);
  const std::vector<int> sizes = {16, 64};
  auto set = GreenPartitionSet::create(*driver, dev->handle, sizes);
  ASSERT_TRUE(set) << set.error().message();
  const auto& parts = (*set)->partitions();
  DecodeModelOptions options;
  options.gemm.variant = GemmVariant::kDrift;
  auto model = CudaDecodeModel::create(*driver, *lt, options);
  ASSERT_TRUE(model) << model.error().message();
  const auto small = run_in(*driver, **model, parts[0], 8);
  const auto large = run_in(*driver, **model, parts[1], 8);
  int tokens_differ = 0;
  for (std::size_t i = 0; i < small.steps.size(); ++i) {
    tokens_differ += small.steps[i].tokens != large.steps[i].tokens ? 1 : 0;
  }
  const int logits_differ = differing_steps(small, large);
  std::cout << "drift: partitions of " << parts[0].sms << " and " << parts[1].sms
            << " SMs; steps whose logits differ: " << logits_differ << " of 8, whose tokens "
            << "differ: " << tokens_differ << "\n";
  ::testing::Test::RecordProperty("drift_logits_differ_steps", logits_differ);
  ::testing::Test::RecordProperty("drift_tokens_differ_steps", tokens_differ);
  print_algorithms("drift decode.lm_head", (*model)->algorithms_seen());
  EXPECT_EQ((*model)->algorithms_seen().size(), 2u);
}

TEST(RealGpuTrain, StepsRepeatAndTheUpdateChangesTheNextGemm) {
  REAL_GPU_OR_SKIP(driver);
  auto lt = real_cublaslt();
  ASSERT_NE(lt, nullptr);
  PrimaryStream ps(*driver);
  TrainingModelOptions options;
  options.checksums = true;
  options.seed = 5;
  auto model = CudaTrainingModel::create(*driver, *lt, options);
  ASSERT_TRUE(model) << model.error().message();
  std::vector<workload::StepOutput> first;
  for (int i = 0; i < 3; ++i) {
    first.push_back(run_step(*driver, **model, ps.context, ps.stream, ps.sms));
  }
  ASSERT_EQ(first[0].kernel_checksums.size(), 3u);
  EXPECT_EQ(first[0].kernel_checksums[0].first, "train.gemm");
  EXPECT_NE(first[0].kernel_checksums[0].second, first[1].kernel_checksums[0].second);
  ASSERT_TRUE((*model)->reset(5));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(run_step(*driver, **model, ps.context, ps.stream, ps.sms).kernel_checksums,
              first[i].kernel_checksums)
        << "step " << i;
  }
  print_algorithms("train.gemm", (*model)->algorithms_seen());
}

TEST(RealGpuDecode, KernelsOutOfOrderAreRefused) {
  REAL_GPU_OR_SKIP(driver);
  auto lt = real_cublaslt();
  ASSERT_NE(lt, nullptr);
  PrimaryStream ps(*driver);
  auto model =
      CudaDecodeModel::create(*driver, *lt, {.shape = {.batch = 2, .hidden = 64, .vocab = 256}});
  ASSERT_TRUE(model) << model.error().message();
  auto early = (*model)->run_kernel("decode.softmax", {.stream = ps.stream});
  ASSERT_FALSE(early);
  EXPECT_THAT(early.error().message(), HasSubstr("expected decode.embed"));
  auto unknown = (*model)->run_kernel("decode.topk", {.stream = ps.stream});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), core::Code::kNotFound);
  auto finish = (*model)->finish_step();
  ASSERT_FALSE(finish);
  EXPECT_THAT(finish.error().message(), HasSubstr("after 0 of its 4 kernels"));
  auto partial =
      (*model)->run_kernel("decode.embed", {.stream = ps.stream, .block_begin = 1, .block_end = 2});
  ASSERT_FALSE(partial);
  EXPECT_THAT(partial.error().message(), HasSubstr("whole grids"));
}

}  // namespace
}  // namespace tessera::cuda
