#include "tessera/tenant/inference_server.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/fakes/fake_device.hpp"
#include "support/fakes/manual_executor.hpp"
#include "tessera/gpu/modes/exclusive/exclusive.hpp"

namespace tessera::tenant {
namespace {

using ::testing::HasSubstr;

// A small decoder so the numbers stay readable; the fake times kernels by FLOPs alone.
workload::ModelConfig tiny_model() {
  return workload::ModelConfig{.name = "tiny",
                               .layers = 2,
                               .hidden = 256,
                               .heads = 4,
                               .kv_heads = 2,
                               .head_dim = 64,
                               .intermediate = 512,
                               .vocab = 1000,
                               .bytes_per_param = 2,
                               .kv_bytes_per_elem = 2};
}

workload::Request req(std::uint64_t id, core::Nanos arrival, int in, int out) {
  return workload::Request{.id = id, .arrival = arrival, .input_tokens = in, .output_tokens = out};
}

struct Server {
  test::ManualExecutor exec;
  test::FakeDevice dev{exec, test::fake_spec(), test::all_capabilities(), /*flops_per_ns=*/1e4};
  gpu::ExclusiveMode mode;
  metrics::Timeline timeline;
  std::unique_ptr<InferenceServer> server;

  // Without engine costs unless a test gives them: the GPU's time alone.
  Server(std::vector<workload::Request> requests, int max_num_seqs = 256,
         int max_batched_tokens = 8192, gpu::TenantId id = 0,
         workload::EngineCosts engine = workload::kNoEngineCosts,
         workload::KvCacheConfig kv_cache = {}) {
    const std::vector<gpu::TenantInfo> infos{{.id = 0, .name = "chat"}};
    EXPECT_TRUE(mode.attach(dev, infos));
    const int process = timeline.add_process("test");
    const int track = timeline.add_track(process, "chat");
    InferenceConfig cfg{.name = "chat",
                        .model = tiny_model(),
                        .max_num_seqs = max_num_seqs,
                        .max_batched_tokens = max_batched_tokens,
                        .kv_cache = kv_cache,
                        .engine = engine,
                        .slo = {}};
    server = std::make_unique<InferenceServer>(id, cfg, std::move(requests), mode, exec, &timeline,
                                               track);
  }

  core::Nanos prefill(std::vector<int> lengths) const {
    return dev.sequence_duration(workload::prefill_step(tiny_model(), lengths));
  }
  core::Nanos decode(std::vector<int> contexts) const {
    return dev.sequence_duration(workload::decode_step(tiny_model(), contexts));
  }
  const metrics::RequestRecord& rec(std::size_t i) const { return server->records()[i]; }

  // Names of the tenant-track spans, in time order.
  std::vector<std::string> span_names() const {
    std::vector<std::string> out;
    const auto trace = timeline.to_json();
    for (const auto& e : trace["traceEvents"]) {
      if (e.value("cat", "") == "span") out.push_back(e["name"]);
    }
    return out;
  }
};

TEST(InferenceServer, FirstTokenAfterPrefillAndTpotFromDecodeSteps) {
  Server s({req(7, 1000, 10, 4)});
  s.server->start();
  s.exec.run_all();
  ASSERT_FALSE(s.server->failure());
  const core::Nanos p = s.prefill({10});
  ASSERT_GT(p, 0);
  const auto& r = s.rec(0);
  EXPECT_EQ(r.id, 7u);
  EXPECT_EQ(r.first_token, 1000 + p);
  // Three decode steps, each over the context so far: 10 prompt + 1, 2, 3 generated tokens.
  const core::Nanos decodes = s.decode({11}) + s.decode({12}) + s.decode({13});
  EXPECT_EQ(r.finished, 1000 + p + decodes);
  EXPECT_EQ(r.tpot(), decodes / 3);
  EXPECT_EQ(s.span_names(), (std::vector<std::string>{"prefill", "decode", "decode", "decode"}));
}

TEST(InferenceServer, EngineTimeComesBeforeAndAfterEachGpuStep) {
  // Worked by hand: before each step the engine spends `step` (+ `prefill` for a prefill), after
  // it `per_sequence` per sequence; a token is out when that ends, and the next step's engine
  // time starts then. One GPU: no per-worker cost.
  const workload::EngineCosts engine{
      .step = 500, .prefill = 300, .per_worker = 100000, .per_sequence = 70};
  Server s({req(7, 1000, 10, 3), req(8, 1000, 6, 2)}, 256, 8192, 0, engine);
  s.server->start();
  s.exec.run_all();
  ASSERT_FALSE(s.server->failure());
  const core::Nanos first = 1000 + 500 + 300 + s.prefill({10, 6}) + 2 * 70;
  EXPECT_EQ(s.rec(0).first_token, first);
  EXPECT_EQ(s.rec(1).first_token, first);
  const core::Nanos second = first + 500 + s.decode({11, 7}) + 2 * 70;
  EXPECT_EQ(s.rec(1).finished, second);
  const core::Nanos third = second + 500 + s.decode({12}) + 70;
  EXPECT_EQ(s.rec(0).finished, third);
}

TEST(InferenceServer, TensorParallelWorkersAddEngineTimePerWorker) {
  const workload::EngineCosts engine{
      .step = 0, .prefill = 0, .per_worker = 1000, .per_sequence = 0};
  EXPECT_EQ(engine.before_step(workload::Phase::kDecode, 1), 0);
  EXPECT_EQ(engine.before_step(workload::Phase::kDecode, 8), 7000);
  EXPECT_EQ(engine.after_step(5), 0);
}

TEST(InferenceServer, RejectsANegativeEngineCost) {
  Server s({req(0, 0, 4, 2)}, 256, 8192, 0,
           workload::EngineCosts{.step = -1, .prefill = 0, .per_worker = 0, .per_sequence = 0});
  s.server->start();
  ASSERT_TRUE(s.server->failure());
  EXPECT_THAT(s.server->failure()->message(), HasSubstr("engine cost step"));
}

TEST(InferenceServer, SingleTokenRequestsFinishAtPrefill) {
  Server s({req(0, 0, 32, 1), req(1, 0, 16, 1)});
  s.server->start();
  s.exec.run_all();
  const core::Nanos p = s.prefill({32, 16});
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(s.rec(i).first_token, p);
    EXPECT_EQ(s.rec(i).finished, p);
    EXPECT_EQ(s.rec(i).tpot(), 0);
  }
  EXPECT_EQ(s.dev.calls_of(test::CallKind::kSubmit).size(), 1u);  // no decode step at all
}

TEST(InferenceServer, AdmitsByMaxBatchedTokens) {
  // Budget 350: {100, 200} fit (300; adding 300 would exceed), then {300, 50} fit exactly.
  Server s({req(0, 0, 100, 1), req(1, 0, 200, 1), req(2, 0, 300, 1), req(3, 0, 50, 1)},
           /*max_num_seqs=*/256, /*max_batched_tokens=*/350);
  s.server->start();
  s.exec.run_all();
  const core::Nanos p1 = s.prefill({100, 200});
  const core::Nanos p2 = s.prefill({300, 50});
  EXPECT_EQ(s.rec(0).first_token, p1);
  EXPECT_EQ(s.rec(1).first_token, p1);
  EXPECT_EQ(s.rec(2).first_token, p1 + p2);
  EXPECT_EQ(s.rec(3).first_token, p1 + p2);
}

TEST(InferenceServer, AlwaysAdmitsOnePromptLongerThanTheBudget) {
  Server s({req(0, 0, 500, 1), req(1, 0, 10, 1)}, 256, /*max_batched_tokens=*/100);
  s.server->start();
  s.exec.run_all();
  const core::Nanos p1 = s.prefill({500});
  EXPECT_EQ(s.rec(0).finished, p1);
  EXPECT_EQ(s.rec(1).finished, p1 + s.prefill({10}));
}

TEST(InferenceServer, AdmitsByMaxNumSeqsAndDecodesWhileFull) {
  Server s({req(0, 0, 8, 3), req(1, 0, 8, 3), req(2, 0, 8, 3)}, /*max_num_seqs=*/2);
  s.server->start();
  s.exec.run_all();
  const core::Nanos p = s.prefill({8, 8});
  EXPECT_EQ(s.rec(0).first_token, p);
  EXPECT_EQ(s.rec(1).first_token, p);
  // Two running sequences fill the server: request 2 waits through both decode steps.
  const core::Nanos both_done = p + s.decode({9, 9}) + s.decode({10, 10});
  EXPECT_EQ(s.rec(0).finished, both_done);
  EXPECT_EQ(s.rec(1).finished, both_done);
  const core::Nanos third_first = both_done + s.prefill({8});
  EXPECT_EQ(s.rec(2).first_token, third_first);
  EXPECT_EQ(s.rec(2).finished, third_first + s.decode({9}) + s.decode({10}));
}

TEST(InferenceServer, NewArrivalsArePrefilledBeforeTheNextDecodeStep) {
  Server s({req(0, 0, 8, 3), req(1, 1, 8, 2)});
  s.server->start();
  s.exec.run_all();
  const core::Nanos p0 = s.prefill({8});
  // Request 1 arrived during request 0's prefill; the next iteration prefills it, then both
  // decode together.
  const core::Nanos p1 = p0 + s.prefill({8});
  EXPECT_EQ(s.rec(1).first_token, p1);
  const core::Nanos d1 = p1 + s.decode({9, 9});
  EXPECT_EQ(s.rec(1).finished, d1);
  EXPECT_EQ(s.rec(0).finished, d1 + s.decode({10}));
}

// Forwards to exclusive, keeping what each submitted step says of itself.
class StepRecorder final : public gpu::SharingMode {
 public:
  struct Step {
    workload::Phase phase;
    bool mid_generation;
    bool graph;
  };
  std::string_view name() const override { return "recorder"; }
  core::Status attach(device::GpuDevice& device, std::span<const gpu::TenantInfo> t) override {
    return inner_.attach(device, t);
  }
  core::Status submit(gpu::TenantId tenant, workload::KernelSequencePtr sequence, std::uint64_t tag,
                      device::DoneCallback done) override {
    steps.push_back({sequence->phase, sequence->mid_generation, sequence->graph});
    return inner_.submit(tenant, std::move(sequence), tag, std::move(done));
  }
  std::vector<gpu::PartitionInfo> partitions() const override { return inner_.partitions(); }

  std::vector<Step> steps;

 private:
  gpu::ExclusiveMode inner_;
};

TEST(InferenceServer, StepsSayWhetherRequestsAreMidGenerationAndDecodeStepsAreGraphs) {
  // As in the test above: prefill 0, prefill 1 (request 0 is generating and waits), both decode,
  // then request 0 alone.
  test::ManualExecutor exec;
  test::FakeDevice dev{exec, test::fake_spec(), test::all_capabilities(), 1e4};
  StepRecorder mode;
  const std::vector<gpu::TenantInfo> infos{{.id = 0, .name = "chat"}};
  ASSERT_TRUE(mode.attach(dev, infos));
  InferenceConfig cfg;
  cfg.name = "chat";
  cfg.model = tiny_model();
  InferenceServer server(0, cfg, {req(0, 0, 8, 3), req(1, 1, 8, 2)}, mode, exec);
  server.start();
  exec.run_all();
  using workload::Phase;
  ASSERT_EQ(mode.steps.size(), 4u);
  EXPECT_EQ(mode.steps[0].phase, Phase::kPrefill);
  EXPECT_FALSE(mode.steps[0].mid_generation);
  EXPECT_FALSE(mode.steps[0].graph);
  EXPECT_EQ(mode.steps[1].phase, Phase::kPrefill);
  EXPECT_TRUE(mode.steps[1].mid_generation);
  EXPECT_FALSE(mode.steps[1].graph);
  for (std::size_t i : {2u, 3u}) {
    EXPECT_EQ(mode.steps[i].phase, Phase::kDecode) << i;
    EXPECT_TRUE(mode.steps[i].mid_generation) << i;
    EXPECT_TRUE(mode.steps[i].graph) << i;
  }
}

TEST(InferenceServer, RecordsFollowTheRequestOrderWhateverTheArrivalOrder) {
  Server s({req(5, 2'000'000, 12, 2), req(9, 0, 6, 1)});
  s.server->start();
  s.exec.run_all();
  ASSERT_EQ(s.server->records().size(), 2u);
  EXPECT_EQ(s.rec(0).id, 5u);
  EXPECT_EQ(s.rec(0).arrival, 2'000'000);
  EXPECT_EQ(s.rec(0).input_tokens, 12);
  EXPECT_EQ(s.rec(0).output_tokens, 2);
  EXPECT_EQ(s.rec(1).id, 9u);
  EXPECT_EQ(s.rec(1).finished, s.prefill({6}));  // served first: it arrived first
  EXPECT_EQ(s.rec(0).first_token, 2'000'000 + s.prefill({12}));
  for (const auto& r : s.server->records()) EXPECT_TRUE(r.done());
}

TEST(InferenceServer, UnfinishedRequestsStayOpenWhenTheRunStops) {
  Server s({req(0, 0, 8, 1000)});
  s.server->start();
  const core::Nanos p = s.prefill({8});
  s.exec.run_until(p + 1);
  EXPECT_EQ(s.rec(0).first_token, p);
  EXPECT_FALSE(s.rec(0).done());
}

TEST(InferenceServer, RecordsARefusedSubmission) {
  Server s({req(0, 0, 8, 2)}, 256, 8192, /*id=*/42);  // the mode knows tenant 0 only
  s.server->start();
  s.exec.run_all();
  ASSERT_TRUE(s.server->failure());
  EXPECT_THAT(s.server->failure()->message(), HasSubstr("inference server 'chat'"));
  EXPECT_THAT(s.server->failure()->message(), HasSubstr("no tenant with id 42"));
  EXPECT_FALSE(s.rec(0).done());
}

TEST(InferenceServer, RejectsRequestsWithoutOutputTokens) {
  Server s({req(3, 0, 8, 0)});
  s.server->start();
  ASSERT_TRUE(s.server->failure());
  EXPECT_THAT(s.server->failure()->message(), HasSubstr("request 3"));
  EXPECT_EQ(s.exec.pending(), 0u);
}

TEST(InferenceServer, RejectsAnInvalidModel) {
  Server s({req(0, 0, 8, 2)});
  auto broken = s.server->config();
  broken.model.kv_heads = 3;  // 4 query heads cannot share 3 KV heads
  InferenceServer server(0, broken, {req(0, 0, 8, 2)}, s.mode, s.exec);
  server.start();
  ASSERT_TRUE(server.failure());
  EXPECT_THAT(server.failure()->message(), HasSubstr("inference server 'chat'"));
  EXPECT_EQ(s.exec.pending(), 0u);
}

// Blocks of 4 tokens and no watermark keep the block arithmetic in the comments readable.
workload::KvCacheConfig blocks_of_4(std::int64_t blocks) {
  return {.blocks = blocks, .block_size = 4, .watermark = 0};
}

TEST(InferenceServerKvCache, AFullCachePreemptsTheLatestAdmittedWhichIsRecomputed) {
  // 4 blocks (16 tokens). A and B (8 prompt tokens, 3 output) take 2 blocks each. The first
  // decode needs a 3rd block for A's 9th token: none is free, so B (admitted after A) is
  // preempted. A decodes alone to its 3rd token and frees its blocks; then B's 8 prompt tokens
  // and its 1 generated token are prefilled again (9 tokens, 3 blocks), which gives its 2nd token,
  // and one decode its 3rd. B keeps the first token it had before it was preempted.
  Server s({req(0, 0, 8, 3), req(1, 0, 8, 3)}, 256, 8192, 0, workload::kNoEngineCosts,
           blocks_of_4(4));
  s.server->start();
  s.exec.run_all();
  ASSERT_FALSE(s.server->failure());
  const core::Nanos first = s.prefill({8, 8});
  EXPECT_EQ(s.rec(0).first_token, first);
  EXPECT_EQ(s.rec(1).first_token, first);
  const core::Nanos a_done = first + s.decode({9}) + s.decode({10});
  EXPECT_EQ(s.rec(0).finished, a_done);
  EXPECT_EQ(s.rec(1).finished, a_done + s.prefill({9}) + s.decode({10}));
  EXPECT_EQ(s.span_names(),
            (std::vector<std::string>{"prefill", "decode", "decode", "prefill", "decode"}));
  const auto kv = s.server->kv_stats();
  EXPECT_EQ(kv.preemptions, 1u);
  EXPECT_EQ(kv.rejected, 0u);
  EXPECT_EQ(kv.peak_used_blocks, 4);
}

TEST(InferenceServerKvCache, AnAdmissionWaitsForBlocksWhileTheRunningOnesDecode) {
  // 5 blocks: A (12 prompt tokens: 3 blocks) is prefilled; B (12 tokens) arrives meanwhile and
  // needs 3 blocks with 2 free, so it waits while A decodes its 13th and 14th tokens (the 4th
  // block) and finishes; then B is prefilled. Nothing is preempted.
  Server s({req(0, 0, 12, 3), req(1, 1, 12, 3)}, 256, 8192, 0, workload::kNoEngineCosts,
           blocks_of_4(5));
  s.server->start();
  s.exec.run_all();
  ASSERT_FALSE(s.server->failure());
  const core::Nanos a_done = s.prefill({12}) + s.decode({13}) + s.decode({14});
  EXPECT_EQ(s.rec(0).finished, a_done);
  EXPECT_EQ(s.rec(1).first_token, a_done + s.prefill({12}));
  EXPECT_TRUE(s.rec(1).done());
  EXPECT_EQ(s.server->kv_stats().preemptions, 0u);
  EXPECT_EQ(s.server->kv_stats().peak_used_blocks, 4);
}

TEST(InferenceServerKvCache, APromptLargerThanTheCacheIsDroppedAndTheRestServed) {
  // 10 blocks with a 10% watermark (1 block): a 40-token prompt needs all 10 and can never be
  // admitted; the 36-token one (9 blocks) can.
  Server s({req(0, 0, 40, 2), req(1, 0, 36, 2)}, 256, 8192, 0, workload::kNoEngineCosts,
           {.blocks = 10, .block_size = 4, .watermark = 0.1});
  s.server->start();
  s.exec.run_all();
  ASSERT_FALSE(s.server->failure());
  EXPECT_EQ(s.rec(0).first_token, -1);
  EXPECT_FALSE(s.rec(0).done());
  EXPECT_TRUE(s.rec(1).done());
  EXPECT_EQ(s.server->kv_stats().rejected, 1u);
}

TEST(InferenceServerKvCache, ASequenceThatOutgrowsTheWholeCacheIsDropped) {
  // 2 blocks (8 tokens): the 6-token prompt decodes to 8 tokens, then needs a 3rd block. It
  // preempts itself, and its 9 tokens can never be readmitted. The server does not hang.
  Server s({req(0, 0, 6, 10)}, 256, 8192, 0, workload::kNoEngineCosts, blocks_of_4(2));
  s.server->start();
  s.exec.run_all();
  ASSERT_FALSE(s.server->failure());
  EXPECT_EQ(s.rec(0).first_token, s.prefill({6}));
  EXPECT_FALSE(s.rec(0).done());
  const auto kv = s.server->kv_stats();
  EXPECT_EQ(kv.preemptions, 1u);
  EXPECT_EQ(kv.rejected, 1u);
  EXPECT_EQ(s.span_names(), (std::vector<std::string>{"prefill", "decode", "decode"}));
}

TEST(InferenceServerKvCache, RejectsABadCacheConfig) {
  Server s({req(0, 0, 8, 2)}, 256, 8192, 0, workload::kNoEngineCosts, {.blocks = -2});
  s.server->start();
  ASSERT_TRUE(s.server->failure());
  EXPECT_THAT(s.server->failure()->message(), HasSubstr("kv_cache blocks (-2)"));
  EXPECT_THAT(s.server->failure()->message(), HasSubstr("inference server 'chat'"));
}

}  // namespace
}  // namespace tessera::tenant
