#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/gpu/modes/cogpu/cogpu_options.hpp"
#include "tessera/gpu/modes/lithos/lithos_options.hpp"
#include "tessera/gpu/modes/time_slicing/time_slicing_options.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/scenario/demo_scenario.hpp"
#include "tessera/scenario/scenario.hpp"

namespace tessera::scenario {
namespace {

constexpr const char* kValid = R"(
name: t
gpu: H100-SXM5-80GB
seed: 7
duration: 10s
modes: [mps, static-partitions]
tenants:
  - name: chat
    kind: inference
    model: llama-3-8b
    sm_share: 0.5
    slo: {ttft: 400ms, tpot: 40ms}
    arrivals: {process: gamma, rate: 3, cv: 4, input_tokens: {min: 10, max: 20},
               output_tokens: {min: 2, max: 5}}
  - name: train
    kind: training
    model: resnet-50
    batch: 32
)";

// Replaces the first occurrence of `from` in the valid scenario.
std::string mutate(const std::string& from, const std::string& to) {
  std::string s = kValid;
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

std::string error_of(const std::string& text) {
  auto r = parse_scenario(text, "bad.yaml", "/data");
  EXPECT_FALSE(r.has_value());
  return r ? std::string() : r.error().message();
}

TEST(ScenarioParse, ValidScenarioIsReadCompletely) {
  auto r = parse_scenario(kValid, "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->name, "t");
  EXPECT_EQ(r->gpu.name, "H100-SXM5-80GB");
  EXPECT_EQ(r->seed, 7u);
  EXPECT_EQ(r->duration, core::seconds(10));
  EXPECT_EQ(r->modes, (std::vector<std::string>{"mps", "static-partitions"}));
  ASSERT_EQ(r->tenants.size(), 2u);
  const auto& chat = r->tenants[0];
  EXPECT_EQ(chat.kind, TenantSpec::Kind::kInference);
  EXPECT_EQ(chat.inference.model.name, "llama-3-8b");
  EXPECT_EQ(chat.inference.slo.ttft, core::millis(400));
  EXPECT_EQ(chat.inference.slo.tpot, core::millis(40));
  EXPECT_DOUBLE_EQ(chat.sm_share, 0.5);
  EXPECT_DOUBLE_EQ(chat.arrivals.synthetic.rate_per_s, 3);
  EXPECT_DOUBLE_EQ(chat.arrivals.synthetic.cv, 4);
  EXPECT_EQ(chat.arrivals.synthetic.input_tokens.max, 20);
  const auto& train = r->tenants[1];
  EXPECT_EQ(train.kind, TenantSpec::Kind::kTraining);
  EXPECT_EQ(train.training.model.name, "resnet-50");
  EXPECT_EQ(train.training.batch, 32);
  EXPECT_FALSE(train.training.persistent.has_value());
}

TEST(ScenarioParse, PersistentGemmsSizeGridsAndCapCheckpoints) {
  auto r = parse_scenario(
      mutate("batch: 32", "batch: 32\n    persistent_gemms: {sms: 120, max_checkpoints: 8}"),
      "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const auto& p = r->tenants[1].training.persistent;
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->sms, 120);
  EXPECT_EQ(p->max_checkpoints, 8);
  EXPECT_EQ(p->sm.max_threads, r->gpu.sm.max_threads);  // the scenario's GPU's limits
  EXPECT_EQ(p->sm.registers, r->gpu.sm.registers);

  // Defaults: every SM of the GPU, and the default cap.
  auto d = parse_scenario(mutate("batch: 32", "batch: 32\n    persistent_gemms: {}"), "ok.yaml",
                          "/data");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  ASSERT_TRUE(d->tenants[1].training.persistent.has_value());
  EXPECT_EQ(d->tenants[1].training.persistent->sms, d->gpu.sms);
  EXPECT_EQ(d->tenants[1].training.persistent->max_checkpoints,
            tenant::PersistentGemms{}.max_checkpoints);
}

TEST(ScenarioParse, SimSectionOverridesModelAssumptions) {
  auto r = parse_scenario(
      mutate("tenants:", "sim: {achievable_compute_fraction: 0.8, launch_overhead: 5us}\ntenants:"),
      "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->sim_overrides.achievable_compute_fraction, 0.8);
  EXPECT_EQ(r->sim_overrides.launch_overhead, core::micros(5));
  EXPECT_FALSE(r->sim_overrides.achievable_bandwidth_fraction.has_value());
  // What the section leaves unset is the GPU's calibrated default.
  const sim::SimGpuOptions applied = sim::options_for(r->gpu, r->sim_overrides);
  EXPECT_DOUBLE_EQ(applied.achievable_compute_fraction, 0.8);
  EXPECT_DOUBLE_EQ(applied.achievable_bandwidth_fraction,
                   sim::default_options(r->gpu).achievable_bandwidth_fraction);
}

TEST(ScenarioParse, AnInferenceTenantNamesItsEngineCosts) {
  auto r = parse_scenario(
      mutate("model: llama-3-8b", "model: llama-3-8b\n    engine: {step: 1ms, per_sequence: 20us}"),
      "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const workload::EngineCosts& e = r->tenants[0].inference.engine;
  EXPECT_EQ(e.step, core::millis(1));
  EXPECT_EQ(e.per_sequence, core::micros(20));
  EXPECT_EQ(e.prefill, 0);
  auto fitted = parse_scenario(mutate("model: llama-3-8b", "model: llama-3-8b\n    engine: fitted"),
                               "ok.yaml", "/data");
  ASSERT_TRUE(fitted.has_value()) << fitted.error().message();
  EXPECT_EQ(fitted->tenants[0].inference.engine, workload::default_engine_costs());
  auto plain = parse_scenario(mutate("model: llama-3-8b", "model: llama-3-8b"), "ok.yaml", "/data");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->tenants[0].inference.engine, workload::kNoEngineCosts);
  auto word = parse_scenario(mutate("model: llama-3-8b", "model: llama-3-8b\n    engine: vllm"),
                             "bad.yaml", "/data");
  ASSERT_FALSE(word.has_value());
  EXPECT_NE(word.error().message().find("use fitted, none or a mapping"), std::string::npos)
      << word.error().message();
  auto negative =
      parse_scenario(mutate("model: llama-3-8b", "model: llama-3-8b\n    engine: {per_worker: 2s}"),
                     "bad.yaml", "/data");
  ASSERT_FALSE(negative.has_value());
  EXPECT_NE(negative.error().message().find("engine cost per_worker"), std::string::npos)
      << negative.error().message();
  auto unknown =
      parse_scenario(mutate("model: llama-3-8b", "model: llama-3-8b\n    engine: {sampling: 2ms}"),
                     "bad.yaml", "/data");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message().find("sampling"), std::string::npos)
      << unknown.error().message();
}

TEST(ScenarioParse, AnInferenceTenantSizesItsKvCacheOnTheScenariosGpu) {
  auto r = parse_scenario(
      mutate("model: llama-3-8b", "model: llama-3-8b\n    kv_cache: {gpu_memory_utilization: 0.5}"),
      "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const auto& t = r->tenants[0];
  ASSERT_TRUE(t.memory.has_value());
  EXPECT_DOUBLE_EQ(t.memory->budget, 40.0 * (1 << 30));  // half of the H100's 80 GiB
  EXPECT_EQ(t.inference.kv_cache.blocks, t.memory->cache.blocks);
  EXPECT_GT(t.inference.kv_cache.blocks, 0);
  EXPECT_EQ(t.inference.kv_cache.block_size, 16);
  auto vllm = parse_scenario(mutate("model: llama-3-8b", "model: llama-3-8b\n    kv_cache: vllm"),
                             "ok.yaml", "/data");
  ASSERT_TRUE(vllm.has_value()) << vllm.error().message();
  EXPECT_DOUBLE_EQ(vllm->tenants[0].memory->budget, 72.0 * (1 << 30));
  // Without the key the cache has no limit, as before.
  auto plain = parse_scenario(kValid, "ok.yaml", "/data");
  ASSERT_TRUE(plain.has_value());
  EXPECT_FALSE(plain->tenants[0].memory.has_value());
  EXPECT_EQ(plain->tenants[0].inference.kv_cache.blocks, 0);
}

TEST(ScenarioParse, AKvCacheThatDoesNotFitIsAnOutOfMemoryNamingTheTenantsKey) {
  const std::string small = error_of(mutate(
      "model: llama-3-8b", "model: llama-3-8b\n    kv_cache: {gpu_memory_utilization: 0.1}"));
  EXPECT_NE(small.find("out of memory: llama-3-8b needs"), std::string::npos) << small;
  EXPECT_NE(small.find("H100-SXM5-80GB of 80 GiB"), std::string::npos) << small;
  EXPECT_NE(small.find("kv_cache"), std::string::npos) << small;
  const std::string word =
      error_of(mutate("model: llama-3-8b", "model: llama-3-8b\n    kv_cache: paged"));
  EXPECT_NE(word.find("use vllm or a mapping"), std::string::npos) << word;
  const std::string block =
      error_of(mutate("model: llama-3-8b", "model: llama-3-8b\n    kv_cache: {block_size: 0}"));
  EXPECT_NE(block.find("block_size 0 is out of range"), std::string::npos) << block;
  const std::string key =
      error_of(mutate("model: llama-3-8b", "model: llama-3-8b\n    kv_cache: {blocks: 10}"));
  EXPECT_NE(key.find("blocks"), std::string::npos) << key;
}

TEST(ScenarioParse, AnInferenceTenantServesInTheFormatItNames) {
  auto fp8 = parse_scenario(mutate("model: llama-3-8b", "model: llama-3-8b\n    precision: fp8"),
                            "ok.yaml", "/data");
  ASSERT_TRUE(fp8.has_value()) << fp8.error().message();
  EXPECT_EQ(fp8->tenants[0].inference.model.precision, workload::Precision::kFp8);
  const std::string on_a100 = [] {
    std::string s = mutate("gpu: H100-SXM5-80GB", "gpu: A100-SXM4-80GB");
    const auto pos = s.find("model: llama-3-8b");
    return s.replace(pos, 17, "model: llama-3-8b\n    precision: fp8");
  }();
  auto no_fp8 = parse_scenario(on_a100, "bad.yaml", "/data");
  ASSERT_FALSE(no_fp8.has_value());
  EXPECT_NE(no_fp8.error().message().find("precision fp8 needs FP8 tensor cores"),
            std::string::npos)
      << no_fp8.error().message();
  auto tf32 = parse_scenario(mutate("model: llama-3-8b", "model: llama-3-8b\n    precision: tf32"),
                             "bad.yaml", "/data");
  ASSERT_FALSE(tf32.has_value());
  EXPECT_NE(tf32.error().message().find("a serving tenant runs fp8, bf16 or fp16"),
            std::string::npos);
}

TEST(ScenarioParse, SimSectionSetsAtomAndYieldCosts) {
  auto r = parse_scenario(
      mutate("tenants:", "sim: {atom_launch_overhead: 2us, yield_save_cost: 750ns}\ntenants:"),
      "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->sim_overrides.atom_launch_overhead, core::micros(2));
  EXPECT_EQ(r->sim_overrides.yield_save_cost, 750);
  auto bad = parse_scenario(mutate("tenants:", "sim: {yield_save_cost: -1us}\ntenants:"),
                            "bad.yaml", "/data");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("yield_save_cost"), std::string::npos)
      << bad.error().message();
}

TEST(ScenarioParse, HostLaunchCostsAndCudaGraphs) {
  auto r =
      parse_scenario(mutate("tenants:", "sim: {host_launch: 5us, graph_launch: 3500ns}\ntenants:"),
                     "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->sim_overrides.host_launch, core::micros(5));
  EXPECT_EQ(r->sim_overrides.graph_launch, 3500);
  // vLLM's default: decode steps are CUDA graphs; `cuda_graphs: false` is its enforce_eager.
  EXPECT_TRUE(r->tenants[0].inference.cuda_graphs);
  auto eager = parse_scenario(
      mutate("model: llama-3-8b", "model: llama-3-8b\n    cuda_graphs: false"), "ok.yaml", "/data");
  ASSERT_TRUE(eager.has_value()) << eager.error().message();
  EXPECT_FALSE(eager->tenants[0].inference.cuda_graphs);
  auto bad =
      parse_scenario(mutate("tenants:", "sim: {host_launch: -2us}\ntenants:"), "bad.yaml", "/data");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("sim.host_launch: expected a non-negative duration"),
            std::string::npos)
      << bad.error().message();
}

TEST(ScenarioParse, AServiceShardedOverGpusTalksOverTheirNvlink) {
  auto r = parse_scenario(mutate("model: llama-3-8b", "model: llama-3-8b\n    tensor_parallel: 2"),
                          "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const auto& tp = r->tenants[0].inference.tensor_parallel;
  EXPECT_EQ(tp.degree, 2);
  EXPECT_DOUBLE_EQ(tp.link_bytes_per_s, 450e9);  // the H100 SXM's NVLink, one direction
  EXPECT_EQ(parse_scenario(kValid, "ok.yaml", "/data")->tenants[0].inference.tensor_parallel.degree,
            1);
}

TEST(ScenarioParse, ATrainingTenantTrainsInItsPrecision) {
  auto r =
      parse_scenario(mutate("batch: 32", "batch: 32\n    precision: tf32"), "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->tenants[1].training.precision, workload::Precision::kTf32);
  auto fp8 = parse_scenario(mutate("batch: 32", "batch: 32\n    precision: fp8"), "bad.yaml", "/d");
  ASSERT_FALSE(fp8.has_value());
  EXPECT_NE(fp8.error().message().find("FP8 training"), std::string::npos) << fp8.error().message();
  auto bad =
      parse_scenario(mutate("batch: 32", "batch: 32\n    precision: int4"), "bad.yaml", "/d");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("bf16, fp16, tf32 or fp32"), std::string::npos)
      << bad.error().message();
}

TEST(ScenarioParse, GemmStreamKIsAFlag) {
  auto r = parse_scenario(mutate("tenants:", "sim: {gemm_stream_k: true}\ntenants:"), "ok.yaml",
                          "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->sim_overrides.gemm_stream_k, std::optional(true));
  auto bad = parse_scenario(mutate("tenants:", "sim: {gemm_stream_k: often}\ntenants:"), "bad.yaml",
                            "/data");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("gemm_stream_k"), std::string::npos)
      << bad.error().message();
}

TEST(ScenarioParse, TheStreamKLibraryHasItsOwnGemmOptions) {
  auto r = parse_scenario(mutate("tenants:",
                                 "sim: {gemm_stream_k: true, stream_k_compute_fraction: 0.8, "
                                 "stream_k_tile_knee: 2, stream_k_fixed: 4us}\ntenants:"),
                          "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->sim_overrides.stream_k_compute_fraction, 0.8);
  EXPECT_EQ(r->sim_overrides.stream_k_tile_knee, 2);
  EXPECT_EQ(r->sim_overrides.stream_k_fixed, core::micros(4));
  for (const char* bad_value :
       {"stream_k_compute_fraction: 0", "stream_k_tile_knee: -1", "stream_k_fixed: -1us"}) {
    auto bad = parse_scenario(mutate("tenants:", fmt::format("sim: {{{}}}\ntenants:", bad_value)),
                              "bad.yaml", "/data");
    ASSERT_FALSE(bad.has_value()) << bad_value;
    const std::string key(
        std::string_view(bad_value).substr(0, std::string_view(bad_value).find(':')));
    EXPECT_NE(bad.error().message().find(key), std::string::npos) << bad.error().message();
  }
}

TEST(ScenarioParse, EachMemoryBoundKindsFraction) {
  auto r = parse_scenario(
      mutate("tenants:",
             "sim: {pointwise_bandwidth_fraction: 0.9, gather_bandwidth_fraction: 0.2, "
             "norm_bandwidth_fraction: 0.4, attention_bandwidth_fraction: 0.95}\ntenants:"),
      "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->sim_overrides.pointwise_bandwidth_fraction, 0.9);
  EXPECT_EQ(r->sim_overrides.gather_bandwidth_fraction, 0.2);
  EXPECT_EQ(r->sim_overrides.norm_bandwidth_fraction, 0.4);
  EXPECT_EQ(r->sim_overrides.attention_bandwidth_fraction, 0.95);
  for (const char* key : {"gather_bandwidth_fraction", "attention_bandwidth_fraction"}) {
    auto bad = parse_scenario(mutate("tenants:", fmt::format("sim: {{{}: 3}}\ntenants:", key)),
                              "bad.yaml", "/data");
    ASSERT_FALSE(bad.has_value()) << key;
    EXPECT_NE(bad.error().message().find(key), std::string::npos) << bad.error().message();
  }
}

TEST(ScenarioParse, ModeOptionsSetTheSchedulersKnobs) {
  auto r =
      parse_scenario(mutate("tenants:",
                            "mode_options: {atom_duration: 100us, right_sizing: true, dvfs: true, "
                            "latency_slip: 0.05, remap_cost: 20us, remap_min_residency: 5ms}"
                            "\ntenants:"),
                     "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const auto& lithos = r->mode_options.of<gpu::LithosOptions>("lithos");
  EXPECT_EQ(lithos.atom_duration, core::micros(100));
  EXPECT_TRUE(lithos.right_sizing);
  EXPECT_TRUE(lithos.dvfs);
  EXPECT_DOUBLE_EQ(lithos.latency_slip, 0.05);
  // cogpu and tpot-first share the remap keys: one value sets both.
  for (const auto* mode : {"cogpu", "tpot-first"}) {
    const auto& remap = r->mode_options.of<gpu::CoGpuOptions>(mode);
    EXPECT_EQ(remap.remap_cost, core::micros(20)) << mode;
    EXPECT_EQ(remap.remap_min_residency, core::millis(5)) << mode;
  }
  // Left out, each keeps its documented default.
  auto d = parse_scenario(mutate("tenants:", "mode_options: {time_slice: 1ms}\ntenants:"),
                          "ok.yaml", "/data");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->mode_options.of<gpu::TimeSlicingOptions>("time-slicing").time_slice,
            core::millis(1));
  const auto& kept = d->mode_options.of<gpu::LithosOptions>("lithos");
  EXPECT_EQ(kept.atom_duration, gpu::LithosOptions{}.atom_duration);
  EXPECT_FALSE(kept.right_sizing);
  EXPECT_FALSE(kept.dvfs);
  EXPECT_DOUBLE_EQ(kept.latency_slip, gpu::LithosOptions{}.latency_slip);
  EXPECT_EQ(d->mode_options.of<gpu::CoGpuOptions>("cogpu").remap_cost,
            gpu::CoGpuOptions{}.remap_cost);
  EXPECT_EQ(d->mode_options.of<gpu::CoGpuOptions>("cogpu").remap_min_residency,
            gpu::CoGpuOptions{}.remap_min_residency);
}

TEST(ScenarioParse, BuiltInDemoParses) {
  auto r = parse_scenario(demo_scenario_yaml(), std::string(kDemoScenarioName), ".");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  // The demo shows every sharing mode tessera has, each once.
  std::vector<std::string> registered;
  for (const auto& entry : gpu::sharing_modes()) registered.emplace_back(entry.name);
  std::vector<std::string> shown = r->modes;
  std::sort(registered.begin(), registered.end());
  std::sort(shown.begin(), shown.end());
  EXPECT_EQ(shown, registered);
}

TEST(ScenarioParse, TracePathResolvesAgainstScenarioFolder) {
  auto r = parse_scenario(
      mutate("arrivals: {process: gamma, rate: 3, cv: 4, input_tokens: {min: 10, max: 20},\n"
             "               output_tokens: {min: 2, max: 5}}",
             "arrivals: {trace: traces/a.csv, time_scale: 2}"),
      "ok.yaml", "/data");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->tenants[0].arrivals.kind, ArrivalSpec::Kind::kTrace);
  EXPECT_EQ(r->tenants[0].arrivals.trace_path, "/data/traces/a.csv");
  EXPECT_DOUBLE_EQ(r->tenants[0].arrivals.trace.time_scale, 2);
}

struct BadCase {
  const char* what;
  std::string text;
  std::vector<std::string> expected_fragments;
};

class ScenarioRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(ScenarioRejects, WithAMessageNamingTheProblem) {
  const auto& c = GetParam();
  const std::string msg = error_of(c.text);
  for (const auto& frag : c.expected_fragments) {
    EXPECT_NE(msg.find(frag), std::string::npos) << c.what << ": '" << frag << "' not in: " << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, ScenarioRejects,
    ::testing::Values(
        BadCase{"unknown gpu",
                mutate("gpu: H100-SXM5-80GB", "gpu: H900"),
                {"bad.yaml:3:", "gpu", "H900", "H100-SXM5-80GB"}},
        BadCase{"unknown model",
                mutate("model: llama-3-8b", "model: llama-9"),
                {"bad.yaml:10:", "tenants[0].model", "llama-9"}},
        BadCase{"unknown mode",
                mutate("[mps, static-partitions]", "[mps, magic]"),
                {"unknown sharing mode 'magic'", "time-slicing"}},
        BadCase{"typo in a field",
                mutate("sm_share: 0.5", "sm_shar: 0.5"),
                {"bad.yaml:11:", "unknown field 'sm_shar'", "sm_share"}},
        BadCase{
            "duration without unit", mutate("duration: 10s", "duration: 10"), {"duration", "unit"}},
        BadCase{
            "negative rate", mutate("rate: 3", "rate: -3"), {"tenants[0].arrivals.rate", "> 0"}},
        BadCase{"bad token range",
                mutate("input_tokens: {min: 10, max: 20}", "input_tokens: {min: 30, max: 20}"),
                {"input_tokens", "min <= max"}},
        BadCase{"not a number",
                mutate("batch: 32", "batch: lots"),
                {"tenants[1].batch", "integer", "'lots'"}},
        BadCase{"shares over one",
                mutate("batch: 32", "batch: 32\n    sm_share: 0.7"),
                {"sm_share", "must not exceed 1"}},
        BadCase{"persistent grids for more SMs than the GPU has",
                mutate("batch: 32", "batch: 32\n    persistent_gemms: {sms: 500}"),
                {"tenants[1].persistent_gemms.sms", "[1, 132]", "500"}},
        BadCase{"negative checkpoint cap",
                mutate("batch: 32", "batch: 32\n    persistent_gemms: {max_checkpoints: -1}"),
                {"persistent_gemms.max_checkpoints", "[0, 1024]"}},
        BadCase{"unknown persistent field",
                mutate("batch: 32", "batch: 32\n    persistent_gemms: {checkpoints: 4}"),
                {"unknown field 'checkpoints'", "max_checkpoints"}},
        BadCase{"duplicate names", mutate("name: train", "name: chat"), {"'chat'", "twice"}},
        BadCase{"unknown kind",
                mutate("kind: training", "kind: batch"),
                {"unknown tenant kind 'batch'"}},
        BadCase{"missing tenants",
                "gpu: h100\nduration: 1s\nmode: mps\n",
                {"missing required field 'tenants'"}},
        BadCase{"broken yaml", mutate("tenants:", "tenants: [\n"), {"bad.yaml:"}},
        BadCase{"priority out of range",
                mutate("kind: training", "kind: training\n    priority: 4294967306"),
                {"tenants[1].priority", "[-1000, 1000]"}},
        BadCase{
            "zero max_requests",
            mutate("arrivals: {process: gamma, rate: 3, cv: 4, input_tokens: {min: 10, max: 20},\n"
                   "               output_tokens: {min: 2, max: 5}}",
                   "arrivals: {trace: a.csv, max_requests: 0}"),
            {"tenants[0].arrivals.max_requests", "positive"}},
        BadCase{"impossible model assumption",
                mutate("tenants:", "sim: {achievable_compute_fraction: 1.5}\ntenants:"),
                {"bad.yaml:7:", "sim", "achievable"}},
        BadCase{"zero atom duration",
                mutate("tenants:", "mode_options: {atom_duration: 0us}\ntenants:"),
                {"bad.yaml:7:", "atom_duration", "> 0"}},
        BadCase{"latency slip above one",
                mutate("tenants:", "mode_options: {latency_slip: 1.5}\ntenants:"),
                {"latency_slip", "[0, 1]", "1.5"}},
        BadCase{"negative remap cost",
                mutate("tenants:", "mode_options: {remap_cost: -5us}\ntenants:"),
                {"remap_cost", "non-negative"}},
        BadCase{"right_sizing not a bool",
                mutate("tenants:", "mode_options: {right_sizing: sometimes}\ntenants:"),
                {"right_sizing", "sometimes"}},
        BadCase{"unknown mode option",
                mutate("tenants:", "mode_options: {atom_size: 10}\ntenants:"),
                {"unknown field 'atom_size'", "atom_duration"}},
        BadCase{"unknown sim option",
                mutate("tenants:", "sim: {l2_cache: 50MB}\ntenants:"),
                {"unknown field 'l2_cache'"}},
        BadCase{
            "poisson with cv", mutate("process: gamma", "process: poisson"), {"Poisson", "gamma"}},
        BadCase{"tensor parallel over no GPUs",
                mutate("model: llama-3-8b", "model: llama-3-8b\n    tensor_parallel: 0"),
                {"bad.yaml:11:", "tensor_parallel", "1 to 8", "got 0"}},
        BadCase{"tensor parallel that does not divide the heads",
                mutate("model: llama-3-8b", "model: llama-3-8b\n    tensor_parallel: 3"),
                {"bad.yaml:11:", "tensor_parallel", "3"}}),
    [](const auto& info) {
      std::string name = info.param.what;
      for (auto& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

TEST(ScenarioLoad, MissingFileNamesThePath) {
  auto r = load_scenario("/nonexistent/scenario.yaml");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("/nonexistent/scenario.yaml"), std::string::npos);
}

// A path that never ends is read only up to the scenario cap, then refused by name.
TEST(ScenarioLoad, AnEndlessFileStopsAtTheCap) {
  auto r = load_scenario("/dev/urandom");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(),
            "scenario '/dev/urandom' is larger than 64 MiB, the most tessera reads from one "
            "scenario");
}

TEST(ScenarioLoad, AFolderIsNamedAsOne) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  auto r = load_scenario(dir);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "cannot read scenario '" + dir + "': it is a directory");
}

}  // namespace
}  // namespace tessera::scenario
