// The determinism harness on the simulated GPU with the host reference: the fixed variant is
// identical under every mode, the drift variant's mismatch is found where the decode tenant's
// partition differs from alone, same seed gives the same report, and a mode the backend cannot
// attach is listed as unsupported with its reason.

#include "tessera/experiment/determinism_harness.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/fakes/forwarding_gpu_device.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/workload/models/compute_steps.hpp"

namespace tessera::experiment {
namespace {

using ::testing::HasSubstr;

// Small enough that a run takes milliseconds; a vocabulary of 16384 gives the LM head 256 tiles, a
// grid wider than any partition (so the SMs it holds are its partition's).
constexpr workload::compute_data::DecodeShape kShape{.batch = 2, .hidden = 256, .vocab = 16384};

hw::GpuSpec h100() {
  auto spec = hw::find_gpu("h100");
  EXPECT_TRUE(spec.has_value());
  return spec.value();
}

HarnessOptions small_options() {
  HarnessOptions o;
  o.tokens = 6;
  o.seed = 11;
  return o;
}

const RunReport* find_run(const VariantReport& v, std::string_view mode, int sms = 0) {
  for (const auto& r : v.colocated) {
    if (r.mode == mode && r.lc_partition_sms == sms) return &r;
  }
  return nullptr;
}

TEST(DeterminismHarness, FixedVariantIsIdenticalUnderEveryMode) {
  auto options = small_options();
  options.variants = {GemmVariant::kFixed};
  const auto report = run_determinism(sim_setup(h100(), kShape), options);
  ASSERT_TRUE(report.has_value()) << report.error().message();
  EXPECT_EQ(report->backend, "simulator");
  EXPECT_EQ(report->gpu, h100().name);
  ASSERT_EQ(report->variants.size(), 1u);
  const auto& v = report->variants[0];
  EXPECT_EQ(v.alone.steps, 6);
  // Every mode but exclusive, static partitions once per size (16, 32, 64).
  EXPECT_EQ(v.colocated.size(), gpu::sharing_modes().size() - 1 + 2);
  for (const auto& r : v.colocated) {
    SCOPED_TRACE(r.mode + " " + std::to_string(r.lc_partition_sms));
    ASSERT_TRUE(r.supported) << r.reason;
    EXPECT_TRUE(r.identical);
    EXPECT_FALSE(r.first_mismatch.has_value());
    EXPECT_EQ(r.steps, 6);
    EXPECT_EQ(r.tokens_compared, 6 * kShape.batch);
    EXPECT_EQ(r.tokens_differing, 0);
    EXPECT_GT(r.best_effort_steps, 0);
    EXPECT_EQ(r.scheduler_check, "ok");
  }
  EXPECT_TRUE(report->fixed_identical());
  // The static partition of 16 SMs ran the LM head on 16 SMs; alone, on the whole GPU.
  const auto* p16 = find_run(v, "static-partitions", 16);
  ASSERT_NE(p16, nullptr);
  const auto& lm16 = p16->kernel_sms.at(std::string(workload::compute_steps::kDecodeLmHead));
  ASSERT_EQ(lm16.size(), 1u);
  EXPECT_EQ(lm16.begin()->first, 16);
  EXPECT_EQ(p16->partition_changes, 0);
  EXPECT_EQ(v.alone.partition_changes, 0);
  const auto& lm_alone = v.alone.kernel_sms.at(std::string(workload::compute_steps::kDecodeLmHead));
  EXPECT_EQ(lm_alone.begin()->first, h100().sms);
  const std::string text = format_report(*report);
  EXPECT_THAT(text, HasSubstr("static-partitions 16"));
  EXPECT_THAT(text, HasSubstr("identical everywhere"));
}

TEST(DeterminismHarness, DriftVariantMismatchIsFoundInTheLmHead) {
  auto options = small_options();
  options.variants = {GemmVariant::kDrift};
  options.modes = {"static-partitions", "mps"};
  const auto report = run_determinism(sim_setup(h100(), kShape), options);
  ASSERT_TRUE(report.has_value()) << report.error().message();
  const auto& v = report->variants[0];
  for (int sms : {16, 32, 64}) {
    SCOPED_TRACE(sms);
    const auto* r = find_run(v, "static-partitions", sms);
    ASSERT_NE(r, nullptr);
    EXPECT_FALSE(r->identical);
    ASSERT_TRUE(r->first_mismatch.has_value());
    EXPECT_EQ(r->first_mismatch->kernel, workload::compute_steps::kDecodeLmHead);
    EXPECT_EQ(r->first_mismatch->step, 0);
    EXPECT_NE(r->first_mismatch->alone_checksum, r->first_mismatch->colocated_checksum);
    EXPECT_EQ(r->first_mismatch->alone_tokens.size(), static_cast<std::size_t>(kShape.batch));
  }
  // A drift mismatch is reported, never a failure of the determinism claim.
  EXPECT_TRUE(report->fixed_identical());
  EXPECT_THAT(format_report(*report), HasSubstr("first mismatch at step 0 in decode.lm_head"));
  const auto json = to_json(*report);
  EXPECT_EQ(json["variants"][0]["variant"], "drift");
  EXPECT_EQ(json["variants"][0]["identical"], false);
}

TEST(DeterminismHarness, SameSeedSameJson) {
  auto options = small_options();
  options.modes = {"cogpu", "static-partitions"};
  options.lc_partition_sms = {20};  // rounds to 24 on H100's 8-SM grid
  const auto a = run_determinism(sim_setup(h100(), kShape), options);
  const auto b = run_determinism(sim_setup(h100(), kShape), options);
  ASSERT_TRUE(a.has_value()) << a.error().message();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(to_json(*a).dump(2), to_json(*b).dump(2));
  const auto* r = find_run(a->variants[0], "static-partitions", 24);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->requested_sms, 20);
}

TEST(DeterminismHarness, RoundsPartitionsToTheGreenContextGrid) {
  const auto spec = h100();  // 132 SMs, 8-SM granules
  EXPECT_EQ(round_to_granule(spec, 16), 16);
  EXPECT_EQ(round_to_granule(spec, 13), 16);
  EXPECT_EQ(round_to_granule(spec, 11), 8);
  EXPECT_EQ(round_to_granule(spec, 1), 8);
  EXPECT_EQ(round_to_granule(spec, 500), 120);  // 16 whole granules, one left to training
}

// A device that forwards to another but claims fewer capabilities, as a backend without block
// ranges would, and refuses block-range launches as such a backend does.
class NoBlockRanges final : public test::ForwardingGpuDevice {
 public:
  using ForwardingGpuDevice::ForwardingGpuDevice;
  device::Capabilities capabilities() const override {
    auto c = ForwardingGpuDevice::capabilities();
    c.block_ranges = false;
    return c;
  }
  core::Status submit_range(device::StreamId s, workload::KernelSequencePtr, device::BlockRange,
                            std::uint64_t, device::DoneCallback) override {
    return unsupported(s, "block-range launches");
  }
};

class LimitedBackend final : public HarnessBackend {
 public:
  explicit LimitedBackend(std::unique_ptr<HarnessBackend> inner)
      : inner_(std::move(inner)), device_(inner_->device()) {}
  device::GpuDevice& device() override { return device_; }
  void bind(std::string_view kernel, workload::ComputeModel& model) override {
    inner_->bind(kernel, model);
  }
  core::Status drive(const std::function<bool()>& finished) override {
    return inner_->drive(finished);
  }

 private:
  std::unique_ptr<HarnessBackend> inner_;
  NoBlockRanges device_;
};

TEST(DeterminismHarness, ModeThatCannotAttachIsListedAsUnsupported) {
  auto setup = sim_setup(h100(), kShape);
  auto make_sim = setup.make_backend;
  setup.make_backend = [make_sim]() -> core::Result<std::unique_ptr<HarnessBackend>> {
    auto inner = make_sim();
    if (!inner) return std::unexpected(inner.error());
    return std::unique_ptr<HarnessBackend>(new LimitedBackend(std::move(*inner)));
  };
  auto options = small_options();
  options.variants = {GemmVariant::kFixed};
  options.modes = {"lithos", "mps"};
  const auto report = run_determinism(setup, options);
  ASSERT_TRUE(report.has_value()) << report.error().message();
  const auto& v = report->variants[0];
  const auto* lithos = find_run(v, "lithos");
  ASSERT_NE(lithos, nullptr);
  EXPECT_FALSE(lithos->supported);
  EXPECT_THAT(lithos->reason, HasSubstr("block"));
  const auto* mps = find_run(v, "mps");
  ASSERT_NE(mps, nullptr);
  EXPECT_TRUE(mps->supported);
  EXPECT_TRUE(mps->identical);
  EXPECT_TRUE(report->fixed_identical());
  EXPECT_THAT(format_report(*report), HasSubstr("lithos"));
  EXPECT_THAT(format_report(*report), HasSubstr("not supported on this backend"));
  EXPECT_EQ(to_json(*report)["variants"][0]["colocated"][0]["supported"], false);
}

TEST(DeterminismHarness, BadOptionsAreErrors) {
  auto options = small_options();
  options.modes = {"magic"};
  const auto unknown = run_determinism(sim_setup(h100(), kShape), options);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_THAT(unknown.error().message(), HasSubstr("unknown sharing mode 'magic'"));
  options = small_options();
  options.tokens = 0;
  EXPECT_FALSE(run_determinism(sim_setup(h100(), kShape), options).has_value());
  options = small_options();
  options.lc_partition_sms = {-8};
  EXPECT_FALSE(run_determinism(sim_setup(h100(), kShape), options).has_value());
}

}  // namespace
}  // namespace tessera::experiment
