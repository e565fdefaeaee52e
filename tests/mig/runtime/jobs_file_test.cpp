#include "tessera/mig/runtime/jobs_file.hpp"

#include <gtest/gtest.h>

#include "tessera/mig/policy/memory_estimate.hpp"
#include "tessera/workload/models/rodinia.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::mig {
namespace {

using workload::JobKind;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// The format's own example (docs/mig.md).
constexpr std::string_view kExample = R"(gpu: a100-80gb
scheme: A
seed: 7
jobs:
  - name: hotspot-8k
    kind: scientific
    kernel: hotspot
    size: 8192
    iterations: 2000
    submit: 0s
    command: ["./hotspot", "8192"]
  - name: bert-train
    kind: training
    model: bert-base
    batch: 32
    optimizer: adam
    iterations: 300
  - name: qwen-chat
    kind: inference
    model: qwen2-7b
    batch: 1
    prompt: 512
    output: 3000
    kv_growth: chunked
    kv_chunk: 1024
    context_schedule:
      - {at: 1500, tokens: 4096}
  - name: custom-step
    kind: custom
    iterations: 100
    submit: 2s
    iteration_time: 20ms
    serial_fraction: 0.1
    memory:
      base: 4GiB
      per_iteration: 1MiB
      per_iteration_squared: 0B
      steps: [{at: 50, add: 5GiB}]
      declared: true
      granule: 2MiB
      reuse: [0.5, 1.0]
    estimate: 9GiB
)";

std::int64_t context() {
  return estimate_training(TrainingMemoryInput{.parameters = 0, .batch = 0}).framework_context;
}

TEST(JobsFileTest, ParsesTheFormatsExample) {
  auto f = parse_jobs(kExample, "example.yaml");
  ASSERT_TRUE(f.has_value()) << f.error().message();
  EXPECT_EQ(f->gpu, "a100-80gb");
  EXPECT_EQ(f->scheme, "A");
  EXPECT_EQ(f->seed, 7U);
  ASSERT_EQ(f->jobs.size(), 4U);

  const auto& hot = *f->jobs[0];
  EXPECT_EQ(hot.name, "hotspot-8k");
  EXPECT_EQ(hot.kind, JobKind::kScientific);
  EXPECT_EQ(hot.iterations, 2000);
  EXPECT_EQ(hot.command, (std::vector<std::string>{"./hotspot", "8192"}));
  const std::int64_t grids = 3LL * 8192 * 8192 * 4;
  EXPECT_EQ(hot.memory.base_bytes, grids + context());
  EXPECT_EQ(hot.estimated_peak_bytes, hot.memory.peak_reserved(hot.iterations));
  EXPECT_FALSE(hot.work.varies);
  ASSERT_TRUE(hot.work.build);
  EXPECT_EQ(hot.work.build(0).kernel_count(), 1);

  const auto& bert = *f->jobs[1];
  EXPECT_EQ(bert.kind, JobKind::kTraining);
  EXPECT_EQ(bert.iterations, 300);
  EXPECT_GT(bert.estimated_peak_bytes, 2 * kGiB);
  EXPECT_GT(bert.work.build(0).kernel_count(), 100);

  const auto& qwen = *f->jobs[2];
  EXPECT_EQ(qwen.kind, JobKind::kInference);
  EXPECT_EQ(qwen.iterations, 3000);
  EXPECT_TRUE(qwen.work.varies);
  ASSERT_EQ(qwen.declared_steps.size(), 1U);
  const auto model = workload::find_model("qwen2-7b");
  ASSERT_TRUE(model.has_value());
  const double per_token = model->kv_bytes_per_token();
  EXPECT_EQ(qwen.declared_steps[0].iteration, 1500);
  EXPECT_EQ(qwen.declared_steps[0].bytes, static_cast<std::int64_t>(std::ceil(per_token * 4096)));
  // What the scheduler starts from: the estimate at the prompt length.
  EXPECT_EQ(qwen.estimated_peak_bytes, estimate_inference(*model, 1, 512).total());

  const auto& custom = *f->jobs[3];
  EXPECT_EQ(custom.kind, JobKind::kCustom);
  EXPECT_EQ(custom.submit_time, core::seconds(2));
  EXPECT_EQ(custom.iteration_time_full, core::millis(20));
  EXPECT_DOUBLE_EQ(custom.serial_fraction, 0.1);
  EXPECT_EQ(custom.memory.base_bytes, 4 * kGiB);
  EXPECT_DOUBLE_EQ(custom.memory.per_iteration, static_cast<double>(kMiB));
  EXPECT_EQ(custom.memory.steps,
            (std::vector<workload::MemoryStep>{{.iteration = 50, .bytes = 5 * kGiB}}));
  EXPECT_EQ(custom.declared_steps, custom.memory.steps);
  EXPECT_EQ(custom.memory.granule_bytes, 2 * kMiB);
  EXPECT_DOUBLE_EQ(custom.memory.reuse_start, 0.5);
  EXPECT_DOUBLE_EQ(custom.memory.reuse_end, 1.0);
  EXPECT_EQ(custom.estimated_peak_bytes, 9 * kGiB);
  EXPECT_FALSE(custom.work.build);
}

TEST(JobsFileTest, DefaultsApply) {
  auto f = parse_jobs(R"(jobs:
  - {name: a, kind: scientific, kernel: lud, iterations: 3}
  - {name: b, kind: training, model: resnet-50, iterations: 2}
  - {name: c, kind: inference, model: llama-3-8b, prompt: 100, iterations: 10}
)",
                      "d.yaml");
  ASSERT_TRUE(f.has_value()) << f.error().message();
  EXPECT_EQ(f->gpu, "a100-40gb");
  EXPECT_EQ(f->scheme, "B");
  EXPECT_EQ(f->seed, 1U);
  const auto lud = workload::find_rodinia("lud");
  EXPECT_EQ(f->jobs[0]->memory.base_bytes, lud->footprint_bytes(lud->default_size) + context());
  EXPECT_NE(f->jobs[1]->description.find("batch 256"), std::string::npos);
  EXPECT_EQ(f->jobs[2]->iterations, 10);
  EXPECT_TRUE(f->jobs[2]->declared_steps.empty());
}

// The truth is not the estimate: the allocator's slack and 2 MiB segments, and optimizer state
// that appears after the first step.
TEST(JobsFileTest, TrainingTruthAddsAllocatorSlackAndWarmUp) {
  auto f = parse_jobs(R"(jobs:
  - {name: t, kind: training, model: bert-base, batch: 32, optimizer: adam, iterations: 100}
)",
                      "t.yaml");
  ASSERT_TRUE(f.has_value()) << f.error().message();
  const auto& job = *f->jobs[0];
  const auto& m = job.memory;
  EXPECT_LT(m.requested_at(0, 100), m.requested_at(1, 100));  // optimizer state from iteration 1
  EXPECT_EQ(m.requested_at(1, 100), job.estimated_peak_bytes);
  EXPECT_GT(m.reserved_at(1, 100), m.requested_at(1, 100));
  EXPECT_EQ(m.reserved_at(1, 100) % (2 * kMiB), 0);
  EXPECT_GT(m.peak_reserved(100), job.estimated_peak_bytes);
}

// A one-iteration training job still runs its optimizer step, which allocates the optimizer
// state: the step lies inside the job (iteration 0), and that iteration holds the whole estimate.
TEST(JobsFileTest, OneIterationTrainingJobHoldsItsOptimizerStateInItsOnlyIteration) {
  auto f = parse_jobs("jobs:\n  - {name: t, kind: training, model: bert-base, iterations: 1}\n",
                      "one.yaml");
  ASSERT_TRUE(f.has_value()) << f.error().message();
  const auto& job = *f->jobs[0];
  ASSERT_EQ(job.iterations, 1);
  ASSERT_EQ(job.memory.steps.size(), 1U);
  EXPECT_EQ(job.memory.steps[0].iteration, 0);
  EXPECT_EQ(job.memory.requested_at(0, 1), job.estimated_peak_bytes);
  EXPECT_GE(job.memory.peak_reserved(1), job.estimated_peak_bytes);
}

// The parts of a model job's static estimate are kept by name (for `tessera mig plan`) and add
// up to the estimate; jobs without a model have none.
TEST(JobsFileTest, ModelJobsKeepTheirEstimatesParts) {
  auto f = parse_jobs(R"(jobs:
  - {name: t, kind: training, model: resnet-50, batch: 64, iterations: 10}
  - {name: i, kind: inference, model: qwen2-7b, prompt: 512, output: 100}
  - {name: s, kind: scientific, kernel: hotspot, size: 1024, iterations: 10}
)",
                      "b.yaml");
  ASSERT_TRUE(f.has_value()) << f.error().message();
  ASSERT_EQ(f->breakdowns.size(), 2u);
  EXPECT_EQ(f->breakdowns.at("t").total(), f->jobs[0]->estimated_peak_bytes);
  EXPECT_GT(f->breakdowns.at("t").optimizer_state, 0);
  EXPECT_EQ(f->breakdowns.at("i").total(), f->jobs[1]->estimated_peak_bytes);
  EXPECT_GT(f->breakdowns.at("i").kv_cache, 0);
  EXPECT_FALSE(f->breakdowns.contains("s"));
}

TEST(JobsFileTest, ChunkedCacheGrowsInSteps) {
  auto f = parse_jobs(R"(jobs:
  - {name: q, kind: inference, model: qwen2-7b, batch: 2, prompt: 1000, output: 2100,
     kv_growth: chunked, kv_chunk: 1024}
)",
                      "c.yaml");
  ASSERT_TRUE(f.has_value()) << f.error().message();
  const auto& m = f->jobs[0]->memory;
  // 1000 + i tokens in chunks of 1024: a new chunk at i = 25 (1025 tokens), 1049 and 2073.
  ASSERT_EQ(m.steps.size(), 3U);
  EXPECT_EQ(m.steps[0].iteration, 25);
  EXPECT_EQ(m.steps[1].iteration, 1049);
  EXPECT_EQ(m.steps[2].iteration, 2073);
  const double per_token = workload::find_model("qwen2-7b")->kv_bytes_per_token() * 2;
  EXPECT_NEAR(static_cast<double>(m.steps[0].bytes), per_token * 1024, 2);
  EXPECT_DOUBLE_EQ(m.per_iteration, 0);
  EXPECT_EQ(m.requested_at(24, 2100), m.requested_at(0, 2100));
}

TEST(JobsFileTest, LinearCacheGrowsEveryToken) {
  auto f = parse_jobs(R"(jobs:
  - {name: q, kind: inference, model: qwen2-7b, prompt: 10, output: 50,
     context_schedule: [{at: 20, tokens: 100}]}
)",
                      "l.yaml");
  ASSERT_TRUE(f.has_value()) << f.error().message();
  const auto& job = *f->jobs[0];
  const double per_token = workload::find_model("qwen2-7b")->kv_bytes_per_token();
  EXPECT_DOUBLE_EQ(job.memory.per_iteration, per_token);
  EXPECT_EQ(job.memory.steps, job.declared_steps);
  // At the step: one more token and the 100 scheduled ones.
  EXPECT_NEAR(
      static_cast<double>(job.memory.requested_at(20, 50) - job.memory.requested_at(19, 50)),
      per_token * 101, 2);
  // The step's work sees the extra context.
  const auto before = job.work.build(19).total_bytes();
  const auto after = job.work.build(20).total_bytes();
  EXPECT_GT(after - before, 50 * per_token);
}

struct BadCase {
  const char* text;
  const char* where;  // "file:line:col"
  const char* field;  // path of the field at fault
  const char* what;
};

TEST(JobsFileTest, ErrorsNameFileLineAndField) {
  const BadCase cases[] = {
      {"gpu: v100\njobs: [{name: a, kind: custom, iterations: 1, iteration_time: 1ms, memory: "
       "{base: 1GiB}}]\n",
       "bad.yaml:1:6", "gpu", "MIG"},
      {"scheme: C\njobs: []\n", "bad.yaml:1:9", "scheme",
       "scheme 'C': expected A, B, sequential, static or time-fit"},
      {"jobs: []\n", "bad.yaml:1:7", "jobs", "at least one job"},
      {"jobz: []\n", "bad.yaml:1:1", "jobz", "unknown field"},
      {"jobs:\n  - {name: a, kind: scientific, kernel: myocyte, iterations: 5}\n", "bad.yaml:2:41",
       "jobs[0].kernel", "unknown scientific kernel"},
      {"jobs:\n  - {name: a, kind: training, model: gpt-9, iterations: 5}\n", "bad.yaml:2:38",
       "jobs[0].model", "unknown training model"},
      {"jobs:\n  - {name: a, kind: inference, model: gpt-9, prompt: 5, output: 5}\n",
       "bad.yaml:2:39", "jobs[0].model", "unknown model"},
      {"jobs:\n  - {name: a, kind: scientific, kernel: lud, iterations: 0}\n", "bad.yaml:2:58",
       "jobs[0].iterations", "between 1 and"},
      {"jobs:\n  - {name: a, kind: scientific, kernel: lud, size: -4, iterations: 2}\n",
       "bad.yaml:2:52", "jobs[0].size", "between 1 and"},
      {"jobs:\n  - {name: a, kind: scientific, kernel: lud, iterations: many}\n", "bad.yaml:2:58",
       "jobs[0].iterations", "expected an integer"},
      {"jobs:\n  - {name: a, kind: scientific, kernel: lud, iteratons: 3}\n", "bad.yaml:2:46",
       "jobs[0].iteratons", "unknown field"},
      {"jobs:\n  - {name: a, kind: batch, iterations: 3}\n", "bad.yaml:2:21", "jobs[0].kind",
       "unknown job kind"},
      {"jobs:\n  - {name: a, kind: custom, iterations: 3, iteration_time: 1ms, memory: {base: "
       "4096}}\n",
       "bad.yaml:2:80", "jobs[0].memory.base", "expected a size"},
      {"jobs:\n  - {name: a, kind: custom, iterations: 3, iteration_time: 1ms, memory: {base: "
       "4GB}}\n",
       "bad.yaml:2:80", "jobs[0].memory.base", "expected a size"},
      {"jobs:\n  - {name: a, kind: custom, iterations: 3, iteration_time: 1ms, memory: {base: "
       "1GiB, reuse: [0, 1]}}\n",
       "bad.yaml:2:94", "jobs[0].memory.reuse[0]", "(0, 1]"},
      {"jobs:\n  - {name: a, kind: custom, iterations: 3, iteration_time: 1ms, memory: {base: "
       "1GiB, steps: [{at: 3, add: 1GiB}]}}\n",
       "bad.yaml:2:99", "jobs[0].memory.steps[0].at", "[0, 3)"},
      {"jobs:\n  - {name: a, kind: custom, iterations: 3, iteration_time: 10, memory: {base: "
       "1GiB}}\n",
       "bad.yaml:2:60", "jobs[0].iteration_time", "duration"},
      {"jobs:\n  - {name: a, kind: inference, model: qwen2-7b, prompt: 5, output: 5, iterations: "
       "6}\n",
       "bad.yaml:2:83", "jobs[0].iterations", "output is 5"},
      {"jobs:\n  - {name: a, kind: inference, model: qwen2-7b, prompt: 5}\n", "bad.yaml:2:5",
       "jobs[0]", "needs 'output'"},
      {"jobs:\n  - {name: a, kind: inference, model: qwen2-7b, prompt: 5, output: 5, kv_chunk: "
       "8}\n",
       "bad.yaml:2:81", "jobs[0].kv_chunk", "chunked"},
      {"jobs:\n  - {name: a, kind: training, model: bert-base, optimizer: lamb, iterations: 1}\n",
       "bad.yaml:2:60", "jobs[0].optimizer", "unknown optimizer"},
  };
  for (const BadCase& c : cases) {
    auto f = parse_jobs(c.text, "bad.yaml");
    ASSERT_FALSE(f.has_value()) << c.text;
    const std::string& msg = f.error().message();
    EXPECT_TRUE(msg.starts_with(std::string(c.where) + ": " + c.field + ": ")) << msg;
    EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
  }
}

TEST(JobsFileTest, DuplicateNamesAreRejected) {
  auto f = parse_jobs(R"(jobs:
  - {name: a, kind: scientific, kernel: lud, iterations: 3}
  - {name: a, kind: scientific, kernel: nw, iterations: 3}
)",
                      "dup.yaml");
  ASSERT_FALSE(f.has_value());
  EXPECT_TRUE(f.error().message().starts_with("dup.yaml:3:12: jobs[1].name: "))
      << f.error().message();
  EXPECT_NE(f.error().message().find("duplicate job name 'a'"), std::string::npos);
}

TEST(JobsFileTest, SizesTakeBinaryUnits) {
  auto f = parse_jobs(R"(jobs:
  - name: a
    kind: custom
    iterations: 2
    iteration_time: 1ms
    memory: {base: 1.5GiB, per_iteration: 512KiB, granule: 0B}
)",
                      "s.yaml");
  ASSERT_TRUE(f.has_value()) << f.error().message();
  EXPECT_EQ(f->jobs[0]->memory.base_bytes, 3 * kGiB / 2);
  EXPECT_DOUBLE_EQ(f->jobs[0]->memory.per_iteration, 512.0 * 1024);
  EXPECT_EQ(f->jobs[0]->memory.granule_bytes, 0);
}

TEST(JobsFileTest, TheExampleFileLoads) {
  auto f = load_jobs_file(std::string(TESSERA_SOURCE_DIR) + "/examples/mig/jobs.yaml");
  ASSERT_TRUE(f.has_value()) << f.error().message();
  EXPECT_GE(f->jobs.size(), 6U);
  bool kinds[4] = {};
  for (const auto& j : f->jobs) kinds[static_cast<int>(j->kind)] = true;
  EXPECT_TRUE(kinds[0] && kinds[1] && kinds[2] && kinds[3]);
}

TEST(JobsFileTest, MissingFileIsAnError) {
  EXPECT_FALSE(load_jobs_file("/nonexistent/jobs.yaml").has_value());
}

}  // namespace
}  // namespace tessera::mig
