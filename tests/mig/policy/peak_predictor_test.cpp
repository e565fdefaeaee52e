#include "tessera/mig/policy/peak_predictor.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/mig/policy/predictor_replay.hpp"
#include "tessera/workload/jobs/batch_job.hpp"

namespace tessera::mig {
namespace {

using workload::MemoryStep;
using workload::MemoryTrajectory;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;
constexpr std::int64_t kIterations = 1000;

// Feeds samples [0, until) and returns the prediction after each one.
std::vector<std::optional<PeakPrediction>> replay(PeakPredictor& p,
                                                  const std::vector<MemorySample>& samples,
                                                  std::size_t until) {
  std::vector<std::optional<PeakPrediction>> out;
  for (std::size_t i = 0; i < until && i < samples.size(); ++i) {
    p.add(samples[i].iteration, samples[i].requested, samples[i].reserved);
    out.push_back(p.predict());
  }
  return out;
}

PredictorOptions linear_only() {
  PredictorOptions o;
  o.linear_only = true;
  return o;
}

TEST(StudentTQuantileTest, MatchesTableValues) {
  // Two-sided critical values from standard t tables (e.g. NIST/SEMATECH e-Handbook, 1.3.6.7.2).
  struct Row {
    double p, df, t;
  };
  for (const Row& r :
       {Row{0.995, 1, 63.657}, Row{0.995, 2, 9.925}, Row{0.995, 3, 5.841}, Row{0.995, 5, 4.032},
        Row{0.995, 10, 3.169}, Row{0.995, 30, 2.750}, Row{0.975, 4, 2.776}, Row{0.975, 10, 2.228},
        Row{0.95, 20, 1.725}, Row{0.995, 1e6, 2.576}}) {
    EXPECT_NEAR(student_t_quantile(r.p, r.df), r.t, 1.5e-3 * r.t) << r.p << " df " << r.df;
  }
  EXPECT_NEAR(student_t_quantile(0.005, 10), -3.169, 5e-3);
  EXPECT_EQ(student_t_quantile(0.5, 7), 0);
  EXPECT_TRUE(std::isnan(student_t_quantile(1.0, 7)));
}

TEST(PeakPredictorTest, NeedsTwoSamplesAndIgnoresOlderIterations) {
  PeakPredictor p(100, {});
  EXPECT_FALSE(p.predict().has_value());
  p.add(3, kGiB, kGiB);
  EXPECT_FALSE(p.predict().has_value());
  p.add(3, 2 * kGiB, 2 * kGiB);  // repeated
  p.add(1, 2 * kGiB, 2 * kGiB);  // older
  EXPECT_FALSE(p.predict().has_value());
  p.add(4, kGiB, kGiB);
  ASSERT_TRUE(p.predict().has_value());
  EXPECT_EQ(p.predict()->samples, 2);
  EXPECT_EQ(p.predict()->peak_bytes, kGiB);
  EXPECT_FALSE(p.predict()->converged);
}

// The bounds are statistical: each trace is replayed under several noise seeds and the share
// of samples whose 99% bound falls below the true peak is checked, with how far below.
constexpr int kSeeds = 12;

// Each seed is drawn from two independent streams, so that what a test checks holds for the
// predictor and not for one random sequence: predictor_replay's (the seed's RandomStreams stream
// "mig/predictor-replay") and a core::RandomStream seeded with the seed itself, through the same
// noise model, workload::noisy_reading.
enum class Generator { kReplay, kRaw };
constexpr std::array<Generator, 2> kGenerators = {Generator::kReplay, Generator::kRaw};
constexpr int kRuns = kSeeds * static_cast<int>(kGenerators.size());

const char* name(Generator g) {
  return g == Generator::kReplay ? "replay stream" : "raw stream";
}

std::vector<MemorySample> samples_of(Generator g, const MemoryTrajectory& traj,
                                     std::int64_t iterations, double noise, std::uint64_t seed) {
  if (g == Generator::kReplay) return noisy_samples(traj, iterations, noise, seed);
  core::RandomStream rng(seed);
  std::vector<MemorySample> out;
  for (std::int64_t i = 0; i < iterations; ++i) {
    const double z = noise > 0 ? rng.normal(0, 1) : 0;
    const workload::MemoryReading m = workload::noisy_reading(traj, i, iterations, noise, z);
    out.push_back({.iteration = i, .requested = m.requested, .reserved = m.reserved});
  }
  return out;
}

// first_alarm_iteration under either generator.
std::int64_t first_alarm(Generator g, const MemoryTrajectory& traj, std::int64_t iterations,
                         std::vector<MemoryStep> declared, std::int64_t limit,
                         PredictorOptions options, double noise, std::uint64_t seed) {
  if (g == Generator::kReplay) {
    return first_alarm_iteration(traj, iterations, std::move(declared), limit, options, noise,
                                 seed);
  }
  PeakPredictor p(iterations, std::move(declared), options);
  for (const MemorySample& s : samples_of(g, traj, iterations, noise, seed)) {
    p.add(s.iteration, s.requested, s.reserved);
    const auto pred = p.predict();
    if (pred && pred->converged && pred->peak_bytes > limit) return s.iteration;
  }
  return -1;
}

struct Coverage {
  int below = 0;
  int total = 0;
  double worst = 1e9;  // smallest bound / truth
  void add(std::int64_t bound, std::int64_t truth) {
    const double r = static_cast<double>(bound) / static_cast<double>(truth);
    below += r < 1;
    ++total;
    worst = std::min(worst, r);
  }
  double share_below() const { return total ? static_cast<double>(below) / total : 1; }
};

TEST(PeakPredictorTest, LinearGrowthWithNoiseIsBoundedTightlyOnceItIsSignificant) {
  const MemoryTrajectory traj{.base_bytes = 4 * kGiB,
                              .per_iteration = 4.0 * kMiB,
                              .steps = {},
                              .reuse_start = 0.9,
                              .reuse_end = 0.9,
                              .granule_bytes = 2 * kMiB};
  const std::int64_t truth = traj.peak_reserved(kIterations);
  Coverage coverage;
  int tight = 0, late = 0;
  for (Generator g : kGenerators) {
    for (int seed = 1; seed <= kSeeds; ++seed) {
      const auto samples = samples_of(g, traj, kIterations, 0.005, seed);
      PeakPredictor p(kIterations, {});
      const auto preds = replay(p, samples, samples.size());
      // Until the slope is significant the history supports only the flat model, whose converged
      // bound is the current level, half the final peak here. The slope's t statistic grows as
      // n^1.5: 4 MiB per iteration against 0.5% noise (some 22 MiB) passes the slope test,
      // t_{1 - 0.01/1000, n-2}, near n = 22. Over 1000 seeds of each generator all but 3 runs saw
      // it by sample 40; in those a false jump (the detector's 1% per run) restarted the fit.
      std::size_t converged_at = preds.size();
      std::size_t growth_at = 0;  // after the last converged flat prediction in the first 200
      for (std::size_t i = 0; i < preds.size(); ++i) {
        if (!preds[i] || !preds[i]->converged) continue;
        converged_at = std::min(converged_at, i);
        // Near the end the largest sample seen can top the line's bound and the flat candidate
        // is reported; the coverage below counts those.
        if (i < 200 && preds[i]->model == GrowthModel::kFlat) growth_at = i + 1;
      }
      ASSERT_LT(converged_at, 100u) << name(g) << " seed " << seed << " never converged";
      ASSERT_LT(growth_at, 40u) << name(g) << " seed " << seed << " growth not seen";
      for (std::size_t i = std::max(growth_at, converged_at); i < preds.size(); ++i) {
        if (!preds[i]->converged) continue;  // only converged predictions are acted on
        coverage.add(preds[i]->peak_bytes, truth);
        if (i >= 200) {
          ++late;
          tight += preds[i]->peak_bytes <= truth * 1.05;
          ASSERT_NE(preds[i]->model, GrowthModel::kStaircase)
              << name(g) << " seed " << seed << " sample " << i;
        }
      }
    }
  }
  EXPECT_LE(coverage.share_below(), 0.01);
  // The rare miss comes soon after growth is seen, from a few dozen samples whose noise happens
  // to flatten the slope by 3 standard errors or more; it stays within 10%.
  EXPECT_GE(coverage.worst, 0.90);
  // Within 5% of the truth from 200 samples on, but for the rare history whose noise looks
  // curved enough for the quadratic model (whose interval is wider).
  EXPECT_GE(static_cast<double>(tight) / late, 0.95);
}

TEST(PeakPredictorTest, QuadraticGrowthIsCaughtWhereTheLinearFitFallsShort) {
  // Requested grows by 4 GiB over the run, quadratically.
  const MemoryTrajectory traj{.base_bytes = 4 * kGiB,
                              .per_iteration_squared = 4.0 * kGiB / (999.0 * 999.0),
                              .steps = {},
                              .granule_bytes = 2 * kMiB};
  const std::int64_t truth = traj.peak_reserved(kIterations);
  int below = 0;
  for (Generator g : kGenerators) {
    for (int seed = 1; seed <= kSeeds; ++seed) {
      const auto samples = samples_of(g, traj, kIterations, 0.002, seed);
      PeakPredictor full(kIterations, {});
      PeakPredictor paper(kIterations, {}, linear_only());
      const auto ours = replay(full, samples, 300);
      const auto theirs = replay(paper, samples, 300);
      EXPECT_LT(theirs.back()->peak_bytes, truth) << name(g) << " seed " << seed;
      // A 99% bound: over 1000 seeds of each generator, 0.4% of runs fell below the truth, by
      // 0.6% at most.
      below += ours.back()->peak_bytes < truth;
      EXPECT_GE(ours.back()->peak_bytes, truth * 0.99) << name(g) << " seed " << seed;
      EXPECT_LE(ours.back()->peak_bytes, truth * 1.25) << name(g) << " seed " << seed;
      EXPECT_EQ(ours.back()->model, GrowthModel::kQuadratic) << name(g) << " seed " << seed;
      EXPECT_TRUE(ours.back()->converged) << name(g) << " seed " << seed;
    }
  }
  EXPECT_LE(below, kRuns / 12);
}

TEST(PeakPredictorTest, StaircaseIsExtrapolatedAfterTheSecondJump) {
  // Flat for 200 iterations, then 512 MiB more every 50 (a paged cache growing in blocks).
  MemoryTrajectory traj{.base_bytes = 4 * kGiB, .steps = {}, .granule_bytes = 2 * kMiB};
  for (std::int64_t it = 200; it < kIterations; it += 50) traj.steps.push_back({it, 512 * kMiB});
  const std::int64_t truth = traj.peak_reserved(kIterations);
  ASSERT_EQ(truth, 12 * kGiB);
  Coverage coverage;
  for (Generator g : kGenerators) {
    for (int seed = 1; seed <= kSeeds; ++seed) {
      const auto samples = samples_of(g, traj, kIterations, 0.002, seed);
      PeakPredictor full(kIterations, {});
      PeakPredictor paper(kIterations, {}, linear_only());
      const auto ours = replay(full, samples, samples.size());
      const auto theirs = replay(paper, samples, samples.size());
      for (std::size_t i = 250; i < ours.size(); ++i) coverage.add(ours[i]->peak_bytes, truth);
      EXPECT_EQ(ours[270]->model, GrowthModel::kStaircase) << name(g) << " seed " << seed;
      EXPECT_LE(ours[400]->peak_bytes, truth * 1.1) << name(g) << " seed " << seed;
      // The paper's linear fit would have missed it after the second jump.
      EXPECT_LT(theirs[250]->peak_bytes, truth) << "seed " << seed;
      EXPECT_LT(theirs[270]->peak_bytes, truth) << "seed " << seed;
      // Before the second jump there is nothing to extrapolate from.
      EXPECT_LT(ours[240]->peak_bytes, truth) << "seed " << seed;
    }
  }
  EXPECT_LE(coverage.share_below(), 0.01);
  // Over 1000 seeds of each generator: 0.2% of samples below, the worst by 1.1%.
  EXPECT_GE(coverage.worst, 0.98);
}

TEST(PeakPredictorTest, DeclaredJumpIsCoveredFromTheFirstSamples) {
  const MemoryStep step{500, 3 * kGiB};
  const MemoryTrajectory traj{.base_bytes = 4 * kGiB, .steps = {step}};
  const std::int64_t truth = traj.peak_reserved(kIterations);
  const auto samples = noisy_samples(traj, kIterations, 0, 0);
  PeakPredictor p(kIterations, {step});
  const auto preds = replay(p, samples, samples.size());
  for (std::size_t i = 1; i < preds.size(); ++i) {
    ASSERT_GE(preds[i]->peak_bytes, truth) << "sample " << i;
    ASSERT_LE(preds[i]->peak_bytes, truth * 1.01) << "sample " << i;
  }
}

TEST(PeakPredictorTest, UndeclaredSingleJumpIsNotForeseenButIsFitAfterwards) {
  // Documented limitation: one jump out of a flat history cannot be seen coming.
  const MemoryTrajectory traj{.base_bytes = 4 * kGiB, .steps = {{500, 3 * kGiB}}};
  const std::int64_t truth = traj.peak_reserved(kIterations);
  const auto samples = noisy_samples(traj, kIterations, 0.002, 3);
  PeakPredictor p(kIterations, {});
  const auto preds = replay(p, samples, samples.size());
  EXPECT_LT(preds[499]->peak_bytes, 4.2 * kGiB);  // still at the flat level
  EXPECT_TRUE(preds[499]->converged);
  // After the jump, the new level is fit, and the single jump is not extrapolated.
  for (std::size_t i = 500; i < preds.size(); ++i) {
    ASSERT_GE(preds[i]->peak_bytes, truth * 0.99) << "sample " << i;
  }
  EXPECT_LE(preds[600]->peak_bytes, truth * 1.05);
  EXPECT_NE(preds[600]->model, GrowthModel::kStaircase);
}

TEST(PeakPredictorTest, ConvergesOnASteadyTraceButNotWhileTheSlopeKeepsChanging) {
  const MemoryTrajectory steady{.base_bytes = 4 * kGiB, .per_iteration = 2.0 * kMiB, .steps = {}};
  const auto samples = noisy_samples(steady, kIterations, 0.002, 5);
  PeakPredictor a(kIterations, {});
  EXPECT_TRUE(replay(a, samples, 50).back()->converged);

  // Reserved memory doubling every 10 iterations: every new sample moves the extrapolation by
  // more than 2%. (A slower drift, under 2% a sample, does count as converged: CONVERGE says
  // the prediction is stable, not that it is right.)
  PeakPredictor b(kIterations, {});
  for (std::int64_t i = 0; i < 60; ++i) {
    const auto bytes = static_cast<std::int64_t>(kGiB * std::exp2(static_cast<double>(i) / 10));
    b.add(i, bytes, bytes);
    ASSERT_FALSE(b.predict().has_value() && b.predict()->converged) << "sample " << i;
  }
}

TEST(PeakPredictorTest, SameInputSameOutput) {
  MemoryTrajectory traj{.base_bytes = 3 * kGiB, .per_iteration = 1.0 * kMiB, .steps = {}};
  for (std::int64_t it = 100; it < kIterations; it += 100) traj.steps.push_back({it, 256 * kMiB});
  const auto samples = noisy_samples(traj, kIterations, 0.01, 99);
  EXPECT_EQ(samples.size(), noisy_samples(traj, kIterations, 0.01, 99).size());
  PeakPredictor a(kIterations, {{700, kGiB}});
  PeakPredictor b(kIterations, {{700, kGiB}});
  const auto pa = replay(a, samples, samples.size());
  const auto pb = replay(b, noisy_samples(traj, kIterations, 0.01, 99), samples.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    ASSERT_EQ(pa[i].has_value(), pb[i].has_value());
    if (!pa[i]) continue;
    ASSERT_EQ(pa[i]->peak_bytes, pb[i]->peak_bytes);
    ASSERT_EQ(pa[i]->point_bytes, pb[i]->point_bytes);
    ASSERT_EQ(pa[i]->model, pb[i]->model);
    ASSERT_EQ(pa[i]->converged, pb[i]->converged);
  }
}

TEST(PredictorReplayTest, AlarmComesBeforeTheOutOfMemoryIteration) {
  const MemoryTrajectory linear{.base_bytes = 4 * kGiB, .per_iteration = 8.0 * kMiB, .steps = {}};
  const std::int64_t limit = 10 * kGiB;
  const std::int64_t oom = linear.first_iteration_above(limit, kIterations);
  ASSERT_GT(oom, 0);
  const std::int64_t alarm = first_alarm_iteration(linear, kIterations, {}, limit, {}, 0.005, 1);
  EXPECT_GE(alarm, 0);
  EXPECT_LT(alarm, oom / 10);
  // A job that stays below the limit raises no alarm.
  EXPECT_EQ(first_alarm_iteration(linear, kIterations, {}, 20 * kGiB, {}, 0.005, 1), -1);
  // A declared step is acted on as soon as the prediction converges.
  const MemoryTrajectory stepped{.base_bytes = 4 * kGiB, .steps = {{800, 8 * kGiB}}};
  EXPECT_LT(first_alarm_iteration(stepped, kIterations, {{800, 8 * kGiB}}, limit, {}, 0, 1), 10);
  // Undeclared, it is seen only once it has happened, when the prediction settles again.
  EXPECT_GE(first_alarm_iteration(stepped, kIterations, {}, limit, {}, 0, 1), 800);
}

// Jobs that fit, replayed with the simulated device's 1% sample noise: no early restart.
TEST(PredictorReplayTest, FlatNoisyJobNeverTriggers) {
  // Flat at 60% of a 10 GiB slice, and the simulator's hotspot case: flat 3.49 GiB in a 5 GiB
  // slice, which the unselected linear fit predicted at 7.0 GiB after 34 samples.
  const MemoryTrajectory flat{.base_bytes = 6 * kGiB, .steps = {}, .granule_bytes = 2 * kMiB};
  const MemoryTrajectory hotspot{.base_bytes = 3574 * kMiB, .steps = {}, .granule_bytes = 2 * kMiB};
  for (Generator g : kGenerators) {
    for (int seed = 1; seed <= kSeeds; ++seed) {
      EXPECT_EQ(first_alarm(g, flat, kIterations, {}, 10 * kGiB, {}, 0.01, seed), -1)
          << name(g) << " seed " << seed;
      EXPECT_EQ(first_alarm(g, hotspot, kIterations, {}, 5 * kGiB, {}, 0.01, seed), -1)
          << name(g) << " seed " << seed;
    }
  }
}

TEST(PredictorReplayTest, FlatHistoryIsBoundedByItsLevelNotByAnExtrapolatedLine) {
  const MemoryTrajectory flat{.base_bytes = 6 * kGiB, .steps = {}, .granule_bytes = 2 * kMiB};
  int paper_wider = 0;
  for (Generator g : kGenerators) {
    for (int seed = 1; seed <= kSeeds; ++seed) {
      const auto samples = samples_of(g, flat, kIterations, 0.01, seed);
      PeakPredictor ours(kIterations, {});
      PeakPredictor paper(kIterations, {}, linear_only());
      const auto a = replay(ours, samples, 34);
      const auto b = replay(paper, samples, 34);
      // 1% noise: the level's 99% bound is some 3 standard deviations above it.
      EXPECT_LE(a.back()->peak_bytes, flat.base_bytes * 1.05) << name(g) << " seed " << seed;
      EXPECT_EQ(a.back()->model, GrowthModel::kFlat) << name(g) << " seed " << seed;
      paper_wider += b.back()->peak_bytes > flat.base_bytes * 1.10;
    }
  }
  // The paper's line, extrapolated 30 times past its history, is far wider for most seeds.
  EXPECT_GE(paper_wider, kRuns / 2);
}

TEST(PredictorReplayTest, LinearJobEndingAt80PercentOfTheSliceNeverTriggers) {
  const MemoryTrajectory linear{.base_bytes = 4 * kGiB,
                                .per_iteration = 4.0 * kGiB / (kIterations - 1),
                                .steps = {},
                                .granule_bytes = 2 * kMiB};
  const std::int64_t limit = 10 * kGiB;
  ASSERT_EQ(linear.first_iteration_above(limit, kIterations), -1);
  PredictorOptions stable_only;
  stable_only.converge_precision = 0;
  int alarms_without_precision = 0;
  for (Generator g : kGenerators) {
    for (int seed = 1; seed <= kSeeds; ++seed) {
      EXPECT_EQ(first_alarm(g, linear, kIterations, {}, limit, {}, 0.01, seed), -1)
          << name(g) << " seed " << seed;
      alarms_without_precision +=
          first_alarm(g, linear, kIterations, {}, limit, stable_only, 0.01, seed) >= 0;
    }
  }
  // CONVERGE without the precision rule trusts the wide, stable bound for some seeds: the rule is
  // what keeps this job on its slice, not the slope test.
  EXPECT_GT(alarms_without_precision, 0);

  // Every converged prediction is within 10% of its point.
  PeakPredictor p(kIterations, {});
  for (const MemorySample& s : noisy_samples(linear, kIterations, 0.01, 1)) {
    p.add(s.iteration, s.requested, s.reserved);
    const auto pred = p.predict();
    if (pred && pred->converged) {
      ASSERT_LE(pred->peak_bytes - pred->point_bytes, 0.10 * pred->point_bytes);
    }
  }
}

TEST(PredictorReplayTest, FirstIterationWithoutOptimizerStateIsNotAnOutlier) {
  // A training job as the job files build it (bert-base, batch 32, Adam): iteration 0 lacks the
  // 1.23 GiB of optimizer state PyTorch creates at the first step, and the allocator's slack
  // shrinks over the run (reuse 0.85 to 0.90). Peak 4.54 GiB on a 5 GiB slice: it fits.
  const MemoryTrajectory training{.base_bytes = 2693 * kMiB,
                                  .steps = {{1, 1260 * kMiB}},
                                  .reuse_start = 0.85,
                                  .reuse_end = 0.90,
                                  .granule_bytes = 2 * kMiB};
  constexpr std::int64_t kRun = 200;
  const std::int64_t limit = 5 * kGiB;
  ASSERT_EQ(training.first_iteration_above(limit, kRun), -1);
  int alarms = 0, paper_alarms = 0;
  for (Generator g : kGenerators) {
    for (int seed = 1; seed <= kSeeds; ++seed) {
      alarms += first_alarm(g, training, kRun, {}, limit, {}, 0.01, seed) >= 0;
      paper_alarms += first_alarm(g, training, kRun, {}, limit, linear_only(), 0.01, seed) >= 0;
    }
  }
  // Before the look-back at the 17th sample finds the low first one, it widens the bounds: 2 of
  // 2000 runs (1000 seeds of each generator) alarmed, at samples 36 and 40.
  EXPECT_LE(alarms, kRuns / 12);
  // The paper's fit keeps the low first sample in its residuals, and its bound crosses the slice.
  EXPECT_GT(paper_alarms, 0);
}

TEST(PredictorReplayTest, SmallLevelShiftIsNotExtrapolatedAsAParabola) {
  // An LLM whose paged KV cache grows in chunks of 224 MiB every 256 tokens on a 15.5 GiB base
  // (as llm-mix.yaml's qwen-batch): each step is 1.4% of the level, under the jump detector's 2%
  // floor, so the fits see it. After a long flat run, one such step looks curved upward; a
  // parabola through it predicted 22-25 GiB for this job, which peaks near 16.5 GiB.
  MemoryTrajectory chunked{.base_bytes = 15872 * kMiB,
                           .steps = {},
                           .reuse_start = 0.95,
                           .reuse_end = 0.97,
                           .granule_bytes = 2 * kMiB};
  constexpr std::int64_t kRun = 1024;
  for (std::int64_t it = 1; it < kRun; it += 256) chunked.steps.push_back({it, 224 * kMiB});
  const std::int64_t limit = 20 * kGiB;
  ASSERT_EQ(chunked.first_iteration_above(limit, kRun), -1);
  int alarms = 0;
  for (Generator g : kGenerators) {
    for (int seed = 1; seed <= kSeeds; ++seed) {
      alarms += first_alarm(g, chunked, kRun, {}, limit, {}, 0.01, seed) >= 0;
    }
  }
  // Without the comparison with a single shift every seed alarmed. With it a parabola can still
  // fit the noise better by chance (42 of 2000 runs, 1000 seeds of each generator); a share of 1
  // in 6 is far above.
  EXPECT_LE(alarms, kRuns / 6);
}

// Jobs that do not fit a 10 GiB slice still raise their alarm well before running out of memory,
// for every seed.
TEST(PredictorReplayTest, GrowingJobsThatOverflowAlarmBeforeTheirOutOfMemoryIteration) {
  const std::int64_t limit = 10 * kGiB;
  const MemoryTrajectory linear{
      .base_bytes = 4 * kGiB, .per_iteration = 8.0 * kMiB, .steps = {}, .granule_bytes = 2 * kMiB};
  const MemoryTrajectory quadratic{.base_bytes = 4 * kGiB,
                                   .per_iteration_squared = 8.0 * kGiB / (999.0 * 999.0),
                                   .steps = {},
                                   .granule_bytes = 2 * kMiB};
  MemoryTrajectory staircase{.base_bytes = 4 * kGiB, .steps = {}, .granule_bytes = 2 * kMiB};
  for (std::int64_t it = 200; it < kIterations; it += 100) staircase.steps.push_back({it, kGiB});
  const MemoryTrajectory declared{
      .base_bytes = 4 * kGiB, .steps = {{600, 8 * kGiB}}, .granule_bytes = 2 * kMiB};
  struct Case {
    const char* name;
    const MemoryTrajectory& traj;
    std::vector<MemoryStep> declared;
    double within;  // the alarm comes before this share of the out-of-memory iteration
  };
  // Margins: the linear job's slope is significant within tens of samples; the quadratic one's
  // curvature after a few hundred; the staircase needs its second jump (at 300) and one more
  // settled level; a declared step is known from the start. Over 1000 seeds of each generator
  // the latest alarms came at 7%, 52%, 51% and 1% of the out-of-memory iteration.
  for (const Case& c : {Case{"linear", linear, {}, 0.25}, Case{"quadratic", quadratic, {}, 0.6},
                        Case{"staircase", staircase, {}, 0.6},
                        Case{"declared step", declared, declared.steps, 0.1}}) {
    const std::int64_t oom = c.traj.first_iteration_above(limit, kIterations);
    ASSERT_GT(oom, 0) << c.name;
    for (Generator g : kGenerators) {
      for (int seed = 1; seed <= kSeeds; ++seed) {
        const std::int64_t alarm =
            first_alarm(g, c.traj, kIterations, c.declared, limit, {}, 0.01, seed);
        EXPECT_GE(alarm, 0) << c.name << " " << name(g) << " seed " << seed;
        EXPECT_LT(static_cast<double>(alarm), c.within * static_cast<double>(oom))
            << c.name << " " << name(g) << " seed " << seed << " oom " << oom;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::mig
