// Spans (submit_span) and early ends (end_after_head) on the simulated GPU: a span runs exactly
// its kernels, in place in the submitted sequence, timed as a sequence of just those kernels; a
// submission ended early stops after the kernel at its head and reports what ran.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/sim/gpu/sim_test_util.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/backends/sim/gpu/sim_gpu_options.hpp"
#include "tessera/device/argument_checks.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/kernels/gemm_shapes.hpp"

namespace tessera::sim {
namespace {

using test::make_kernel;
using test::sequence_of;
using workload::SequenceCursor;

const hw::GpuSpec& h100() {
  static const hw::GpuSpec spec = *hw::find_gpu("h100");
  return spec;
}

SimGpuOptions options(bool batch) {
  SimGpuOptions o = default_options(h100());
  o.batch_isolated_kernels = batch;
  return o;
}

// A decode-step-like sequence on an H100: an embedding, 8 layers of 6 kernels (three of them
// GEMMs timed as the library tiles them), a sampler. 50 kernels.
workload::KernelSequencePtr decode_like() {
  auto seq = std::make_shared<workload::KernelSequence>();
  auto embed = make_kernel("embed", 64, 1e4, 3e5, 8);
  embed.kind = workload::KernelClass::kEmbedding;
  auto norm = make_kernel("norm", 132, 2e4, 1.1e5, 8);
  norm.kind = workload::KernelClass::kNorm;
  auto attn = make_kernel("attn", 128, 1.7e6, 5.3e5, 4);
  attn.kind = workload::KernelClass::kAttention;
  seq->groups.push_back({.kernels = {embed}, .repeat = 1});
  seq->groups.push_back(
      {.kernels = {norm, workload::make_gemm(workload::dense_gemm("qkv", 256, 6144, 4096, 2)), attn,
                   workload::make_gemm(workload::dense_gemm("o_proj", 256, 4096, 4096, 2)),
                   make_kernel("mlp_act", 264, 3.3e5, 8.9e5, 2),
                   workload::make_gemm(workload::dense_gemm("mlp_down", 256, 4096, 14336, 2))},
       .repeat = 8});
  seq->groups.push_back({.kernels = {make_kernel("sample", 1, 3e4, 1e3, 1)}, .repeat = 1});
  seq->phase = workload::Phase::kDecode;
  return seq;
}

// A span of 40 kernels starting mid-layer: mlp_act of the first layer on.
constexpr device::KernelSpan kLongSpan{.from = {.group = 1, .rep = 0, .index = 4}, .count = 40};

struct Done {
  int calls = 0;
  device::SubmissionDone last{};
};

device::DoneCallback record(Done& d) {
  return [&d](const device::SubmissionDone& done) {
    ++d.calls;
    d.last = done;
  };
}

// One H100 with an event log.
struct Device {
  explicit Device(bool batch) : gpu(engine, h100(), options(batch)) { gpu.add_observer(&log); }
  Engine engine;
  SimGpu gpu;
  test::EventLog log;
};

std::vector<test::Recorded> of_tag(const test::EventLog& log, std::uint64_t tag) {
  std::vector<test::Recorded> out;
  for (const auto& e : log.events) {
    if (e.submission_tag == tag) out.push_back(e);
  }
  return out;
}

std::string lines(const std::vector<test::Recorded>& events, std::size_t n = SIZE_MAX) {
  std::string out;
  for (std::size_t i = 0; i < events.size() && i < n; ++i) out += test::EventLog::line(events[i]);
  return out;
}

// The kernels `span` names, walked in the sequence.
std::vector<const workload::Kernel*> span_kernels(const workload::KernelSequence& seq,
                                                  const device::KernelSpan& span) {
  std::vector<const workload::Kernel*> out;
  SequenceCursor c = span.from;
  for (std::int64_t i = 0; i < span.count; ++i) {
    out.push_back(&c.kernel(seq));
    if (!c.advance(seq)) break;
  }
  return out;
}

TEST(SimGpuSpan, TheSimulatorCanEndSubmissionsEarly) {
  Engine engine;
  SimGpu gpu(engine, h100(), options(true));
  EXPECT_TRUE(gpu.capabilities().early_end);
}

TEST(SimGpuSpan, ASpanRunsExactlyItsKernelsInPlace) {
  for (const bool batch : {false, true}) {
    SCOPED_TRACE(batch);
    Device dev(batch);
    const auto seq = decode_like();
    const auto s = *dev.gpu.create_stream({});
    Done done;
    ASSERT_TRUE(dev.gpu.submit_span(s, seq, kLongSpan, 7, record(done)));
    dev.engine.run_until(core::kNever);
    ASSERT_EQ(done.calls, 1);
    EXPECT_EQ(done.last.kernels, kLongSpan.count);
    EXPECT_EQ(done.last.tag, 7U);
    const auto want = span_kernels(*seq, kLongSpan);
    ASSERT_EQ(dev.log.events.size(), static_cast<std::size_t>(kLongSpan.count));
    ASSERT_EQ(want.size(), dev.log.events.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      // The events point into the sequence submitted, not into a copy.
      EXPECT_EQ(dev.log.events[i].kernel, want[i]) << i;
      EXPECT_EQ(dev.log.events[i].name, want[i]->name) << i;
    }
    EXPECT_EQ(dev.log.events.front().name, "mlp_act");
    // mlp_act and mlp_down of layer 0, layers 1 to 6, then norm and qkv of layer 7.
    EXPECT_EQ(dev.log.events.back().name, "qkv");
    EXPECT_EQ(done.last.started, dev.log.events.front().start);
    EXPECT_EQ(done.last.finished, dev.log.events.back().end);
    EXPECT_EQ(dev.gpu.stats().kernels_completed, kLongSpan.count);
  }
}

TEST(SimGpuSpan, AWholeSubmissionReportsEveryKernel) {
  for (const bool batch : {false, true}) {
    SCOPED_TRACE(batch);
    Device dev(batch);
    const auto seq = decode_like();
    const auto s = *dev.gpu.create_stream({});
    Done done;
    ASSERT_TRUE(dev.gpu.submit(s, seq, 1, record(done)));
    dev.engine.run_until(core::kNever);
    ASSERT_EQ(done.calls, 1);
    EXPECT_EQ(done.last.kernels, seq->kernel_count());
    EXPECT_EQ(static_cast<std::int64_t>(dev.log.events.size()), seq->kernel_count());
  }
}

// `span` of decode_like() on a fresh device, as a span or as a copy of its kernels.
struct SpanRun {
  std::string events;
  Done done;
};
SpanRun run_span(bool batch, const device::KernelSpan& span, bool as_copy) {
  Device dev(batch);
  const auto seq = decode_like();
  const auto s = *dev.gpu.create_stream({});
  SpanRun r;
  const auto st =
      as_copy ? dev.gpu.submit(s, workload::span_of(*seq, span.from, span.count), 3, record(r.done))
              : dev.gpu.submit_span(s, seq, span, 3, record(r.done));
  EXPECT_TRUE(st);
  dev.engine.run_until(core::kNever);
  r.events = dev.log.dump();
  return r;
}

TEST(SimGpuSpan, ASpanIsTimedAsASequenceOfJustItsKernels) {
  const device::KernelSpan spans[] = {
      kLongSpan,
      {.from = {.group = 0, .rep = 0, .index = 0}, .count = 50},  // all of it
      {.from = {.group = 1, .rep = 3, .index = 1}, .count = 1},   // one GEMM
      {.from = {.group = 1, .rep = 6, .index = 5}, .count = 8},   // to the very end
      {.from = {.group = 1, .rep = 2, .index = 0}, .count = 18},  // whole layers
  };
  for (const bool batch : {false, true}) {
    for (const auto& span : spans) {
      SCOPED_TRACE(testing::Message() << "batch " << batch << ", rep " << span.from.rep << " index "
                                      << span.from.index << ", " << span.count);
      const SpanRun in_place = run_span(batch, span, false);
      const SpanRun copied = run_span(batch, span, true);
      EXPECT_FALSE(in_place.events.empty());
      EXPECT_EQ(in_place.events, copied.events);
      ASSERT_EQ(in_place.done.calls, 1);
      ASSERT_EQ(copied.done.calls, 1);
      EXPECT_EQ(in_place.done.last.kernels, span.count);
      EXPECT_EQ(copied.done.last.kernels, span.count);
      EXPECT_EQ(in_place.done.last.started, copied.done.last.started);
      EXPECT_EQ(in_place.done.last.finished, copied.done.last.finished);
    }
  }
  // The per-kernel path and the batches agree on spans too.
  EXPECT_EQ(run_span(false, kLongSpan, false).events, run_span(true, kLongSpan, false).events);
}

TEST(SimGpuSpan, ConsecutiveSpansRunLikeTheWholeSequence) {
  for (const bool batch : {false, true}) {
    SCOPED_TRACE(batch);
    std::vector<std::string> runs;
    for (const bool split : {false, true}) {
      Device dev(batch);
      const auto seq = decode_like();
      const auto s = *dev.gpu.create_stream({});
      Done first;
      Done second;
      if (split) {
        // 20 kernels, then the other 30: the same sequence handed over in two parts.
        ASSERT_TRUE(dev.gpu.submit_span(s, seq, {.from = {}, .count = 20}, 1, record(first)));
        ASSERT_TRUE(dev.gpu.submit_span(
            s, seq, {.from = {.group = 1, .rep = 3, .index = 1}, .count = 30}, 2, record(second)));
      } else {
        ASSERT_TRUE(dev.gpu.submit(s, seq, 1, record(first)));
      }
      dev.engine.run_until(core::kNever);
      EXPECT_EQ(first.last.kernels, split ? 20 : 50);
      if (split) {
        EXPECT_EQ(second.last.kernels, 30);
      }
      std::string out;
      for (auto e : dev.log.events) {
        e.submission_tag = 0;
        out += test::EventLog::line(e);
      }
      runs.push_back(out);
    }
    EXPECT_EQ(runs[0], runs[1]);
  }
}

// A 40-kernel span on stream 0 (tag 1) with a 3-kernel submission queued behind it (tag 2);
// with `busy`, stream 1 shares the whole GPU with it all along (tag 9), so it runs kernel by
// kernel. At `cut` (< 0: never) stream 0's current submission is ended after its head.
struct CutRun {
  test::EventLog log;
  Done span;
  Done after;
  Done busy;
  std::uint64_t engine_events = 0;
};
std::unique_ptr<CutRun> run_cut(bool batch, bool busy, core::Nanos cut) {
  auto r = std::make_unique<CutRun>();
  Engine engine;
  SimGpu gpu(engine, h100(), options(batch));
  gpu.add_observer(&r->log);
  const auto seq = decode_like();
  const auto s0 = *gpu.create_stream({});
  const auto s1 = *gpu.create_stream({});
  EXPECT_EQ(s0, 0U);
  if (busy) {
    EXPECT_TRUE(gpu.submit(s1, sequence_of({make_kernel("busy", 264, 2e6, 4e5, 2)}, 400), 9,
                           record(r->busy)));
  }
  EXPECT_TRUE(gpu.submit_span(s0, seq, kLongSpan, 1, record(r->span)));
  EXPECT_TRUE(gpu.submit(s0, sequence_of({make_kernel("after", 132, 1e6, 1e5, 2)}, 3), 2,
                         record(r->after)));
  if (cut >= 0) {
    engine.schedule_at(cut, [&gpu, s0] { EXPECT_TRUE(gpu.end_after_head(s0)); });
  }
  engine.run_until(core::kNever);
  r->engine_events = engine.events_executed();
  return r;
}

void expect_cut_after_head(bool batch, bool busy) {
  const auto whole = run_cut(batch, busy, -1);
  const auto ref = of_tag(whole->log, 1);
  ASSERT_EQ(ref.size(), static_cast<std::size_t>(kLongSpan.count));
  ASSERT_EQ(whole->span.last.kernels, kLongSpan.count);
  if (batch && !busy) {
    // The isolated stream's kernels were timed in batches: far fewer engine events than kernels.
    EXPECT_LT(whole->engine_events, 20U);
  }
  if (busy) {
    // The span's kernels ran beside the other stream's, sharing the GPU.
    const auto other = of_tag(whole->log, 9);
    int overlapping = 0;
    for (const auto& e : ref) {
      for (const auto& o : other) overlapping += o.start < e.end && e.start < o.end ? 1 : 0;
    }
    EXPECT_GE(overlapping, kLongSpan.count);
  }
  for (const std::size_t k : {std::size_t{0}, std::size_t{5}, std::size_t{13}, std::size_t{30},
                              std::size_t{kLongSpan.count - 1}}) {
    SCOPED_TRACE(k);
    ASSERT_GE(ref[k].end - ref[k].start, 2);
    const core::Nanos cut = ref[k].start + (ref[k].end - ref[k].start) / 2;
    const auto r = run_cut(batch, busy, cut);
    const auto ran = of_tag(r->log, 1);
    // It ends after the kernel running at the cut, every kernel up to it as in the uncut run.
    ASSERT_EQ(ran.size(), k + 1);
    EXPECT_EQ(lines(ran), lines(ref, k + 1));
    ASSERT_EQ(r->span.calls, 1);
    EXPECT_EQ(r->span.last.kernels, static_cast<std::int64_t>(k + 1));
    EXPECT_EQ(r->span.last.started, whole->span.last.started);
    EXPECT_EQ(r->span.last.finished, ref[k].end);
    // The submission queued behind it runs whole, after it.
    const auto after = of_tag(r->log, 2);
    ASSERT_EQ(r->after.calls, 1);
    EXPECT_EQ(r->after.last.kernels, 3);
    ASSERT_EQ(after.size(), 3U);
    EXPECT_GE(after.front().start, ref[k].end);
    for (const auto& e : after) EXPECT_EQ(e.name, "after");
    if (busy) {
      // The other stream is not ended early, and its kernels up to the cut are as they were.
      ASSERT_EQ(r->busy.calls, 1);
      EXPECT_EQ(r->busy.last.kernels, 400);
      std::string before_cut;
      std::string before_cut_whole;
      for (const auto& e : of_tag(r->log, 9)) {
        if (e.end <= cut) before_cut += test::EventLog::line(e);
      }
      for (const auto& e : of_tag(whole->log, 9)) {
        if (e.end <= cut) before_cut_whole += test::EventLog::line(e);
      }
      EXPECT_EQ(before_cut, before_cut_whole);
    } else if (k + 1 < ref.size()) {
      // Alone on the GPU, the next submission starts when the cut kernel ends.
      EXPECT_EQ(after.front().start, ref[k].end);
    }
  }
}

TEST(SimGpuSpan, EndingAnIsolatedStreamsBatchedSpanStopsAfterTheKernelAtItsHead) {
  expect_cut_after_head(true, false);
}

TEST(SimGpuSpan, EndingAnIsolatedStreamsSpanOnThePerKernelPathStopsAfterItsHead) {
  expect_cut_after_head(false, false);
}

TEST(SimGpuSpan, EndingASpanThatSharesTheGpuStopsAfterTheKernelAtItsHead) {
  expect_cut_after_head(true, true);
  expect_cut_after_head(false, true);
}

TEST(SimGpuSpan, AWholeSubmissionCanBeEndedEarlyToo) {
  for (const bool batch : {false, true}) {
    SCOPED_TRACE(batch);
    core::Nanos cut = -1;
    std::string uncut;
    for (const bool cutting : {false, true}) {
      Device dev(batch);
      const auto seq = decode_like();
      const auto s = *dev.gpu.create_stream({});
      Done done;
      ASSERT_TRUE(dev.gpu.submit(s, seq, 1, record(done)));
      if (cutting) {
        dev.engine.schedule_at(cut, [&] { EXPECT_TRUE(dev.gpu.end_after_head(s)); });
      }
      dev.engine.run_until(core::kNever);
      if (!cutting) {
        ASSERT_EQ(dev.log.events.size(), 50U);
        const auto& e = dev.log.events[21];
        cut = e.start + (e.end - e.start) / 2;
        uncut = lines(dev.log.events, 22);
        continue;
      }
      EXPECT_EQ(done.last.kernels, 22);
      EXPECT_EQ(dev.log.dump(), uncut);
    }
  }
}

TEST(SimGpuSpan, EndingAnIdleStreamChangesNothing) {
  for (const bool batch : {false, true}) {
    SCOPED_TRACE(batch);
    std::vector<std::string> runs;
    for (const bool poke : {false, true}) {
      Device dev(batch);
      const auto seq = decode_like();
      const auto s = *dev.gpu.create_stream({});
      // Before anything is submitted, and again once the first span has finished.
      if (poke) {
        EXPECT_TRUE(dev.gpu.end_after_head(s));
      }
      Done first;
      ASSERT_TRUE(dev.gpu.submit_span(s, seq, kLongSpan, 1, record(first)));
      dev.engine.run_until(core::kNever);
      if (poke) {
        EXPECT_TRUE(dev.gpu.end_after_head(s));
      }
      Done second;
      ASSERT_TRUE(dev.gpu.submit_span(s, seq, kLongSpan, 2, record(second)));
      dev.engine.run_until(core::kNever);
      EXPECT_EQ(first.last.kernels, kLongSpan.count);
      EXPECT_EQ(second.last.kernels, kLongSpan.count);
      runs.push_back(dev.log.dump());
    }
    EXPECT_EQ(runs[0], runs[1]);
  }
}

TEST(SimGpuSpan, EndingAStreamThatDoesNotExistIsNotFound) {
  Engine engine;
  SimGpu gpu(engine, h100(), options(true));
  const auto none = gpu.end_after_head(0);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), core::Code::kNotFound);
  const auto s = *gpu.create_stream({});
  const auto past = gpu.end_after_head(s + 1);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().code(), core::Code::kNotFound);
  EXPECT_TRUE(gpu.end_after_head(s));
}

TEST(SimGpuSpan, ABadSpanIsRejectedWithCheckSpansMessage) {
  // Layers of two kernels around an empty group: 1 + 3 x 2 kernels.
  auto seq = std::make_shared<workload::KernelSequence>();
  seq->groups.push_back({.kernels = {make_kernel("first", 8, 1e4, 1e4)}, .repeat = 1});
  seq->groups.push_back({.kernels = {}, .repeat = 1});
  seq->groups.push_back(
      {.kernels = {make_kernel("a", 8, 1e4, 1e4), make_kernel("b", 8, 1e4, 1e4)}, .repeat = 3});
  const workload::KernelSequencePtr ptr = seq;
  struct Case {
    const char* what;
    workload::KernelSequencePtr seq;
    device::KernelSpan span;
  };
  const Case cases[] = {
      {"no kernels", ptr, {.from = {}, .count = 0}},
      {"a negative count", ptr, {.from = {}, .count = -1}},
      {"past the end", ptr, {.from = {}, .count = 8}},
      {"past the end from the middle",
       ptr,
       {.from = {.group = 2, .rep = 1, .index = 1}, .count = 4}},
      {"a group past the end", ptr, {.from = {.group = 3, .rep = 0, .index = 0}, .count = 1}},
      {"an empty group", ptr, {.from = {.group = 1, .rep = 0, .index = 0}, .count = 1}},
      {"a repetition past the group's",
       ptr,
       {.from = {.group = 2, .rep = 3, .index = 0}, .count = 1}},
      {"a negative repetition", ptr, {.from = {.group = 2, .rep = -1, .index = 0}, .count = 1}},
      {"a kernel past the group's", ptr, {.from = {.group = 2, .rep = 0, .index = 2}, .count = 1}},
      {"no sequence", nullptr, {.from = {}, .count = 1}},
  };
  Engine engine;
  SimGpu gpu(engine, h100(), options(true));
  test::EventLog log;
  gpu.add_observer(&log);
  const auto s = *gpu.create_stream({});
  int dones = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const auto st =
        gpu.submit_span(s, c.seq, c.span, 1, [&](const device::SubmissionDone&) { ++dones; });
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code(), core::Code::kInvalidArgument);
    const auto want = device::check_span(s, c.seq, c.span);
    ASSERT_FALSE(want);
    EXPECT_EQ(st.error().message(), want.error().message());
  }
  // The last kernel, and all of it, are fine.
  EXPECT_TRUE(gpu.submit_span(s, ptr, {.from = {.group = 2, .rep = 2, .index = 1}, .count = 1}, 2,
                              nullptr));
  EXPECT_TRUE(gpu.submit_span(s, ptr, {.from = {}, .count = 7}, 3, nullptr));
  // A bad stream is named as such.
  const auto bad = gpu.submit_span(s + 1, ptr, {.from = {}, .count = 1}, 1, nullptr);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), core::Code::kNotFound);
  engine.run_until(core::kNever);
  EXPECT_EQ(dones, 0);
  ASSERT_EQ(log.events.size(), 8U);
  EXPECT_EQ(log.events.front().name, "b");
  EXPECT_EQ(log.events.front().submission_tag, 2U);
}

}  // namespace
}  // namespace tessera::sim
