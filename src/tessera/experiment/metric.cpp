#include "tessera/experiment/metric.hpp"

#include <fmt/format.h>

#include "tessera/core/try.hpp"

namespace tessera::experiment {

namespace {

using core::Result;

core::Error missing(std::string message) {
  return core::Error(core::Domain::kScenario, core::Code::kNotFound, std::move(message));
}

Result<const metrics::ModeReport*> find_mode(const metrics::RunReport& report,
                                             std::string_view mode) {
  for (const auto& m : report.modes) {
    if (m.mode == mode) return &m;
  }
  return std::unexpected(missing(fmt::format("mode '{}' was not run", mode)));
}

Result<const metrics::TenantReport*> find_tenant(const metrics::ModeReport& mode,
                                                 std::string_view tenant) {
  for (const auto& t : mode.tenants) {
    if (t.name == tenant) return &t;
  }
  return std::unexpected(missing(fmt::format("no tenant '{}' in mode '{}'", tenant, mode.mode)));
}

Result<const metrics::InferenceSummary*> inference_of(const metrics::TenantReport& t,
                                                      std::string_view what) {
  if (!t.inference) {
    return std::unexpected(missing(
        fmt::format("{} applies to inference tenants; '{}' is a {} tenant", what, t.name, t.kind)));
  }
  return &*t.inference;
}

// A percentile over no requests is 0 in the summary; here it is missing, so that a policy under
// which nothing finished never looks like the fastest.
Result<double> statistic(const metrics::Percentiles& p, double value,
                         const metrics::TenantReport& t, std::string_view what) {
  if (p.count == 0) {
    return std::unexpected(
        missing(fmt::format("'{}' has no value: no request of '{}' got that far", what, t.name)));
  }
  return value;
}

double throughput(const metrics::TenantReport& t) {
  if (t.inference) return t.inference->output_tokens_per_s;
  return t.training ? t.training->samples_per_s : 0.0;
}

Result<double> normalized(const metrics::RunReport& report, const metrics::TenantReport& t) {
  auto alone_mode = find_mode(report, "exclusive");
  if (!alone_mode) {
    return std::unexpected(missing(
        "normalized throughput needs the exclusive mode (each tenant alone) in the same run"));
  }
  TESSERA_ASSIGN_OR_RETURN(const auto* alone, find_tenant(**alone_mode, t.name));
  const double reference = throughput(*alone);
  if (reference <= 0) {
    return std::unexpected(missing(fmt::format(
        "tenant '{}' did no work alone, so its throughput cannot be normalized; run longer",
        t.name)));
  }
  return throughput(t) / reference;
}

Result<double> e2e_p99(const metrics::TenantReport& t, std::string_view what) {
  TESSERA_ASSIGN_OR_RETURN(const auto* s, inference_of(t, what));
  return statistic(s->e2e_ms, s->e2e_ms.p99, t, what);
}

Result<double> tpot_p99(const metrics::TenantReport& t, std::string_view what) {
  TESSERA_ASSIGN_OR_RETURN(const auto* s, inference_of(t, what));
  return statistic(s->tpot_ms, s->tpot_ms.p99, t, what);
}

// `figure` (named `noun` in messages) of `t` over the same figure of its tenant under mode
// `reference` of the same run.
template <class Figure>
Result<double> relative_to(const metrics::RunReport& report, std::string_view reference,
                           const metrics::TenantReport& t, std::string_view what,
                           std::string_view noun, Figure figure) {
  auto reference_mode = find_mode(report, reference);
  if (!reference_mode) {
    return std::unexpected(
        missing(fmt::format("{} needs the {} mode{} in the same run", what, reference,
                            reference == "exclusive" ? " (each tenant alone)" : "")));
  }
  TESSERA_ASSIGN_OR_RETURN(const auto* other, find_tenant(**reference_mode, t.name));
  TESSERA_ASSIGN_OR_RETURN(const double base, figure(*other));
  TESSERA_ASSIGN_OR_RETURN(const double value, figure(t));
  if (base <= 0) {
    return std::unexpected(missing(fmt::format(
        "'{}' has a zero {} under {}, so no ratio can be formed", t.name, noun, reference)));
  }
  return value / base;
}

Result<double> tenant_value(const metrics::RunReport& report, const metrics::TenantReport& t,
                            const Metric& metric) {
  const std::string what = label(metric);
  switch (metric.quantity) {
    case Quantity::kTtftP99Ms: {
      TESSERA_ASSIGN_OR_RETURN(const auto* s, inference_of(t, what));
      return statistic(s->ttft_ms, s->ttft_ms.p99, t, what);
    }
    case Quantity::kTpotP99Ms: return tpot_p99(t, what);
    case Quantity::kE2eP99Ms: return e2e_p99(t, what);
    case Quantity::kE2eP99VsAlone:
      return relative_to(report, "exclusive", t, what, "e2e P99",
                         [&](const metrics::TenantReport& x) { return e2e_p99(x, what); });
    case Quantity::kTpotP99VsAlone:
      return relative_to(report, "exclusive", t, what, "TPOT P99",
                         [&](const metrics::TenantReport& x) { return tpot_p99(x, what); });
    case Quantity::kTtftMeanMs: {
      TESSERA_ASSIGN_OR_RETURN(const auto* s, inference_of(t, what));
      return statistic(s->ttft_ms, s->ttft_ms.mean, t, what);
    }
    case Quantity::kTpotMeanMs: {
      TESSERA_ASSIGN_OR_RETURN(const auto* s, inference_of(t, what));
      return statistic(s->tpot_ms, s->tpot_ms.mean, t, what);
    }
    case Quantity::kSloViolationPct: {
      TESSERA_ASSIGN_OR_RETURN(const auto* s, inference_of(t, what));
      if (t.slo.ttft <= 0 && t.slo.tpot <= 0) {
        return std::unexpected(
            missing(fmt::format("tenant '{}' has no SLO, so it cannot violate one", t.name)));
      }
      return s->arrived > 0 ? 100.0 * (1.0 - s->slo_attainment) : 0.0;
    }
    case Quantity::kThroughput: return throughput(t);
    case Quantity::kNormalizedThroughput: return normalized(report, t);
    case Quantity::kThroughputVsMps:
      return relative_to(
          report, "mps", t, what, "throughput",
          [](const metrics::TenantReport& x) -> Result<double> { return throughput(x); });
    default:
      return std::unexpected(core::Error(core::Domain::kScenario, core::Code::kInternal,
                                         fmt::format("{} is not a per-tenant figure", what)));
  }
}

}  // namespace

bool lower_is_better(const Metric& metric) {
  switch (metric.quantity) {
    case Quantity::kThroughput:
    case Quantity::kNormalizedThroughput:
    case Quantity::kThroughputVsMps:
    case Quantity::kAggregateNormalizedThroughput:
    case Quantity::kTrainingNormalizedThroughput: return false;
    case Quantity::kCounter: return metric.counter_lower_is_better;
    default: return true;
  }
}

std::string label(const Metric& metric) {
  const std::string who = metric.tenant.empty() ? "" : metric.tenant + " ";
  switch (metric.quantity) {
    case Quantity::kTtftP99Ms: return who + "ttft p99 ms";
    case Quantity::kTpotP99Ms: return who + "tpot p99 ms";
    case Quantity::kE2eP99Ms: return who + "e2e p99 ms";
    case Quantity::kE2eP99VsAlone: return who + "p99 x alone";
    case Quantity::kTpotP99VsAlone: return who + "tpot p99 x alone";
    case Quantity::kTtftMeanMs: return who + "ttft mean ms";
    case Quantity::kTpotMeanMs: return who + "tpot mean ms";
    case Quantity::kSloViolationPct: return who + "slo miss %";
    case Quantity::kThroughput: return who + "thr/s";
    case Quantity::kNormalizedThroughput: return who + "thr x alone";
    case Quantity::kThroughputVsMps: return who + "thr x mps";
    case Quantity::kAggregateNormalizedThroughput: return "sum thr x alone";
    case Quantity::kTrainingNormalizedThroughput: return "train thr x alone";
    case Quantity::kEnergyJ: return "energy J";
    case Quantity::kCounter: return metric.counter;
  }
  return "?";
}

Result<double> metric_value(const metrics::RunReport& report, const Metric& metric,
                            std::string_view mode) {
  TESSERA_ASSIGN_OR_RETURN(const auto* m, find_mode(report, mode));
  switch (metric.quantity) {
    case Quantity::kEnergyJ: return m->device.energy_joules;
    case Quantity::kCounter:
      for (const auto& [name, value] : m->counters) {
        if (name == metric.counter) return value;
      }
      return std::unexpected(
          missing(fmt::format("mode '{}' reports no counter '{}'", mode, metric.counter)));
    case Quantity::kAggregateNormalizedThroughput:
    case Quantity::kTrainingNormalizedThroughput: {
      const bool training_only = metric.quantity == Quantity::kTrainingNormalizedThroughput;
      double sum = 0;
      int counted = 0;
      for (const auto& t : m->tenants) {
        if (training_only && !t.training) continue;
        TESSERA_ASSIGN_OR_RETURN(const double v, normalized(report, t));
        sum += v;
        ++counted;
      }
      if (counted == 0) {
        return std::unexpected(missing(fmt::format("mode '{}' has no tenants to sum", mode)));
      }
      return sum;
    }
    default: {
      TESSERA_ASSIGN_OR_RETURN(const auto* t, find_tenant(*m, metric.tenant));
      return tenant_value(report, *t, metric);
    }
  }
}

}  // namespace tessera::experiment
