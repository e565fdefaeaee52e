// Streams, the block scheduler, contexts and the device's error handling.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "backends/sim/gpu/mixed_scenario.hpp"
#include "backends/sim/gpu/sim_test_util.hpp"
#include "support/test_gpu.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"

namespace tessera::sim {
namespace {

using test::make_kernel;
using test::on_sms;
using test::sequence_of;
using ::testing::HasSubstr;

constexpr core::Nanos kUs = core::kNanosPerMicro;

class Streams : public ::testing::TestWithParam<bool> {
 protected:
  Engine engine;
  SimGpu gpu{engine, test::TestGpu().build(), test::exact_options(GetParam())};
  test::EventLog log;
  std::vector<device::SubmissionDone> dones;

  void SetUp() override { gpu.add_observer(&log); }
  device::DoneCallback record() {
    return [this](const device::SubmissionDone& d) { dones.push_back(d); };
  }
};

TEST_P(Streams, KernelsOfAStreamRunInOrderBackToBack) {
  const auto s = *gpu.create_stream({});
  ASSERT_TRUE(gpu.submit(s,
                         sequence_of({make_kernel("a", 16, 1e6, 0), make_kernel("b", 32, 1e6, 0),
                                      make_kernel("c", 16, 3e6, 0)}),
                         7, record()));
  engine.run_until(core::kNever);
  ASSERT_EQ(log.events.size(), 3u);
  EXPECT_EQ(log.events[0].name, "a");
  EXPECT_EQ(log.events[1].name, "b");
  EXPECT_EQ(log.events[2].name, "c");
  EXPECT_EQ(log.events[0].start, 0);
  EXPECT_EQ(log.events[0].end, 1 * kUs);
  EXPECT_EQ(log.events[1].start, 1 * kUs);
  EXPECT_EQ(log.events[1].end, 3 * kUs);
  EXPECT_EQ(log.events[2].end, 6 * kUs);
  for (const auto& e : log.events) {
    EXPECT_EQ(e.submission_tag, 7u);
    EXPECT_EQ(e.sms, 16);
  }
  ASSERT_EQ(dones.size(), 1u);
  EXPECT_EQ(dones[0].tag, 7u);
  EXPECT_EQ(dones[0].submitted, 0);
  EXPECT_EQ(dones[0].started, 0);
  EXPECT_EQ(dones[0].finished, 6 * kUs);
  EXPECT_EQ(gpu.stats().kernels_completed, 3);
}

TEST_P(Streams, RepeatedGroupsRunTheirKernelsRepeatTimes) {
  auto seq = std::make_shared<workload::KernelSequence>();
  seq->groups.push_back({.kernels = {make_kernel("embed", 16, 1e6, 0)}, .repeat = 1});
  seq->groups.push_back({.kernels = {}, .repeat = 5});  // empty groups are skipped
  seq->groups.push_back(
      {.kernels = {make_kernel("qkv", 16, 1e6, 0), make_kernel("mlp", 16, 1e6, 0)}, .repeat = 3});
  const auto s = *gpu.create_stream({});
  ASSERT_TRUE(gpu.submit(s, seq, 0, record()));
  engine.run_until(core::kNever);
  std::vector<std::string> names;
  for (const auto& e : log.events) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"embed", "qkv", "mlp", "qkv", "mlp", "qkv", "mlp"}));
  EXPECT_EQ(dones.at(0).finished, 7 * kUs);
}

TEST_P(Streams, SubmissionsQueueInOrder) {
  const auto s = *gpu.create_stream({});
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("first", 16, 2e6, 0)}), 1, record()));
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("second", 16, 1e6, 0)}), 2, record()));
  engine.run_until(core::kNever);
  ASSERT_EQ(dones.size(), 2u);
  EXPECT_EQ(dones[0].tag, 1u);
  EXPECT_EQ(dones[1].tag, 2u);
  EXPECT_EQ(dones[1].submitted, 0);
  EXPECT_EQ(dones[1].started, 2 * kUs);
  EXPECT_EQ(dones[1].finished, 3 * kUs);
}

TEST_P(Streams, ConfigureStreamAppliesFromTheNextKernel) {
  const auto s = *gpu.create_stream({});
  ASSERT_TRUE(gpu.submit(
      s, sequence_of({make_kernel("a", 160, 1e6, 0), make_kernel("b", 160, 1e6, 0)}), 0, record()));
  engine.schedule_at(3 * kUs, [&] { ASSERT_TRUE(gpu.configure_stream(s, on_sms(0, 4))); });
  engine.run_until(core::kNever);
  ASSERT_EQ(log.events.size(), 2u);
  EXPECT_EQ(log.events[0].sms, 16);  // the running kernel keeps its SMs
  EXPECT_EQ(log.events[0].end, 10 * kUs);
  EXPECT_EQ(log.events[1].sms, 4);
  EXPECT_EQ(log.events[1].end, 50 * kUs);
}

TEST_P(Streams, WaitingKernelsStartInReadyOrderAndGrowIntoFreedSms) {
  const auto a = *gpu.create_stream(
      {.context = 1, .sms = {}, .max_sms = 0, .bandwidth_domain = 0, .priority = 0});
  const auto b = *gpu.create_stream(
      {.context = 2, .sms = {}, .max_sms = 0, .bandwidth_domain = 0, .priority = 0});
  const auto c = *gpu.create_stream(
      {.context = 3, .sms = {}, .max_sms = 0, .bandwidth_domain = 0, .priority = 0});
  ASSERT_TRUE(gpu.submit(a, sequence_of({make_kernel("a", 16, 10e6, 0)}), 0, record()));
  engine.schedule_at(1 * kUs, [&] {
    ASSERT_TRUE(gpu.submit(b, sequence_of({make_kernel("b", 12, 1e6, 0)}), 0, record()));
  });
  engine.schedule_at(2 * kUs, [&] {
    ASSERT_TRUE(gpu.submit(c, sequence_of({make_kernel("c", 48, 1e6, 0)}), 0, record()));
  });
  engine.run_until(core::kNever);
  const auto eb = log.of_stream(b).at(0);
  const auto ec = log.of_stream(c).at(0);
  // At 10 us A frees all 16 SMs: B (ready first) takes the 12 it needs, C the 4 left.
  EXPECT_EQ(eb.start, 10 * kUs);
  EXPECT_EQ(eb.sms, 12);
  EXPECT_EQ(eb.end, 11 * kUs);
  EXPECT_EQ(ec.start, 10 * kUs);
  EXPECT_EQ(ec.sms, 4);
  // C ran one round on 4 SMs, then its 44 blocks left spread over all 16: 3 more rounds.
  EXPECT_EQ(ec.end, 14 * kUs);
}

TEST_P(Streams, TheEarliestLaunchedKernelGrowsFirst) {
  const auto a = *gpu.create_stream(on_sms(0, 16, 1));
  const auto b = *gpu.create_stream(on_sms(0, 12, 2));
  const auto c = *gpu.create_stream(on_sms(4, 16, 3));
  // A holds SMs 0-7 for 1 us; B starts on 8-11 and C on 12-15, both wanting more.
  ASSERT_TRUE(gpu.submit(a, sequence_of({make_kernel("a", 8, 1e6, 0)}), 0, record()));
  ASSERT_TRUE(gpu.submit(b, sequence_of({make_kernel("b", 160, 1e6, 0)}), 0, record()));
  ASSERT_TRUE(gpu.submit(c, sequence_of({make_kernel("c", 160, 1e6, 0)}), 0, record()));
  engine.run_until(core::kNever);
  const auto eb = log.of_stream(b).at(0);
  const auto ec = log.of_stream(c).at(0);
  EXPECT_EQ(eb.sms, 4);
  EXPECT_EQ(ec.sms, 4);
  // At 1 us B (launched first) takes all of 0-7, though C's set covers 4-7 too: 156 blocks left
  // on 12 SMs is 13 rounds. C stays on 4 SMs until B ends at 14 us (56 blocks done), then grows
  // onto 4-11: 104 blocks on 12 SMs is 9 rounds.
  EXPECT_EQ(eb.end, 14 * kUs);
  EXPECT_EQ(ec.end, 23 * kUs);
}

TEST_P(Streams, CapLimitsTheSmsAKernelHolds) {
  const auto s = *gpu.create_stream(
      {.context = 0, .sms = {}, .max_sms = 5, .bandwidth_domain = 0, .priority = 0});
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("k", 100, 1e6, 0)}), 0, record()));
  engine.run_until(core::kNever);
  EXPECT_EQ(log.events.at(0).sms, 5);
  EXPECT_EQ(log.events.at(0).end, 20 * kUs);
}

TEST_P(Streams, DoneCallbackMaySubmitAgainReentrantly) {
  const auto s = *gpu.create_stream(on_sms(0, 8, 1));
  const auto other = *gpu.create_stream(on_sms(8, 16, 2));
  int rounds = 0;
  std::function<void(const device::SubmissionDone&)> again = [&](const device::SubmissionDone& d) {
    dones.push_back(d);
    if (++rounds < 5) {
      ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("step", 8, 1e6, 0)}), d.tag + 1, again));
      // And work on another stream from inside the callback.
      ASSERT_TRUE(
          gpu.submit(other, sequence_of({make_kernel("side", 8, 1e6, 0)}), 100 + d.tag, nullptr));
    }
  };
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("step", 8, 1e6, 0)}), 0, again));
  engine.run_until(core::kNever);
  ASSERT_EQ(dones.size(), 5u);
  for (std::size_t i = 0; i < dones.size(); ++i) {
    EXPECT_EQ(dones[i].tag, i);
    EXPECT_EQ(dones[i].submitted, static_cast<core::Nanos>(i) * kUs);
    EXPECT_EQ(dones[i].finished, static_cast<core::Nanos>(i + 1) * kUs);
  }
  EXPECT_EQ(log.of_stream(other).size(), 4u);
}

// An observer that submits from inside its notification.
class Resubmitter final : public device::DeviceObserver {
 public:
  Resubmitter(SimGpu& gpu, device::StreamId s) : gpu_(gpu), s_(s) {}
  void on_kernel_complete(const device::KernelEvent& e) override {
    if (e.stream == s_ && e.submission_tag < 3) {
      ok_ = ok_ && gpu_.submit(s_, sequence_of({make_kernel("again", 16, 1e6, 0)}),
                               e.submission_tag + 1, nullptr)
                       .has_value();
    }
  }
  bool ok_ = true;

 private:
  SimGpu& gpu_;
  device::StreamId s_;
};

TEST_P(Streams, ObserversMaySubmitReentrantly) {
  const auto s = *gpu.create_stream({});
  Resubmitter r(gpu, s);
  gpu.add_observer(&r);
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("k", 16, 1e6, 0)}), 0, nullptr));
  engine.run_until(core::kNever);
  EXPECT_TRUE(r.ok_);
  ASSERT_EQ(log.events.size(), 4u);
  EXPECT_EQ(log.events.back().end, 4 * kUs);
}

// Records what it is told, in order: each run of kernels it is handed, and each submission's end.
class OrderLog final : public device::DeviceObserver {
 public:
  void on_kernel_complete(const device::KernelEvent& e) override {
    entries.push_back("kernel " + std::string(e.kernel->name));
  }
  void on_kernels_complete(std::span<const device::KernelEvent> events) override {
    ++runs;
    for (const auto& e : events) on_kernel_complete(e);
  }
  std::vector<std::string> entries;
  int runs = 0;
};

TEST_P(Streams, KernelsReachObserversBeforeTheirSubmissionsEndInOrder) {
  const auto s = *gpu.create_stream({});
  OrderLog order;
  gpu.add_observer(&order);
  const auto done = [&](const char* what) {
    return [&order, what](const device::SubmissionDone&) {
      order.entries.push_back(std::string("done ") + what);
    };
  };
  ASSERT_TRUE(gpu.submit(s,
                         sequence_of({make_kernel("a1", 16, 1e6, 0), make_kernel("a2", 16, 1e6, 0),
                                      make_kernel("a3", 16, 1e6, 0)}),
                         0, done("a")));
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("b1", 16, 1e6, 0)}), 1, done("b")));
  engine.run_until(core::kNever);
  EXPECT_EQ(order.entries, (std::vector<std::string>{"kernel a1", "kernel a2", "kernel a3",
                                                     "done a", "kernel b1", "done b"}));
  // Batched, a stream's kernels that end together are handed over as one run.
  if (GetParam()) {
    EXPECT_LT(order.runs, 4);
  }
}

TEST_P(Streams, SuspendResumeKeepsProgress) {
  const auto s = *gpu.create_stream(on_sms(0, 16, 9));
  ASSERT_TRUE(gpu.submit(
      s, sequence_of({make_kernel("long", 160, 1e6, 0), make_kernel("next", 16, 1e6, 0)}), 0,
      record()));
  engine.schedule_at(3 * kUs, [&] { ASSERT_TRUE(gpu.suspend_context(9)); });
  engine.schedule_at(7 * kUs, [&] { ASSERT_TRUE(gpu.resume_context(9)); });
  engine.run_until(core::kNever);
  ASSERT_EQ(log.events.size(), 2u);
  EXPECT_EQ(log.events[0].start, 0);       // the same launch, not a new one
  EXPECT_EQ(log.events[0].end, 14 * kUs);  // 10 us of work plus 4 us suspended
  EXPECT_EQ(log.events[1].end, 15 * kUs);
  // SMs were held only while running: 11 us of 16 SMs in 15 us.
  EXPECT_DOUBLE_EQ(gpu.stats().sm_busy_fraction, 11.0 / 15);
}

TEST_P(Streams, ASuspendedContextGivesItsSmsToOthersAndWaitsForThemOnResume) {
  const auto a = *gpu.create_stream(on_sms(0, 16, 1));
  const auto b = *gpu.create_stream(on_sms(0, 16, 2));
  ASSERT_TRUE(gpu.submit(a, sequence_of({make_kernel("a", 160, 1e6, 0)}), 0, record()));
  engine.schedule_at(1 * kUs, [&] {
    ASSERT_TRUE(gpu.submit(b, sequence_of({make_kernel("b", 32, 1e6, 0)}), 0, record()));
  });
  engine.schedule_at(4 * kUs, [&] { ASSERT_TRUE(gpu.suspend_context(1)); });
  engine.schedule_at(5 * kUs, [&] { ASSERT_TRUE(gpu.resume_context(1)); });
  engine.run_until(core::kNever);
  const auto ea = log.of_stream(a).at(0);
  const auto eb = log.of_stream(b).at(0);
  EXPECT_EQ(eb.start, 4 * kUs);  // B waited for A's SMs until A was suspended
  EXPECT_EQ(eb.end, 6 * kUs);
  EXPECT_EQ(ea.end, 12 * kUs);  // 4 us done, resumed at 6 us for the 6 us left
}

TEST_P(Streams, KernelsQueuedInASuspendedContextWaitForResume) {
  const auto s = *gpu.create_stream(on_sms(0, 16, 5));
  ASSERT_TRUE(gpu.suspend_context(5));
  ASSERT_TRUE(gpu.submit(s, sequence_of({make_kernel("k", 16, 1e6, 0)}), 0, record()));
  engine.run_until(10 * kUs);
  EXPECT_TRUE(log.events.empty());
  ASSERT_TRUE(gpu.resume_context(5));
  engine.run_until(core::kNever);
  ASSERT_EQ(dones.size(), 1u);
  EXPECT_EQ(dones[0].started, 10 * kUs);
  EXPECT_EQ(dones[0].finished, 11 * kUs);
}

TEST_P(Streams, MovingAQueuedStreamIntoASuspendedContextHoldsItsWork) {
  const auto a = *gpu.create_stream(on_sms(0, 16, 1));
  const auto b = *gpu.create_stream(on_sms(0, 16, 2));
  ASSERT_TRUE(gpu.suspend_context(2));
  ASSERT_TRUE(gpu.submit(a, sequence_of({make_kernel("a", 16, 1e6, 0)}), 0, record()));
  ASSERT_TRUE(gpu.submit(b, sequence_of({make_kernel("b", 16, 1e6, 0)}), 0, record()));
  ASSERT_TRUE(gpu.configure_stream(b, on_sms(0, 16, 1)));  // out of the suspended context
  ASSERT_TRUE(gpu.configure_stream(a, on_sms(0, 16, 2)));  // a's next kernel would wait
  engine.run_until(core::kNever);
  EXPECT_EQ(log.of_stream(b).at(0).end, 2 * kUs);  // ran after a's kernel freed the SMs
  EXPECT_EQ(log.of_stream(a).at(0).context, 1u);   // launched before the move
}

TEST_P(Streams, ResumeOnFewerSmsReplansTheWorkLeft) {
  const auto a = *gpu.create_stream(on_sms(0, 16, 1));
  const auto b = *gpu.create_stream(on_sms(8, 16, 2));
  ASSERT_TRUE(gpu.submit(a, sequence_of({make_kernel("a", 160, 1e6, 0)}), 0, record()));
  engine.schedule_at(2 * kUs, [&] {
    ASSERT_TRUE(gpu.suspend_context(1));
    ASSERT_TRUE(gpu.submit(b, sequence_of({make_kernel("b", 80, 1e6, 0)}), 0, record()));
    ASSERT_TRUE(gpu.resume_context(1));
  });
  engine.run_until(core::kNever);
  // B holds SMs 8-15 from 2 us to 12 us. A resumes at 2 us on SMs 0-7 with 128 blocks left
  // (16 rounds there), grows back to 16 SMs at 12 us with 48 left: 3 more rounds.
  EXPECT_EQ(log.of_stream(b).at(0).end, 12 * kUs);
  EXPECT_EQ(log.of_stream(a).at(0).end, 15 * kUs);
}

TEST_P(Streams, ResubmittingASequenceRetimesItForTheCurrentClockAndBandwidth) {
  // The same sequence object, submitted again after the clock drops and after bandwidth is
  // carved away: each run is timed for the device as it is then.
  const auto s = *gpu.create_stream({});
  const auto seq = sequence_of({make_kernel("gemm", 16, 1e6, 0), make_kernel("copy", 16, 0, 1e5)});
  core::Nanos t0 = 0;
  std::vector<core::Nanos> took;
  const auto run = [&] {
    t0 = engine.now();
    ASSERT_TRUE(gpu.submit(s, seq, 0, [&](const auto& d) { took.push_back(d.finished - t0); }));
    engine.run_until(core::kNever);
  };
  run();
  ASSERT_TRUE(gpu.set_clock_mhz(500));
  run();
  ASSERT_TRUE(gpu.create_bandwidth_domain(0.5));
  run();
  // gemm 1 us at boost, 2 us at half clock; copy 1.6e6 bytes at 1600 then 800 bytes/ns.
  EXPECT_EQ(took, (std::vector<core::Nanos>{2 * kUs, 3 * kUs, 4 * kUs}));
}

TEST_P(Streams, SameInputsGiveByteIdenticalEventLogs) {
  const auto first = test::run_mixed(11, GetParam(), 2 * core::kNanosPerMilli);
  const auto second = test::run_mixed(11, GetParam(), 2 * core::kNanosPerMilli);
  EXPECT_GT(first.stats.kernels_completed, 500);
  EXPECT_EQ(first.log, second.log);
  EXPECT_EQ(first.done_per_stream, second.done_per_stream);
  EXPECT_EQ(first.stats.energy_joules, second.stats.energy_joules);
  EXPECT_NE(first.log, test::run_mixed(12, GetParam(), 2 * core::kNanosPerMilli).log);
}

INSTANTIATE_TEST_SUITE_P(PerKernelAndBatched, Streams, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Batched" : "PerKernel"; });

// --- Errors ---

class DeviceErrors : public ::testing::Test {
 protected:
  Engine engine;
  SimGpu gpu{engine, test::TestGpu().build(), test::exact_options()};

  template <typename T>
  static std::string message(const std::expected<T, core::Error>& r) {
    return r ? std::string{} : r.error().message();
  }
};

TEST_F(DeviceErrors, CapabilitiesAreAllPresent) {
  const auto caps = gpu.capabilities();
  EXPECT_TRUE(caps.sm_partitions);
  EXPECT_TRUE(caps.sm_limit);
  EXPECT_TRUE(caps.bandwidth_partitions);
  EXPECT_TRUE(caps.context_preemption);
  EXPECT_TRUE(caps.clock_control);
  EXPECT_EQ(&gpu.executor(), &engine);
}

TEST_F(DeviceErrors, SubmitRejectsAnInvalidKernelBeforeQueueingAnything) {
  const auto s = *gpu.create_stream({});
  auto bad = make_kernel("huge_block", 4, 1, 1);
  bad.block.threads = 2048;
  const auto st = gpu.submit(s, sequence_of({make_kernel("fine", 1, 1, 1), bad}), 0, nullptr);
  EXPECT_THAT(message(st), AllOf(HasSubstr("stream 0"), HasSubstr("'huge_block'"),
                                 HasSubstr("2048 threads per block")));
  EXPECT_EQ(st.error().domain(), core::Domain::kDevice);
  engine.run_until(core::kNever);
  EXPECT_EQ(gpu.stats().kernels_completed, 0);
}

TEST_F(DeviceErrors, UnknownStreamAndNullSequenceAreRejected) {
  EXPECT_THAT(message(gpu.submit(3, sequence_of({make_kernel("k", 1, 1, 1)}), 0, nullptr)),
              HasSubstr("stream 3 does not exist"));
  const auto s = *gpu.create_stream({});
  EXPECT_THAT(message(gpu.submit(s, nullptr, 0, nullptr)), HasSubstr("null pointer"));
  EXPECT_THAT(message(gpu.configure_stream(9, {})), HasSubstr("stream 9 does not exist"));
}

TEST_F(DeviceErrors, StreamConfigsAreChecked) {
  auto too_far = gpu.create_stream(on_sms(10, 20));
  ASSERT_FALSE(too_far);
  EXPECT_THAT(too_far.error().message(), HasSubstr("SM 16, but test-gpu has 16 SMs (0 to 15)"));
  auto bad_domain = gpu.create_stream(
      {.context = 0, .sms = {}, .max_sms = 0, .bandwidth_domain = 4, .priority = 0});
  ASSERT_FALSE(bad_domain);
  EXPECT_THAT(bad_domain.error().message(), HasSubstr("bandwidth domain 4 does not exist"));
  auto bad_cap = gpu.create_stream(
      {.context = 0, .sms = {}, .max_sms = -1, .bandwidth_domain = 0, .priority = 0});
  ASSERT_FALSE(bad_cap);
  EXPECT_THAT(bad_cap.error().message(), HasSubstr("SM cap is -1"));
}

TEST_F(DeviceErrors, ContextsMustBeKnownAndInTheRightState) {
  EXPECT_THAT(message(gpu.suspend_context(4)), HasSubstr("no stream belongs to it"));
  ASSERT_TRUE(gpu.create_stream(on_sms(0, 16, 4)));
  EXPECT_THAT(message(gpu.resume_context(4)), HasSubstr("is not suspended"));
  ASSERT_TRUE(gpu.suspend_context(4));
  EXPECT_THAT(message(gpu.suspend_context(4)), HasSubstr("already suspended"));
  EXPECT_TRUE(gpu.resume_context(4));
}

TEST_F(DeviceErrors, BandwidthDomainsCannotOversubscribeTheDevice) {
  EXPECT_THAT(message(gpu.create_bandwidth_domain(0)), HasSubstr("fraction in (0, 1]"));
  ASSERT_TRUE(gpu.create_bandwidth_domain(0.7));
  EXPECT_THAT(message(gpu.create_bandwidth_domain(0.5)),
              HasSubstr("only 0.30000000000000004 is left"));
  // 0.1 + 0.2 + 0.7 fits despite rounding.
  ASSERT_TRUE(gpu.create_bandwidth_domain(0.1));
  ASSERT_TRUE(gpu.create_bandwidth_domain(0.2));
}

TEST_F(DeviceErrors, CarvingCannotStarveAStreamOfTheWholeDeviceDomain) {
  ASSERT_TRUE(gpu.create_stream({}));
  EXPECT_THAT(message(gpu.create_bandwidth_domain(1.0)), HasSubstr("stream 0 still uses it"));
}

TEST_F(DeviceErrors, InvalidOptionsAreReportedByCreateAndByEveryCall) {
  auto options = test::exact_options();
  options.achievable_bandwidth_fraction = 1.5;
  auto good = SimGpu::create(engine, test::TestGpu().build(), test::exact_options());
  ASSERT_TRUE(good);
  EXPECT_TRUE((*good)->create_stream({}));
  auto made = SimGpu::create(engine, test::TestGpu().build(), options);
  ASSERT_FALSE(made);
  EXPECT_THAT(made.error().message(), HasSubstr("achievable_bandwidth_fraction is 1.5"));
  SimGpu broken(engine, test::TestGpu().build(), options);
  EXPECT_FALSE(broken.create_stream({}));
  EXPECT_THAT(message(broken.set_clock_mhz(800)), HasSubstr("achievable_bandwidth_fraction"));

  auto spec = test::TestGpu().build();
  spec.sms = 300;
  auto too_big = SimGpu::create(engine, spec, test::exact_options());
  ASSERT_FALSE(too_big);
  EXPECT_THAT(too_big.error().message(), HasSubstr("300 SMs"));
}

}  // namespace
}  // namespace tessera::sim
