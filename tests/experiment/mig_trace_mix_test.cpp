#include "tessera/experiment/mig_trace_mix.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tessera/experiment/data_dir.hpp"
#include "tessera/mig/runtime/jobs_file.hpp"

namespace tessera::experiment {
namespace {

// The checkout's data directory for the tests that read the real traces; restored afterwards.
class TraceMix : public ::testing::Test {
 protected:
  void SetUp() override { set_data_dir(TESSERA_SHARED_DATA_DIR); }
  void TearDown() override {
    set_data_dir("");
    if (!scratch_.empty()) std::filesystem::remove_all(scratch_);
  }

  // A data directory with these two trace files instead of the real ones.
  void use_files(const std::string& philly, const std::string& openb) {
    scratch_ = std::filesystem::temp_directory_path() /
               fmt::format("tessera_trace_mix_test_{}", ::getpid());
    const auto traces = scratch_ / "cluster_traces";
    std::filesystem::create_directories(traces / "philly_derived");
    std::filesystem::create_directories(traces / "alibaba_gpu_v2023" / "csv");
    std::ofstream(traces / "philly_derived" / "philly_runtime.csv") << philly;
    std::ofstream(traces / "alibaba_gpu_v2023" / "csv" / "openb_pod_list_default.csv") << openb;
    set_data_dir(scratch_.string());
  }

  std::filesystem::path scratch_;
};

TEST_F(TraceMix, DrawsParseableTrainingJobsArrivingInTraceOrder) {
  auto text = trace_mix_text({.jobs = 12, .seed = 1, .gpu = "h100"});
  ASSERT_TRUE(text.has_value()) << text.error().message();
  auto jobs = mig::parse_jobs(*text, "trace mix");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  EXPECT_EQ(jobs->gpu, "h100");
  ASSERT_EQ(jobs->jobs.size(), 12U);
  EXPECT_EQ(jobs->jobs.front()->submit_time, 0);
  for (std::size_t i = 1; i < jobs->jobs.size(); ++i) {
    EXPECT_GE(jobs->jobs[i]->submit_time, jobs->jobs[i - 1]->submit_time) << i;
  }
  for (const auto& j : jobs->jobs) {
    EXPECT_EQ(j->kind, workload::JobKind::kTraining) << j->name;
    EXPECT_GE(j->iterations, 1) << j->name;
  }
  EXPECT_NE(text->find("philly_runtime.csv"), std::string::npos);
  EXPECT_NE(text->find("openb_pod_list_default.csv"), std::string::npos);
}

TEST_F(TraceMix, TheSeedDrawsTheMixAndTheSameSeedTheSameOne) {
  auto a = trace_mix_text({.jobs = 6, .seed = 1, .gpu = "a100-40gb"});
  auto b = trace_mix_text({.jobs = 6, .seed = 1, .gpu = "a100-40gb"});
  auto c = trace_mix_text({.jobs = 6, .seed = 2, .gpu = "a100-40gb"});
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
}

TEST_F(TraceMix, DurationsOverTwoHoursAndZeroAreNeverDrawn) {
  // Only one runtime qualifies: 600 s, so every job runs about 600 s on the whole GPU.
  use_files("runtime\n0.0\n600.0\n90000.0\n",
            "name,num_gpu,creation_time\np0,1,100\np1,2,150\np2,1,160\np3,1,400\n");
  auto text = trace_mix_text({.jobs = 3, .seed = 5, .gpu = "a100-40gb"});
  ASSERT_TRUE(text.has_value()) << text.error().message();
  auto jobs = mig::parse_jobs(*text, "trace mix");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  ASSERT_EQ(jobs->jobs.size(), 3U);
  // The single-GPU pods arrive at 100, 160 and 400 s: 0, 60 and 300 s after the first.
  EXPECT_EQ(jobs->jobs[1]->submit_time, core::seconds(60));
  EXPECT_EQ(jobs->jobs[2]->submit_time, core::seconds(300));
}

TEST_F(TraceMix, FilesWithWindowsLineEndingsRead) {
  use_files("runtime\r\n600.0\r\n", "name,num_gpu,creation_time\r\np0,1,100\r\np1,1,130\r\n");
  auto text = trace_mix_text({.jobs = 2, .seed = 1, .gpu = "a100-40gb"});
  ASSERT_TRUE(text.has_value()) << text.error().message();
  auto jobs = mig::parse_jobs(*text, "trace mix");
  ASSERT_TRUE(jobs.has_value()) << jobs.error().message();
  EXPECT_EQ(jobs->jobs[1]->submit_time, core::seconds(30));
}

TEST_F(TraceMix, AMalformedTraceIsAnErrorNamingTheFileAndLine) {
  use_files("runtime\n12.0\nabc\n", "name,num_gpu,creation_time\np0,1,100\n");
  auto bad = trace_mix_text({.jobs = 1, .seed = 1, .gpu = "a100-40gb"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("philly_runtime.csv:3: 'abc' is not a number"),
            std::string::npos)
      << bad.error().message();

  use_files("runtime\n12.0\n", "name,num_gpu,creation_time\np0,1\n");
  bad = trace_mix_text({.jobs = 1, .seed = 1, .gpu = "a100-40gb"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("Too few columns in line 2"), std::string::npos)
      << bad.error().message();
  EXPECT_NE(bad.error().message().find("openb_pod_list_default.csv"), std::string::npos)
      << bad.error().message();

  use_files("runtime\n12.0\n", "name,gpus,creation_time\np0,1,100\n");
  bad = trace_mix_text({.jobs = 1, .seed = 1, .gpu = "a100-40gb"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("Missing column \"num_gpu\""), std::string::npos)
      << bad.error().message();

  use_files("runtime\n12.0\n", "name,num_gpu,creation_time\np0,1,100\n");
  bad = trace_mix_text({.jobs = 2, .seed = 1, .gpu = "a100-40gb"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("needs 1 to 1 jobs; asked for 2"), std::string::npos)
      << bad.error().message();
}

}  // namespace
}  // namespace tessera::experiment
