#include "tessera/validation/fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <nlopt.hpp>
#include <string_view>

#include "tessera/validation/predict.hpp"
#include "tessera/validation/split.hpp"

namespace tessera::validation {

namespace {

struct Option {
  std::string_view key;
  double lo;
  double hi;
  bool duration;
  void (*set)(sim::SimGpuOverrides&, double);
  double (*get)(const sim::SimGpuOptions&);
};

struct Group {
  std::string_view name;
  std::string_view category_prefix;  // the rows it is fitted on
  void (*prepare)(sim::SimGpuOverrides&);
  std::vector<Option> options;
};

core::Nanos whole_ns(double v) {
  return static_cast<core::Nanos>(std::llround(v));
}

// Bounds are the physically sensible range of each option, wide enough that no fit presses
// against them on the shared profiles.
const std::vector<Group>& groups() {
  static const std::vector<Group> kGroups{
      {"memory-bound kernels",
       "elementwise",
       [](sim::SimGpuOverrides&) {},
       {{"launch_overhead", 200, 8000, true,
         [](sim::SimGpuOverrides& o, double v) { o.launch_overhead = whole_ns(v); },
         [](const sim::SimGpuOptions& o) { return static_cast<double>(o.launch_overhead); }},
        {"elementwise_bandwidth_fraction", 0.2, 1, false,
         [](sim::SimGpuOverrides& o, double v) { o.elementwise_bandwidth_fraction = v; },
         [](const sim::SimGpuOptions& o) {
           return o.elementwise_bandwidth_fraction > 0 ? o.elementwise_bandwidth_fraction
                                                       : o.achievable_bandwidth_fraction;
         }},
        {"sm_bandwidth_multiple", 0.5, 16, false,
         [](sim::SimGpuOverrides& o, double v) { o.sm_bandwidth_multiple = v; },
         [](const sim::SimGpuOptions& o) { return o.sm_bandwidth_multiple; }}}},
      {"GEMM",
       "GEMM",
       [](sim::SimGpuOverrides& o) { o.gemm_tile_selection = true; },
       {{"achievable_bandwidth_fraction", 0.4, 1, false,
         [](sim::SimGpuOverrides& o, double v) { o.achievable_bandwidth_fraction = v; },
         [](const sim::SimGpuOptions& o) { return o.achievable_bandwidth_fraction; }},
        {"gemm_compute_fraction", 0.3, 1, false,
         [](sim::SimGpuOverrides& o, double v) { o.gemm_compute_fraction = v; },
         [](const sim::SimGpuOptions& o) { return o.gemm_compute_fraction; }},
        {"gemm_tile_knee", 0, 512, false,
         [](sim::SimGpuOverrides& o, double v) { o.gemm_tile_knee = v; },
         [](const sim::SimGpuOptions& o) { return o.gemm_tile_knee; }},
        {"gemm_fixed", 0, 20000, true,
         [](sim::SimGpuOverrides& o, double v) { o.gemm_fixed = whole_ns(v); },
         [](const sim::SimGpuOptions& o) { return static_cast<double>(o.gemm_fixed); }}}},
      {"attention",
       "attention, prefill",
       [](sim::SimGpuOverrides&) {},
       {{"attention_compute_fraction", 0.1, 1, false,
         [](sim::SimGpuOverrides& o, double v) { o.attention_compute_fraction = v; },
         [](const sim::SimGpuOptions& o) {
           return o.attention_compute_fraction > 0 ? o.attention_compute_fraction
                                                   : o.achievable_compute_fraction;
         }}}},
      {"collectives",
       "collective",
       [](sim::SimGpuOverrides&) {},
       {{"collective_latency", 0, 200000, true,
         [](sim::SimGpuOverrides& o, double v) { o.collective_latency = whole_ns(v); },
         [](const sim::SimGpuOptions& o) { return static_cast<double>(o.collective_latency); }},
        {"link_bandwidth_fraction", 0.1, 1, false,
         [](sim::SimGpuOverrides& o, double v) { o.link_bandwidth_fraction = v; },
         [](const sim::SimGpuOptions& o) { return o.link_bandwidth_fraction; }}}},
  };
  return kGroups;
}

// Mean over the rows of min(ln(simulated / measured)^2, 1): symmetric in over- and
// under-prediction, and capped so that a few rows the model cannot explain (a benchmark's
// outliers) do not steer the fit.
double loss(const std::vector<const Measurement*>& rows, const sim::SimGpuOverrides& overrides) {
  Predictor predictor(overrides, {}, false);
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
  sim::SimGpuOverrides base;
  int evaluations = 0;
  const FitProgress* progress;
  const std::string* gpu;
};

double objective(const std::vector<double>& x, std::vector<double>& /*gradient*/, void* data) {
  auto* o = static_cast<Objective*>(data);
  sim::SimGpuOverrides trial = o->base;
  for (std::size_t i = 0; i < x.size(); ++i) o->group->options[i].set(trial, x[i]);
  ++o->evaluations;
  if (*o->progress) (*o->progress)(*o->gpu, std::string(o->group->name), o->evaluations);
  return loss(*o->rows, trial);
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
    for (const Group& group : groups()) {
      std::vector<const Measurement*> mine;
      for (const Measurement* m : rows) {
        if (category(*m).starts_with(group.category_prefix)) mine.push_back(m);
      }
      if (mine.empty()) continue;
      group.prepare(g.overrides);
      const sim::SimGpuOptions current = sim::apply(sim::SimGpuOptions{}, g.overrides);
      std::vector<double> x;
      std::vector<double> lo;
      std::vector<double> hi;
      std::vector<double> step;
      for (const Option& o : group.options) {
        // A start on a bound (a latency of 0) would leave the simplex one side to search.
        const double margin = (o.hi - o.lo) / 20;
        x.push_back(std::clamp(o.get(current), o.lo + margin, o.hi - margin));
        lo.push_back(o.lo);
        hi.push_back(o.hi);
        step.push_back((o.hi - o.lo) / 10);
      }
      GroupFit gf;
      gf.group = std::string(group.name);
      gf.rows = mine.size();
      gf.loss_before = loss(mine, g.overrides);
      Objective obj{
          .rows = &mine, .group = &group, .base = g.overrides, .progress = &progress, .gpu = &gpu};
      nlopt::opt opt(nlopt::LN_NELDERMEAD, static_cast<unsigned>(x.size()));
      opt.set_lower_bounds(lo);
      opt.set_upper_bounds(hi);
      opt.set_initial_step(step);
      opt.set_min_objective(objective, &obj);
      opt.set_maxeval(kMaxFitEvaluations);
      opt.set_xtol_rel(1e-3);
      double best = 0;
      try {
        opt.optimize(x, best);
      } catch (const std::exception& e) {
        return core::failf(core::Domain::kSim, core::Code::kInternal,
                           "fitting {} on {}: NLopt stopped: {}", group.name, gpu, e.what());
      }
      for (std::size_t i = 0; i < x.size(); ++i) {
        const Option& o = group.options[i];
        o.set(g.overrides, x[i]);
        gf.values.push_back({.option = std::string(o.key),
                             .value = o.duration ? std::round(x[i]) : x[i],
                             .duration = o.duration});
      }
      gf.loss_after = loss(mine, g.overrides);
      gf.evaluations = obj.evaluations;
      g.groups.push_back(std::move(gf));
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
    for (const GroupFit& gf : g.groups) {
      out += fmt::format("  {} ({} rows, {} evaluations): loss {:.4f} -> {:.4f}\n", gf.group,
                         gf.rows, gf.evaluations, gf.loss_before, gf.loss_after);
      for (const FittedValue& v : gf.values) {
        out += fmt::format("    {:<30} {}\n", v.option, value(v));
        section += fmt::format("{}{}: {}", section.empty() ? "" : ", ", v.option, value(v));
      }
    }
    out += fmt::format("  as a scenario section: sim: {{{}}}\n", section);
  }
  return out;
}

}  // namespace tessera::validation
