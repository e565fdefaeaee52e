#include "tessera/experiment/lithos_studies.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/core/try.hpp"
#include "tessera/gpu/policy/kernel_profiles.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::experiment {

namespace {

using core::Result;

// The sweep's sizes: a decode step over 16 sequences of 512 tokens and a 512-token prefill
// stand for a serving step; a choice of this study, not the paper's.
constexpr int kDecodeSequences = 16;
constexpr int kContextTokens = 512;

std::vector<workload::Kernel> distinct_kernels(const scenario::Scenario& s) {
  std::vector<workload::KernelSequence> sequences;
  for (const auto& t : s.tenants) {
    if (t.kind == scenario::TenantSpec::Kind::kInference) {
      const std::vector<int> contexts(kDecodeSequences, kContextTokens);
      sequences.push_back(workload::decode_step(t.inference.model, contexts));
      const std::vector<int> prompt{kContextTokens};
      sequences.push_back(workload::prefill_step(t.inference.model, prompt));
    } else {
      sequences.push_back(t.training.model.iteration(t.training.batch, t.training.precision));
    }
  }
  std::set<gpu::KernelKey> seen;
  std::vector<workload::Kernel> out;
  for (const auto& seq : sequences) {
    for (const auto& group : seq.groups) {
      for (const auto& k : group.kernels) {
        if (seen.insert(gpu::key_of(k)).second) out.push_back(k);
      }
    }
  }
  return out;
}

std::vector<int> tpc_counts(int total) {
  std::vector<int> out;
  for (int t = 1; t < total; t *= 2) out.push_back(t);
  out.push_back(total);
  return out;
}

}  // namespace

Result<metrics::ModeReport> held_out_sweep(const scenario::Scenario& s) {
  sim::Engine engine;
  TESSERA_ASSIGN_OR_RETURN(
      auto gpu, sim::SimGpu::create(engine, s.gpu, sim::options_for(s.gpu, s.sim_overrides)));
  const std::vector<int> counts = tpc_counts(s.gpu.tpcs);
  std::vector<device::StreamId> streams;
  for (int t : counts) {
    device::StreamConfig config;
    config.sms = device::SmMask::first(t * s.gpu.sms_per_tpc);
    TESSERA_ASSIGN_OR_RETURN(const auto id, gpu->create_stream(config));
    streams.push_back(id);
  }
  const std::vector<int> fit_tpcs{counts.front(), counts.back()};
  int kernels = 0, points = 0;
  double mean_sum = 0, worst = 0;
  for (const auto& k : distinct_kernels(s)) {
    std::vector<gpu::LatencySample> samples;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      core::Nanos latency = -1;
      TESSERA_TRY(gpu->submit(
          streams[i], workload::single_kernel(k), 0,
          [&latency](const device::SubmissionDone& d) { latency = d.finished - d.started; }));
      engine.run_until(core::kNever);
      if (latency < 0) {
        return core::failf(core::Domain::kScenario, core::Code::kInternal,
                           "kernel '{}' on {} TPCs never finished in the sweep", k.name, counts[i]);
      }
      samples.push_back({.tpcs = counts[i], .latency_ns = static_cast<double>(latency)});
    }
    auto err = gpu::held_out_error(samples, fit_tpcs);
    if (!err) continue;  // a kernel whose held-out points all took no time tells nothing
    ++kernels;
    points += err->points;
    mean_sum += err->mean_abs_pct;
    worst = std::max(worst, err->max_abs_pct);
  }
  if (kernels == 0) {
    return core::fail(core::Domain::kScenario, core::Code::kFailedPrecondition,
                      "the held-out sweep found no kernel to profile; the scenario needs a tenant");
  }
  metrics::ModeReport row;
  row.mode = std::string(kSweepRow);
  row.simulated = engine.now();
  row.device = gpu->stats();
  row.counters = {{"kernels_profiled", kernels},
                  {"held_out_points", points},
                  {"held_out_mean_err_pct", mean_sum / kernels},
                  {"held_out_max_err_pct", worst}};
  return row;
}

RunFn lithos_variants(std::vector<Variant> variants, bool sweep) {
  return [variants = std::move(variants), sweep](
             const scenario::Scenario& s,
             const scenario::RunOptions& options) -> Result<metrics::RunReport> {
    metrics::RunReport report;
    report.scenario = s.name;
    report.gpu = s.gpu.name;
    report.seed = s.seed;
    for (const auto& v : variants) {
      scenario::Scenario one = s;
      one.modes = {"lithos"};
      v.apply(one.mode_options.of<gpu::LithosOptions>("lithos"));
      TESSERA_ASSIGN_OR_RETURN(auto run, core::with_context(scenario::run_scenario(one, options),
                                                            fmt::format("variant '{}'", v.label)));
      run.modes.front().mode = v.label;
      report.modes.push_back(std::move(run.modes.front()));
    }
    if (sweep) {
      TESSERA_ASSIGN_OR_RETURN(auto row, held_out_sweep(s));
      report.modes.push_back(std::move(row));
    }
    return report;
  };
}

}  // namespace tessera::experiment
