#include "tessera/validation/fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <map>
#include <nlopt.hpp>
#include <string_view>

#include "tessera/core/try.hpp"
#include "tessera/validation/predict.hpp"
#include "tessera/validation/split.hpp"

namespace tessera::validation {

namespace {

// What a fit varies: the simulated GPU's options, and what the benchmarks add around the
// kernels (fitted beside the options whose rows they are in).
struct Trial {
  sim::SimGpuOverrides sim;
  HarnessCosts harness;
};

struct Option {
  std::string_view key;
  double lo;
  double hi;
  bool duration;
  void (*set)(Trial&, double);
  double (*get)(const sim::SimGpuOptions&, const HarnessCosts&);
};

struct Group {
  std::string_view name;
  bool (*fits_on)(const Measurement&);  // the rows it is fitted on
  void (*prepare)(sim::SimGpuOverrides&);
  std::vector<Option> options;
};

constexpr int kFitPasses = 2;

// The option that is the benchmarks' cost of a call timed from the host.
constexpr std::string_view kHostCall = "host_call";

bool is_gemm(const Measurement& m) {
  return category(m).starts_with("GEMM");
}

core::Nanos whole_ns(double v) {
  return static_cast<core::Nanos>(std::llround(v));
}

// Where the search for a bandwidth fraction starts: its value, or the achievable fraction while
// it is unset (0).
double fraction_or_achievable(double fraction, const sim::SimGpuOptions& o) {
  return fraction > 0 ? fraction : o.achievable_bandwidth_fraction;
}

// Bounds are the physically sensible range of each option, wide enough that no fit presses
// against them on the shared profiles.
const std::vector<Group>& groups() {
  static const std::vector<Group> kGroups{
      {"memory-bound kernels",
       [](const Measurement& m) { return category(m).starts_with("elementwise"); },
       [](sim::SimGpuOverrides&) {},
       {{"launch_overhead", 200, 8000, true,
         [](Trial& t, double v) { t.sim.launch_overhead = whole_ns(v); },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return static_cast<double>(o.launch_overhead);
         }},
        {"elementwise_bandwidth_fraction", 0.2, 1, false,
         [](Trial& t, double v) { t.sim.elementwise_bandwidth_fraction = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return fraction_or_achievable(o.elementwise_bandwidth_fraction, o);
         }},
        {"pointwise_bandwidth_fraction", 0.2, 1, false,
         [](Trial& t, double v) { t.sim.pointwise_bandwidth_fraction = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return fraction_or_achievable(o.pointwise_bandwidth_fraction, o);
         }},
        {"norm_bandwidth_fraction", 0.1, 1, false,
         [](Trial& t, double v) { t.sim.norm_bandwidth_fraction = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return fraction_or_achievable(o.norm_bandwidth_fraction, o);
         }},
        {"sm_bandwidth_multiple", 0.5, 16, false,
         [](Trial& t, double v) { t.sim.sm_bandwidth_multiple = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return o.sm_bandwidth_multiple;
         }}}},
      {"embedding gathers",
       [](const Measurement& m) { return category(m).starts_with("embedding"); },
       [](sim::SimGpuOverrides&) {},
       {{"gather_bandwidth_fraction", 0.02, 1, false,
         [](Trial& t, double v) { t.sim.gather_bandwidth_fraction = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return fraction_or_achievable(o.gather_bandwidth_fraction, o);
         }}}},
      {"GEMM",
       [](const Measurement& m) { return is_gemm(m) && !m.gemm_stream_k.value_or(false); },
       [](sim::SimGpuOverrides& o) { o.gemm_tile_selection = true; },
       {{"achievable_bandwidth_fraction", 0.4, 1, false,
         [](Trial& t, double v) { t.sim.achievable_bandwidth_fraction = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return o.achievable_bandwidth_fraction;
         }},
        {"gemm_compute_fraction", 0.3, 1, false,
         [](Trial& t, double v) { t.sim.gemm_compute_fraction = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) { return o.gemm_compute_fraction; }},
        {"gemm_tile_knee", 0, 512, false, [](Trial& t, double v) { t.sim.gemm_tile_knee = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) { return o.gemm_tile_knee; }},
        {"gemm_fixed", 0, 20000, true, [](Trial& t, double v) { t.sim.gemm_fixed = whole_ns(v); },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return static_cast<double>(o.gemm_fixed);
         }}}},
      // After the GEMM group, so that a start from the fit without Stream-K is available.
      {"GEMM, Stream-K library",
       [](const Measurement& m) { return is_gemm(m) && m.gemm_stream_k.value_or(false); },
       [](sim::SimGpuOverrides& o) { o.gemm_tile_selection = true; },
       {{"stream_k_compute_fraction", 0.3, 1, false,
         [](Trial& t, double v) { t.sim.stream_k_compute_fraction = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return o.stream_k_compute_fraction;
         }},
        {"stream_k_tile_knee", 0, 512, false,
         [](Trial& t, double v) { t.sim.stream_k_tile_knee = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) { return o.stream_k_tile_knee; }},
        {"stream_k_fixed", 0, 20000, true,
         [](Trial& t, double v) { t.sim.stream_k_fixed = whole_ns(v); },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return static_cast<double>(o.stream_k_fixed);
         }}}},
      // Attention's own fractions, and the host's part of a call that inference_sim's rows
      // hold (Measurement::host_timed_call), which would otherwise press both fractions down.
      {"attention",
       [](const Measurement& m) { return category(m).starts_with("attention"); },
       [](sim::SimGpuOverrides&) {},
       {{"attention_compute_fraction", 0.1, 1, false,
         [](Trial& t, double v) { t.sim.attention_compute_fraction = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return o.attention_compute_fraction > 0 ? o.attention_compute_fraction
                                                   : o.achievable_compute_fraction;
         }},
        {"attention_bandwidth_fraction", 0.4, 1, false,
         [](Trial& t, double v) { t.sim.attention_bandwidth_fraction = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return fraction_or_achievable(o.attention_bandwidth_fraction, o);
         }},
        {kHostCall, 0, 100000, true, [](Trial& t, double v) { t.harness.host_call = whole_ns(v); },
         [](const sim::SimGpuOptions&, const HarnessCosts& h) {
           return static_cast<double>(h.host_call);
         }}}},
      {"collectives",
       [](const Measurement& m) { return category(m).starts_with("collective"); },
       [](sim::SimGpuOverrides&) {},
       {{"collective_latency", 0, 200000, true,
         [](Trial& t, double v) { t.sim.collective_latency = whole_ns(v); },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return static_cast<double>(o.collective_latency);
         }},
        {"link_bandwidth_fraction", 0.1, 1, false,
         [](Trial& t, double v) { t.sim.link_bandwidth_fraction = v; },
         [](const sim::SimGpuOptions& o, const HarnessCosts&) {
           return o.link_bandwidth_fraction;
         }}}},
  };
  return kGroups;
}

// Mean over the rows of min(ln(simulated / measured)^2, 1): symmetric in over- and
// under-prediction, and capped so that a few rows the model cannot explain (a benchmark's
// outliers) do not steer the fit.
double loss(const std::vector<const Measurement*>& rows, const Trial& trial) {
  // A fit's rows are all of one GPU (fit() groups them so): the harness's costs are that GPU's.
  std::map<std::string, HarnessCosts> harness;
  if (!rows.empty()) harness.emplace(rows.front()->gpu, trial.harness);
  Predictor predictor(trial.sim, {}, false, {}, std::move(harness));
  double sum = 0;
  for (const Measurement* m : rows) {
    const auto ns = predictor.simulate_ns(*m);
    if (!ns || !(*ns > 0)) return 1e9;
    const double d = std::log(*ns / m->measured_ns);
    sum += std::min(d * d, 1.0);
  }
  return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
}

struct Objective {
  const std::vector<const Measurement*>* rows;
  const Group* group;
  Trial base;
  int evaluations = 0;
  const FitProgress* progress;
  const std::string* gpu;
};

double objective(const std::vector<double>& x, std::vector<double>& /*gradient*/, void* data) {
  auto* o = static_cast<Objective*>(data);
  Trial trial = o->base;
  for (std::size_t i = 0; i < x.size(); ++i) o->group->options[i].set(trial, x[i]);
  ++o->evaluations;
  if (*o->progress) (*o->progress)(*o->gpu, std::string(o->group->name), o->evaluations);
  return loss(*o->rows, trial);
}

// The serving engine's costs (workload/serving/engine_costs.hpp), fitted on step rows. A row's
// GPU time does not depend on them, so it is simulated once and the search is over the sum. The
// loss is the mean of min(|ln(simulated / measured)|, 1): long prefills hold a GPU-time gap that
// no per-iteration cost explains, and an absolute loss fits the typical row rather than those.
struct EngineOption {
  std::string_view key;
  core::Nanos workload::EngineCosts::*field;
  double hi;
};
constexpr std::array<EngineOption, 4> kEngineOptions{{
    {"step", &workload::EngineCosts::step, 50e6},
    {"prefill", &workload::EngineCosts::prefill, 50e6},
    {"per_worker", &workload::EngineCosts::per_worker, 20e6},
    {"per_sequence", &workload::EngineCosts::per_sequence, 5e6},
}};

workload::EngineCosts engine_from(const std::vector<double>& x) {
  workload::EngineCosts c;
  for (std::size_t i = 0; i < kEngineOptions.size(); ++i)
    c.*kEngineOptions[i].field = whole_ns(x[i]);
  return c;
}

struct EngineRow {
  const Measurement* m;
  double gpu_ns;
};

double engine_loss(const std::vector<EngineRow>& rows, const workload::EngineCosts& costs) {
  double sum = 0;
  for (const EngineRow& r : rows) {
    const double d = std::log((r.gpu_ns + Predictor::engine_ns(*r.m, costs)) / r.m->measured_ns);
    sum += std::min(std::abs(d), 1.0);
  }
  return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
}

struct EngineObjective {
  const std::vector<EngineRow>* rows;
  int evaluations = 0;
  const FitProgress* progress;
  const std::string* gpu;
};

double engine_objective(const std::vector<double>& x, std::vector<double>& /*gradient*/,
                        void* data) {
  auto* o = static_cast<EngineObjective*>(data);
  ++o->evaluations;
  if (*o->progress) (*o->progress)(*o->gpu, std::string(kEngineGroup), o->evaluations);
  return engine_loss(*o->rows, engine_from(x));
}

core::Result<std::vector<double>> minimise(nlopt::vfunc f, void* data, std::vector<double> x,
                                           const std::vector<double>& lo,
                                           const std::vector<double>& hi, std::string_view what) {
  std::vector<double> step;
  for (std::size_t i = 0; i < x.size(); ++i) {
    // A start on a bound (a latency of 0) would leave the simplex one side to search.
    const double margin = (hi[i] - lo[i]) / 20;
    x[i] = std::clamp(x[i], lo[i] + margin, hi[i] - margin);
    step.push_back((hi[i] - lo[i]) / 10);
  }
  nlopt::opt opt(nlopt::LN_NELDERMEAD, static_cast<unsigned>(x.size()));
  opt.set_lower_bounds(lo);
  opt.set_upper_bounds(hi);
  opt.set_initial_step(step);
  opt.set_min_objective(f, data);
  opt.set_maxeval(kMaxFitEvaluations);
  opt.set_xtol_rel(1e-3);
  double best = 0;
  try {
    opt.optimize(x, best);
  } catch (const std::exception& e) {
    return core::failf(core::Domain::kSim, core::Code::kInternal, "fitting {}: NLopt stopped: {}",
                       what, e.what());
  }
  return x;
}

// Fits the engine's costs on `gpu`'s step rows, their GPU time simulated with `overrides`.
core::Result<std::optional<GroupFit>> fit_engine(const std::string& gpu,
                                                 const std::vector<const Measurement*>& rows,
                                                 const sim::SimGpuOverrides& overrides,
                                                 workload::EngineCosts& costs,
                                                 const FitProgress& progress) {
  std::vector<EngineRow> steps;
  Predictor predictor(overrides, {}, false);
  for (const Measurement* m : rows) {
    if (m->kind != MeasuredKind::kStep) continue;
    TESSERA_ASSIGN_OR_RETURN(const double ns, predictor.simulate_ns(*m));
    steps.push_back({m, ns});
  }
  if (steps.empty()) return std::nullopt;
  GroupFit gf;
  gf.group = std::string(kEngineGroup);
  gf.rows = steps.size();
  gf.loss_before = engine_loss(steps, workload::kNoEngineCosts);
  EngineObjective obj{.rows = &steps, .progress = &progress, .gpu = &gpu};
  std::vector<double> x(kEngineOptions.size(), 0.0);
  std::vector<double> lo(kEngineOptions.size(), 0.0);
  std::vector<double> hi;
  for (const EngineOption& o : kEngineOptions) hi.push_back(o.hi);
  TESSERA_ASSIGN_OR_RETURN(
      x, minimise(engine_objective, &obj, x, lo, hi, fmt::format("{} on {}", kEngineGroup, gpu)));
  costs = engine_from(x);
  for (std::size_t i = 0; i < kEngineOptions.size(); ++i) {
    gf.values.push_back({.option = std::string(kEngineOptions[i].key),
                         .value = static_cast<double>(costs.*kEngineOptions[i].field),
                         .duration = true});
  }
  gf.loss_after = engine_loss(steps, costs);
  gf.evaluations = obj.evaluations;
  return gf;
}

// Fits `group`'s options on its rows, starting from and updating `g.overrides`. A later pass
// replaces the group's entry in `g.groups`, keeping its first loss and adding its evaluations.
core::Status fit_group(const Group& group, const std::vector<const Measurement*>& mine,
                       const FitProgress& progress, GpuFit& g) {
  group.prepare(g.overrides);
  Trial trial{.sim = g.overrides, .harness = g.harness.value_or(kNoHarnessCosts)};
  const sim::SimGpuOptions current = sim::apply(sim::SimGpuOptions{}, g.overrides);
  std::vector<double> x;
  std::vector<double> lo;
  std::vector<double> hi;
  for (const Option& o : group.options) {
    x.push_back(o.get(current, trial.harness));
    lo.push_back(o.lo);
    hi.push_back(o.hi);
  }
  const auto earlier = std::ranges::find(g.groups, group.name, &GroupFit::group);
  GroupFit gf;
  gf.group = std::string(group.name);
  gf.rows = mine.size();
  gf.loss_before = earlier != g.groups.end() ? earlier->loss_before : loss(mine, trial);
  Objective obj{
      .rows = &mine, .group = &group, .base = trial, .progress = &progress, .gpu = &g.gpu};
  TESSERA_ASSIGN_OR_RETURN(
      x, minimise(objective, &obj, x, lo, hi, fmt::format("{} on {}", group.name, g.gpu)));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const Option& o = group.options[i];
    o.set(trial, x[i]);
    gf.values.push_back({.option = std::string(o.key),
                         .value = o.duration ? std::round(x[i]) : x[i],
                         .duration = o.duration});
    if (o.key == kHostCall) g.harness = trial.harness;
  }
  g.overrides = trial.sim;
  gf.loss_after = loss(mine, trial);
  gf.evaluations = obj.evaluations;
  if (earlier != g.groups.end()) {
    gf.evaluations += earlier->evaluations;
    *earlier = std::move(gf);
  } else {
    g.groups.push_back(std::move(gf));
  }
  return {};
}

}  // namespace

core::Result<std::vector<GpuFit>> fit(const MeasurementSet& set, const FitProgress& progress) {
  // The rows to fit on, per GPU, that the simulator can rebuild and that are plausible.
  std::map<std::string, std::vector<const Measurement*>> by_gpu;
  Predictor screen;
  for (const Measurement& m : set.rows) {
    if (!fitted_on(m) || Predictor::unsupported(m) || screen.implausible(m)) continue;
    by_gpu[m.gpu].push_back(&m);
  }
  std::vector<GpuFit> out;
  for (const auto& [gpu, rows] : by_gpu) {
    GpuFit g;
    g.gpu = gpu;
    // The groups share options through the model (GEMMs pay the launch overhead fitted on the
    // memory-bound rows; the per-SM bandwidth cap those rows meet follows the achievable fraction
    // fitted on GEMMs), so the groups are fitted in turn twice, the second pass starting from the
    // first's values.
    std::vector<std::vector<const Measurement*>> group_rows;
    for (const Group& group : groups()) {
      auto& mine = group_rows.emplace_back();
      for (const Measurement* m : rows) {
        if (group.fits_on(*m)) mine.push_back(m);
      }
    }
    for (int pass = 0; pass < kFitPasses; ++pass) {
      for (std::size_t i = 0; i < groups().size(); ++i) {
        if (group_rows[i].empty()) continue;
        TESSERA_TRY(fit_group(groups()[i], group_rows[i], progress, g));
      }
    }
    workload::EngineCosts costs;
    TESSERA_ASSIGN_OR_RETURN(const std::optional<GroupFit> engine,
                             fit_engine(gpu, rows, g.overrides, costs, progress));
    if (engine) {
      g.engine = costs;
      g.groups.push_back(*engine);
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::string format_fit(const std::vector<GpuFit>& fits) {
  std::string out;
  const auto value = [](const FittedValue& v) {
    return v.duration ? fmt::format("{}ns", static_cast<long long>(v.value))
                      : fmt::format("{:.4g}", v.value);
  };
  for (const GpuFit& g : fits) {
    out += fmt::format("{}:\n", g.gpu);
    std::string section;
    std::string engine;
    for (const GroupFit& gf : g.groups) {
      out += fmt::format("  {} ({} rows, {} evaluations): loss {:.4f} -> {:.4f}\n", gf.group,
                         gf.rows, gf.evaluations, gf.loss_before, gf.loss_after);
      for (const FittedValue& v : gf.values) {
        out += fmt::format("    {:<30} {}\n", v.option, value(v));
        if (v.option == kHostCall) continue;
        std::string& into = gf.group == kEngineGroup ? engine : section;
        into += fmt::format("{}{}: {}", into.empty() ? "" : ", ", v.option, value(v));
      }
    }
    out += fmt::format("  as a scenario section: sim: {{{}}}\n", section);
    if (g.harness) {
      out += fmt::format(
          "  the benchmarks' host time per call (rows timed from the host; no scenario pays it): "
          "{}ns\n",
          g.harness->host_call);
    }
    if (!engine.empty())
      out += fmt::format("  as an inference tenant's key: engine: {{{}}}\n", engine);
  }
  return out;
}

}  // namespace tessera::validation
