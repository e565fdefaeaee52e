#include "tessera/daemon/daemon_metrics.hpp"

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <exception>
#include <mutex>
#include <utility>

namespace tessera::daemon {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

ClientMetric sample(std::vector<ClientMetric::Label> labels, MetricType type, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  if (type == MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  return m;
}

class Collector final : public prometheus::Collectable {
 public:
  std::vector<MetricFamily> Collect() const override {
    std::lock_guard lock(mutex_);
    return metric_families(snapshot_);
  }
  void set(MetricsSnapshot s) {
    std::lock_guard lock(mutex_);
    snapshot_ = std::move(s);
  }

 private:
  mutable std::mutex mutex_;
  MetricsSnapshot snapshot_;
};

}  // namespace

MetricsSnapshot snapshot_of(const TenantTable& table) {
  return {std::string(table.policy_name()),
          std::string(mechanism_name(table.mechanism())),
          table.rounds(),
          table.devices(),
          table.tenants(),
          table.reserves()};
}

std::vector<MetricFamily> metric_families(const MetricsSnapshot& s) {
  std::vector<MetricFamily> out;
  auto family = [&](const char* name, const char* help, MetricType type) -> MetricFamily& {
    out.push_back({name, help, type, {}});
    return out.back();
  };
  family("tessera_daemon_info", "The daemon's policy and mechanism", MetricType::Gauge)
      .metric.push_back(
          sample({{"mechanism", s.mechanism}, {"policy", s.policy}}, MetricType::Gauge, 1));
  family("tessera_daemon_policy_rounds_total", "Policy rounds run", MetricType::Counter)
      .metric.push_back(sample({}, MetricType::Counter, static_cast<double>(s.rounds)));
  family("tessera_daemon_tenants", "Registered tenants", MetricType::Gauge)
      .metric.push_back(sample({}, MetricType::Gauge, static_cast<double>(s.tenants.size())));
  MetricFamily& usable = family("tessera_daemon_device_usable_sms",
                                "SMs a policy may assign on each GPU", MetricType::Gauge);
  for (std::size_t d = 0; d < s.devices.size(); ++d) {
    usable.metric.push_back(
        sample({{"device", std::to_string(d)}}, MetricType::Gauge, s.devices[d].usable_sms));
  }
  if (!s.reserves.empty()) {
    MetricFamily& reserve = family("tessera_daemon_device_reserve_sms",
                                   "SMs priority-fill's reserve holds, following the served "
                                   "tenants' steps (--slo-guided)",
                                   MetricType::Gauge);
    for (std::size_t d = 0; d < s.reserves.size(); ++d) {
      reserve.metric.push_back(
          sample({{"device", std::to_string(d)}}, MetricType::Gauge, s.reserves[d]));
    }
  }

  struct PerTenant {
    const char* name;
    const char* help;
    MetricType type;
    double (*value)(const TenantView&, const MetricsSnapshot&);
    bool (*present)(const TenantView&);
  };
  static const PerTenant kPerTenant[] = {
      {"tessera_tenant_assigned_sms", "SMs of the partition assigned (0 while held)",
       MetricType::Gauge,
       [](const TenantView& t, const MetricsSnapshot& s) {
         if (t.assignment.sms == daemon_abi::kHoldSms) return 0.0;
         if (t.assignment.sms == daemon_abi::kWholeGpuSms) {
           return static_cast<double>(s.devices[static_cast<std::size_t>(t.device)].device_sms);
         }
         return static_cast<double>(t.assignment.sms);
       },
       nullptr},
      {"tessera_tenant_stream_priority",
       "Stream priority assigned, in levels above the least urgent (0: the default)",
       MetricType::Gauge,
       [](const TenantView& t, const MetricsSnapshot&) {
         return static_cast<double>(t.assignment.priority);
       },
       nullptr},
      {"tessera_tenant_observed_sms", "SMs of the green context its last launch ran in",
       MetricType::Gauge,
       [](const TenantView& t, const MetricsSnapshot&) {
         return static_cast<double>(t.routed_sms);
       },
       nullptr},
      {"tessera_tenant_has_work", "1 if the tenant launched within the daemon's --idle-after",
       MetricType::Gauge,
       [](const TenantView& t, const MetricsSnapshot&) { return t.has_work ? 1.0 : 0.0; }, nullptr},
      {"tessera_tenant_assignment_changes_total", "Partition changes the policy made",
       MetricType::Counter,
       [](const TenantView& t, const MetricsSnapshot&) {
         return static_cast<double>(t.assignment_changes);
       },
       nullptr},
      {"tessera_tenant_launches_total", "Kernel and graph launches its interposer saw",
       MetricType::Counter,
       [](const TenantView& t, const MetricsSnapshot&) { return static_cast<double>(t.launches); },
       nullptr},
      {"tessera_tenant_held_launches_total", "Launches that waited for the daemon to assign SMs",
       MetricType::Counter,
       [](const TenantView& t, const MetricsSnapshot&) {
         return static_cast<double>(t.held_launches);
       },
       nullptr},
      {"tessera_tenant_held_seconds_total", "Total time launches waited for SMs",
       MetricType::Counter,
       [](const TenantView& t, const MetricsSnapshot&) { return core::to_seconds(t.held); },
       nullptr},
      {"tessera_tenant_hold_timeouts_total",
       "Waits that reached the hold limit and went ahead on the whole GPU", MetricType::Counter,
       [](const TenantView& t, const MetricsSnapshot&) {
         return static_cast<double>(t.hold_timeouts);
       },
       nullptr},
      {"tessera_tenant_steps_total",
       "Graph launches (a serving engine's captured steps) timed on the GPU", MetricType::Counter,
       [](const TenantView& t, const MetricsSnapshot&) { return static_cast<double>(t.steps); },
       nullptr},
      {"tessera_tenant_last_step_seconds", "GPU time of the last timed graph launch",
       MetricType::Gauge,
       [](const TenantView& t, const MetricsSnapshot&) { return core::to_seconds(t.last_step); },
       [](const TenantView& t) { return t.steps > 0; }},
      {"tessera_tenant_memory_used_bytes", "Device memory the tenant's allocations hold",
       MetricType::Gauge,
       [](const TenantView& t, const MetricsSnapshot&) {
         return static_cast<double>(t.memory_used);
       },
       nullptr},
      {"tessera_tenant_memory_limit_bytes", "The tenant's device memory limit", MetricType::Gauge,
       [](const TenantView& t, const MetricsSnapshot&) {
         return static_cast<double>(t.memory_limit);
       },
       [](const TenantView& t) { return t.memory_limit > 0; }},
      {"tessera_tenant_memory_refused_total", "Allocations refused past the memory limit",
       MetricType::Counter,
       [](const TenantView& t, const MetricsSnapshot&) {
         return static_cast<double>(t.memory_refused);
       },
       nullptr},
  };
  for (const PerTenant& p : kPerTenant) {
    MetricFamily& f = family(p.name, p.help, p.type);
    for (const TenantView& t : s.tenants) {
      if (p.present != nullptr && !p.present(t)) continue;
      f.metric.push_back(sample({{"class", std::string(tenant_class_name(t.settings.tenant_class))},
                                 {"device", std::to_string(t.device)},
                                 {"tenant", t.name}},
                                p.type, p.value(t, s)));
    }
  }
  return out;
}

std::string exposition_text(const MetricsSnapshot& s) {
  return prometheus::TextSerializer().Serialize(metric_families(s));
}

struct DaemonMetrics::State {
  std::unique_ptr<prometheus::Exposer> exposer;
  std::shared_ptr<Collector> collector = std::make_shared<Collector>();
  core::Nanos period = 0;
  core::Nanos last = 0;
  std::size_t tenants = 0;
  bool first = true;
};

core::Result<std::unique_ptr<DaemonMetrics>> DaemonMetrics::serve(const std::string& address,
                                                                  core::Nanos period) {
  auto state = std::make_unique<State>();
  state->period = period;
  try {
    // Two threads: scrapes are rare and small.
    state->exposer = std::make_unique<prometheus::Exposer>(address, 2);
  } catch (const std::exception& e) {
    return core::failf(core::Domain::kIo, core::Code::kFailedPrecondition,
                       "--metrics {}: cannot serve metrics there ({})", address, e.what());
  }
  state->exposer->RegisterCollectable(state->collector);
  return std::unique_ptr<DaemonMetrics>(new DaemonMetrics(std::move(state)));
}

DaemonMetrics::DaemonMetrics(std::unique_ptr<State> state) : state_(std::move(state)) {}
DaemonMetrics::~DaemonMetrics() = default;

void DaemonMetrics::observe(const TenantTable& table, core::Nanos now) {
  State& s = *state_;
  if (!s.first && now - s.last < s.period && table.size() == s.tenants) return;
  s.first = false;
  s.last = now;
  s.tenants = table.size();
  s.collector->set(snapshot_of(table));
}

std::vector<int> DaemonMetrics::ports() const {
  return state_->exposer->GetListeningPorts();
}

}  // namespace tessera::daemon
