#include "tessera/tenant/training_job.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/fakes/fake_device.hpp"
#include "support/fakes/manual_executor.hpp"
#include "tessera/gpu/modes/exclusive/exclusive.hpp"

namespace tessera::tenant {
namespace {

using ::testing::HasSubstr;

// A toy model whose iteration is two kernels of 1000 x batch FLOPs: 2000 x batch ns on the fake.
workload::TrainingModel toy_model() {
  return workload::TrainingModel{.name = "toy",
                                 .description = "two kernels",
                                 .default_batch = 4,
                                 .iteration =
                                     [](int batch, workload::Precision) {
                                       workload::KernelSequence seq;
                                       workload::KernelGroup g;
                                       workload::Kernel k;
                                       k.name = "toy";
                                       k.flops_per_block = 1000.0 * batch;
                                       g.kernels = {k, k};
                                       seq.groups.push_back(g);
                                       return seq;
                                     },
                                 .parameters = 1};
}

struct Job {
  test::ManualExecutor exec;
  test::FakeDevice dev{exec, test::fake_spec()};
  gpu::ExclusiveMode mode;
  metrics::Timeline timeline;
  std::unique_ptr<TrainingJob> job;

  explicit Job(int batch, gpu::TenantId id = 0, workload::TrainingModel model = toy_model()) {
    const std::vector<gpu::TenantInfo> infos{{.id = 0, .name = "train"}};
    EXPECT_TRUE(mode.attach(dev, infos));
    const int track = timeline.add_track(timeline.add_process("test"), "train");
    job = std::make_unique<TrainingJob>(
        id, TrainingConfig{.name = "train", .model = std::move(model), .batch = batch}, mode, exec,
        &timeline, track);
  }
};

TEST(TrainingJob, LoopsBackToBackUntilTheRunStops) {
  Job j(/*batch=*/0);  // the model's default, 4: 8000 ns per iteration
  EXPECT_EQ(j.job->batch(), 4);
  j.job->start();
  j.exec.run_until(3 * 8000 + 4000);
  const auto& it = j.job->iterations();
  ASSERT_EQ(it.size(), 3u);
  for (std::size_t i = 0; i < it.size(); ++i) {
    EXPECT_EQ(it[i].start, static_cast<core::Nanos>(i) * 8000);
    EXPECT_EQ(it[i].end, static_cast<core::Nanos>(i + 1) * 8000);
  }
  EXPECT_FALSE(j.job->failure());
  // The fourth is in flight: the job never idles the GPU between iterations.
  EXPECT_EQ(j.dev.calls_of(test::CallKind::kSubmit).size(), 4u);
  std::size_t spans = 0;
  const auto trace = j.timeline.to_json();
  for (const auto& e : trace["traceEvents"]) {
    spans += e.value("name", "") == "iteration" ? 1 : 0;
  }
  EXPECT_EQ(spans, 3u);
}

TEST(TrainingJob, ExplicitBatchSizesTheIteration) {
  Job j(/*batch=*/2);
  j.job->start();
  j.exec.run_until(4000);
  ASSERT_EQ(j.job->iterations().size(), 1u);
  EXPECT_EQ(j.job->iterations()[0].end, 4000);
}

TEST(TrainingJob, RecordsARefusedSubmission) {
  Job j(0, /*id=*/5);
  j.job->start();
  ASSERT_TRUE(j.job->failure());
  EXPECT_THAT(j.job->failure()->message(), HasSubstr("training job 'train'"));
  EXPECT_THAT(j.job->failure()->message(), HasSubstr("no tenant with id 5"));
  EXPECT_TRUE(j.job->iterations().empty());
}

TEST(TrainingJob, RejectsANegativeBatchAndAMissingModel) {
  Job negative(-1);
  negative.job->start();
  ASSERT_TRUE(negative.job->failure());
  EXPECT_THAT(negative.job->failure()->message(), HasSubstr("batch -1"));

  auto model = toy_model();
  model.iteration = nullptr;
  Job missing(1, 0, model);
  missing.job->start();
  ASSERT_TRUE(missing.job->failure());
  EXPECT_EQ(missing.exec.pending(), 0u);
}

TEST(TrainingJob, RejectsPersistentGridsForNoSms) {
  test::ManualExecutor exec;
  test::FakeDevice dev{exec, test::fake_spec()};
  gpu::ExclusiveMode mode;
  const std::vector<gpu::TenantInfo> infos{{.id = 0, .name = "train"}};
  ASSERT_TRUE(mode.attach(dev, infos));
  TrainingJob job(0,
                  TrainingConfig{.name = "train",
                                 .model = toy_model(),
                                 .batch = 1,
                                 .persistent = PersistentGemms{.sms = 0, .sm = dev.spec().sm}},
                  mode, exec);
  job.start();
  ASSERT_TRUE(job.failure());
  EXPECT_THAT(job.failure()->message(), HasSubstr("at least 1 SM"));
  EXPECT_EQ(exec.pending(), 0u);
}

}  // namespace
}  // namespace tessera::tenant
