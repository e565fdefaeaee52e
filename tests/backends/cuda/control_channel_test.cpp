// The control channel against the fake libcuda (tests/support/native/fake_cuda): the fake's
// resident tessera_control carries mailbox commands out at its progress points, so these tests
// check the host side of the protocol (layout, sequence numbers, acknowledgement, slots, errors,
// EXIT on destruction) and that a yield request reaches tessera_emulate through device memory. The
// real kernel's side runs in kernels_test.cpp's RealGpuKernels suite.

#include "tessera/backends/cuda/control_channel.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>

#include "kernel_session.hpp"
#include "support/cuda_test_env.hpp"
#include "tessera/backends/cuda/emulation.hpp"
#include "tessera/backends/cuda/kernel_params.h"

namespace tessera::cuda {
namespace {

using nlohmann::json;
using testing::FakeCuda;
using testing::KernelSession;

json h200(const json& extra = json::object()) {
  json script = {
      {"devices", json::array({{{"name", "NVIDIA H200"}, {"sms", 132}, {"cc", {9, 0}}}})}};
  script.update(extra);
  return script;
}

// The fake's execution-log entries of one kind ("op": "launch", "control", ...).
std::vector<json> ops(const FakeCuda& fake, const std::string& kind) {
  std::vector<json> out;
  const json log = fake.log();  // a range-for over log().at(...) would outlive the temporary
  for (const json& op : log.at("ops")) {
    if (op.at("op").get<std::string>() == kind) out.push_back(op);
  }
  return out;
}

class ControlChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    driver_ = fake_.open_driver();
    ASSERT_NE(driver_, nullptr);
    auto session = KernelSession::open(*driver_, 2);
    ASSERT_TRUE(session.has_value()) << session.error().message();
    session_ = std::move(*session);
  }
  std::unique_ptr<ControlChannel> start(ControlChannelOptions options = {}) {
    auto channel =
        ControlChannel::start(*driver_, session_->module(), session_->stream(0), options);
    EXPECT_TRUE(channel.has_value()) << channel.error().message();
    return channel ? std::move(*channel) : nullptr;
  }
  std::uint32_t flag(const ControlChannel& channel, int slot) {
    auto v = session_->read<std::uint32_t>(channel.yield_flag(slot), 1);
    EXPECT_TRUE(v.has_value()) << v.error().message();
    return v ? v->at(0) : 0xffffffffu;
  }

  FakeCuda fake_{h200()};
  std::unique_ptr<DriverLibrary> driver_;
  std::unique_ptr<KernelSession> session_;
};

TEST_F(ControlChannelTest, LaunchesOneResidentControlThreadWithItsBuffers) {
  ControlChannelOptions options;
  options.slots = 5;
  options.poll_ns = 700;
  auto channel = start(options);
  ASSERT_NE(channel, nullptr);
  EXPECT_EQ(channel->slots(), 5);
  fake_.progress();
  const auto launches = ops(fake_, "launch");
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].at("kernel"), TESSERA_KERNEL_CONTROL);
  EXPECT_EQ(launches[0].at("grid"), json({1, 1, 1}));
  EXPECT_EQ(launches[0].at("block"), json({1, 1, 1}));
  EXPECT_TRUE(launches[0].contains("resident") && launches[0].at("resident").get<bool>());
  // The parameters the kernel got: the flags the channel hands out, its slot count, its poll.
  TesseraControlParams p{};
  const std::string hex = launches[0].at("params_hex");
  ASSERT_EQ(hex.size(), 2 * sizeof(p));
  auto* bytes = reinterpret_cast<unsigned char*>(&p);
  for (std::size_t i = 0; i < sizeof(p); ++i) {
    bytes[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  EXPECT_EQ(p.yield_flags, channel->yield_flag(0));
  EXPECT_EQ(p.slots, 5u);
  EXPECT_EQ(p.poll_ns, 700u);
  EXPECT_NE(p.mailbox, 0u);
  for (int slot = 0; slot < 5; ++slot) {
    EXPECT_EQ(channel->yield_flag(slot), channel->yield_flag(0) + 4u * slot);
    EXPECT_EQ(flag(*channel, slot), 0u) << "flags start cleared";
  }
}

TEST_F(ControlChannelTest, YieldSetsTheFlagOnceTheControlKernelRuns) {
  auto channel = start();
  ASSERT_NE(channel, nullptr);
  auto seq = channel->request_yield(3);
  ASSERT_TRUE(seq.has_value()) << seq.error().message();
  EXPECT_EQ(*seq, 1u);
  EXPECT_FALSE(channel->acknowledged(*seq)) << "the fake's device has not run since the post";
  fake_.progress();
  EXPECT_TRUE(channel->acknowledged(*seq));
  EXPECT_EQ(flag(*channel, 3), 1u);
  EXPECT_EQ(flag(*channel, 2), 0u);
  EXPECT_EQ(flag(*channel, 4), 0u);

  auto cleared = channel->clear(3);
  ASSERT_TRUE(cleared.has_value()) << cleared.error().message();
  EXPECT_EQ(*cleared, 2u);
  // wait_acknowledged queries the control kernel's stream, which runs the fake's device.
  ASSERT_TRUE(channel->wait_acknowledged(*cleared, core::millis(100)));
  EXPECT_EQ(flag(*channel, 3), 0u);
  const auto controls = ops(fake_, "control");
  ASSERT_EQ(controls.size(), 2u);
  EXPECT_EQ(controls[0].at("command"), static_cast<int>(TESSERA_CONTROL_YIELD));
  EXPECT_EQ(controls[0].at("slot"), 3);
  EXPECT_EQ(controls[1].at("command"), static_cast<int>(TESSERA_CONTROL_CLEAR));
}

TEST_F(ControlChannelTest, PostingWaitsForThePreviousCommandOnly) {
  auto channel = start();
  ASSERT_NE(channel, nullptr);
  // Three posts without a synchronisation point in between: each post finds the previous command
  // unacknowledged and drives the control kernel's stream until it is.
  std::vector<std::uint32_t> seqs;
  for (int slot : {0, 1, 2}) {
    auto seq = channel->request_yield(slot);
    ASSERT_TRUE(seq.has_value()) << seq.error().message();
    seqs.push_back(*seq);
  }
  EXPECT_EQ(seqs, (std::vector<std::uint32_t>{1, 2, 3}));
  ASSERT_TRUE(channel->wait_acknowledged(3, core::millis(100)));
  for (int slot : {0, 1, 2}) EXPECT_EQ(flag(*channel, slot), 1u) << "no command was lost";
  EXPECT_EQ(ops(fake_, "control").size(), 3u);
}

TEST_F(ControlChannelTest, AckTimeComesFromTheDevice) {
  session_.reset();  // its handles belong to the state the reset replaces
  fake_.reset(h200({{"kernel_ns", {{"*", 5000}}}}));
  driver_ = fake_.open_driver();
  auto session = KernelSession::open(*driver_, 2);
  ASSERT_TRUE(session.has_value());
  session_ = std::move(*session);
  auto channel = start();
  ASSERT_NE(channel, nullptr);
  auto first = channel->request_yield(0);
  ASSERT_TRUE(first && channel->wait_acknowledged(*first, core::millis(100)));
  const std::uint64_t t0 = channel->last_ack_gpu_time_ns();
  // A kernel on another stream moves the fake's device clock forward.
  auto scratch = session_->alloc(4);
  ASSERT_TRUE(scratch.has_value());
  TesseraRangeDotParams p{};
  p.virtual_blocks = 1;
  p.x = p.w = *scratch;
  p.out = *scratch;
  p.per_block = 1;
  ASSERT_TRUE(
      session_->module().launch(TESSERA_KERNEL_RANGE_DOT, 1, 32, 0, session_->stream(1), p));
  ASSERT_TRUE(session_->sync(1));
  auto second = channel->clear(0);
  ASSERT_TRUE(second && channel->wait_acknowledged(*second, core::millis(100)));
  EXPECT_GE(channel->last_ack_gpu_time_ns(), t0);
  const auto controls = ops(fake_, "control");
  ASSERT_EQ(controls.size(), 2u);
  EXPECT_EQ(channel->last_ack_gpu_time_ns(), controls[1].at("time_ns").get<std::uint64_t>());
}

TEST_F(ControlChannelTest, SlotsOutsideTheChannelAreRefused) {
  ControlChannelOptions options;
  options.slots = 4;
  auto channel = start(options);
  ASSERT_NE(channel, nullptr);
  for (int slot : {-1, 4, 100}) {
    auto y = channel->request_yield(slot);
    ASSERT_FALSE(y.has_value());
    EXPECT_EQ(y.error().code(), core::Code::kInvalidArgument);
    EXPECT_NE(y.error().message().find(fmt::format("slot {} is outside", slot)), std::string::npos)
        << y.error().message();
    EXPECT_FALSE(channel->clear(slot).has_value());
  }
  fake_.progress();
  EXPECT_TRUE(ops(fake_, "control").empty()) << "nothing was posted";
}

TEST_F(ControlChannelTest, TimeoutNamesTheSequenceNumber) {
  auto channel = start();
  ASSERT_NE(channel, nullptr);
  // Command 7 is never posted, so it is never acknowledged.
  auto st = channel->wait_acknowledged(7, core::millis(5));
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code(), core::Code::kFailedPrecondition);
  EXPECT_NE(st.error().message().find("control command 7 was not acknowledged within"),
            std::string::npos)
      << st.error().message();
}

// The control kernel stops behind the channel's back (EXIT written straight into its mailbox):
// the next wait fails at once, saying so, and destruction still frees the buffers.
TEST_F(ControlChannelTest, AControlKernelThatIsGoneIsReportedAtOnce) {
  auto channel = start();
  ASSERT_NE(channel, nullptr);
  fake_.progress();
  const auto launches = ops(fake_, "launch");
  ASSERT_EQ(launches.size(), 1u);
  TesseraControlParams p{};
  const std::string hex = launches[0].at("params_hex");
  auto* bytes = reinterpret_cast<unsigned char*>(&p);
  for (std::size_t i = 0; i < sizeof(p); ++i) {
    bytes[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  // Mapped host memory has the same address on both sides in the fake.
  auto* box = reinterpret_cast<TesseraControlMailbox*>(p.mailbox);
  // A sequence number half the range away from the channel's, so its acknowledgement does not
  // count as one of the channel's commands.
  box->op = TESSERA_CONTROL_EXIT;
  std::atomic_ref<std::uint32_t>(box->seq).store(0x90000000u, std::memory_order_release);
  fake_.progress();
  // Posting waits for command 0's acknowledgement, and learns the kernel is gone.
  auto seq = channel->request_yield(0);
  ASSERT_FALSE(seq.has_value());
  EXPECT_EQ(seq.error().code(), core::Code::kFailedPrecondition);
  EXPECT_NE(seq.error().message().find("the control kernel is no longer running"),
            std::string::npos)
      << seq.error().message();
  channel.reset();
  const json calls = fake_.log().at("calls");
  EXPECT_EQ(std::count_if(
                calls.begin(), calls.end(),
                [](const json& c) { return c.at("call") == "cuMemFreeHost" && c.at("ret") == 0; }),
            1);
}

TEST_F(ControlChannelTest, DestructionSendsExitAndTheControlKernelCompletes) {
  auto channel = start();
  ASSERT_NE(channel, nullptr);
  auto y = channel->request_yield(1);
  ASSERT_TRUE(y.has_value());
  channel.reset();
  const auto controls = ops(fake_, "control");
  ASSERT_EQ(controls.size(), 2u);
  EXPECT_EQ(controls[1].at("command"), static_cast<int>(TESSERA_CONTROL_EXIT));
  const auto launches = ops(fake_, "launch");
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_TRUE(launches[0].contains("end_ns")) << "the control kernel completed";
  const json calls = fake_.log().at("calls");
  const auto count = [&](const std::string& name) {
    return std::count_if(calls.begin(), calls.end(),
                         [&](const json& c) { return c.at("call") == name && c.at("ret") == 0; });
  };
  EXPECT_EQ(count("cuMemFreeHost"), 1);
  EXPECT_EQ(count("cuMemFree"), 1);
  EXPECT_EQ(session_->driver().api().stream_query(session_->stream(0)), CUDA_SUCCESS);
}

TEST_F(ControlChannelTest, AFailedLaunchFreesWhatStartAllocated) {
  session_.reset();
  fake_.reset(
      h200({{"fail", json::array({{{"call", "cuLaunchKernel"}, {"nth", 1}, {"ret", 1}}})}}));
  driver_ = fake_.open_driver();
  auto session = KernelSession::open(*driver_, 1);
  ASSERT_TRUE(session.has_value());
  session_ = std::move(*session);
  auto channel = ControlChannel::start(*driver_, session_->module(), session_->stream(0));
  ASSERT_FALSE(channel.has_value());
  EXPECT_NE(channel.error().message().find("cuLaunchKernel(tessera_control)"), std::string::npos)
      << channel.error().message();
  const json calls = fake_.log().at("calls");
  const auto count = [&](const std::string& name) {
    return std::count_if(calls.begin(), calls.end(),
                         [&](const json& c) { return c.at("call") == name && c.at("ret") == 0; });
  };
  EXPECT_EQ(count("cuMemHostAlloc"), 1);
  EXPECT_EQ(count("cuMemFreeHost"), 1);
  EXPECT_EQ(count("cuMemFree"), 1);
}

TEST_F(ControlChannelTest, OptionsAreChecked) {
  ControlChannelOptions options;
  options.slots = 0;
  auto channel = ControlChannel::start(*driver_, session_->module(), session_->stream(0), options);
  ASSERT_FALSE(channel.has_value());
  EXPECT_NE(channel.error().message().find("at least one yield slot"), std::string::npos);
}

// End to end on the fake: a raised flag stops tessera_emulate at its first checkpoint in every
// block (progress 1, all blocks counted as yielded); once cleared, a relaunch with the same
// parameters finishes every block.
TEST_F(ControlChannelTest, AYieldRequestStopsEmulateAndAClearedRelaunchFinishes) {
  auto channel = start();
  ASSERT_NE(channel, nullptr);
  workload::Kernel k;
  k.name = "persistent";
  k.blocks = 12;
  k.block.threads = 128;
  k.flops_per_block = 1e6;
  k.bytes_per_block = 4096;
  k.checkpoints = 3;
  auto scratch = session_->alloc(1 << 16);
  auto sink = session_->alloc(4);
  auto progress = session_->alloc(4 * 12);
  auto yielded = session_->alloc(4);
  ASSERT_TRUE(scratch && sink && progress && yielded);
  EmulationBuffers b;
  b.scratch = *scratch;
  b.scratch_bytes = 1 << 16;
  b.sink = *sink;
  b.yield_flag = channel->yield_flag(2);
  b.progress = *progress;
  b.yielded_blocks = *yielded;
  auto spec = hw::find_gpu("h200");
  ASSERT_TRUE(spec.has_value());
  auto launch = emulation_launch(k, {0, 12}, *spec, b);
  ASSERT_TRUE(launch.has_value()) << launch.error().message();

  auto y = channel->request_yield(2);
  ASSERT_TRUE(y && channel->wait_acknowledged(*y, core::millis(100)));
  ASSERT_TRUE(session_->module().launch(TESSERA_KERNEL_EMULATE, launch->grid, launch->block,
                                        launch->shared_bytes, session_->stream(1), launch->params));
  ASSERT_TRUE(session_->sync(1));
  auto p = session_->read<std::uint32_t>(*progress, 12);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, std::vector<std::uint32_t>(12, 1u));
  EXPECT_EQ(session_->read<std::uint32_t>(*yielded, 1).value_or(std::vector<std::uint32_t>{}),
            std::vector<std::uint32_t>{12});

  auto c = channel->clear(2);
  ASSERT_TRUE(c && channel->wait_acknowledged(*c, core::millis(100)));
  ASSERT_TRUE(session_->write<std::uint32_t>(*yielded, {0}));
  ASSERT_TRUE(session_->module().launch(TESSERA_KERNEL_EMULATE, launch->grid, launch->block,
                                        launch->shared_bytes, session_->stream(1), launch->params));
  ASSERT_TRUE(session_->sync(1));
  p = session_->read<std::uint32_t>(*progress, 12);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, std::vector<std::uint32_t>(12, 4u));
  EXPECT_EQ(session_->read<std::uint32_t>(*yielded, 1).value_or(std::vector<std::uint32_t>{}),
            std::vector<std::uint32_t>{0});
}

}  // namespace
}  // namespace tessera::cuda
