#pragma once
// tesserad's Prometheus endpoint: prometheus-cpp's Exposer serves /metrics on its own threads,
// from a snapshot the daemon's thread takes of the tenant table after a policy round (at most
// every `period`, and whenever the tenants change), so a scrape never touches the table.
//
// Families (labels tenant, device, class on the per-tenant ones):
//   tessera_daemon_info{policy,mechanism}       1
//   tessera_daemon_policy_rounds_total          policy rounds run
//   tessera_daemon_tenants                      registered tenants
//   tessera_daemon_device_usable_sms{device}    SMs a policy may assign on each GPU
//   tessera_daemon_device_reserve_sms{device}   priority-fill's reserve (only with --slo-guided)
//   tessera_tenant_assigned_sms                 the partition assigned (0 while held, the
//                                               device's SMs for the whole GPU)
//   tessera_tenant_stream_priority              stream priority assigned (levels above the least)
//   tessera_tenant_observed_sms                 SMs of the green context its last launch ran in
//   tessera_tenant_has_work                     1 if it launched within --idle-after
//   tessera_tenant_assignment_changes_total     partition changes the policy made
//   tessera_tenant_launches_total               launches its interposer saw
//   tessera_tenant_held_launches_total          launches that waited for SMs
//   tessera_tenant_held_seconds_total           their total wait
//   tessera_tenant_hold_timeouts_total          waits that reached the hold limit
//   tessera_tenant_steps_total                  graph launches timed on the GPU (its steps)
//   tessera_tenant_last_step_seconds            the last one's GPU time (once there is one)
//   tessera_tenant_memory_used_bytes            device memory its allocations hold
//   tessera_tenant_memory_limit_bytes           its limit (only for tenants with one)
//   tessera_tenant_memory_refused_total         allocations refused past the limit

#include <memory>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/daemon/tenant_table.hpp"

namespace prometheus {
struct MetricFamily;
}

namespace tessera::daemon {

// What a scrape reports.
struct MetricsSnapshot {
  std::string policy;
  std::string mechanism;
  std::uint64_t rounds = 0;
  std::vector<gpu::PartitionGrid> devices;
  std::vector<TenantView> tenants;
  std::vector<int> reserves;  // per device, under --slo-guided; empty otherwise
};
MetricsSnapshot snapshot_of(const TenantTable& table);
std::vector<prometheus::MetricFamily> metric_families(const MetricsSnapshot& s);
// The families in Prometheus' text format, as /metrics serves them.
std::string exposition_text(const MetricsSnapshot& s);

class DaemonMetrics {
 public:
  // Serves /metrics on `address` (HOST:PORT; port 0 picks a free one). Fails naming the address
  // when it cannot listen there.
  static core::Result<std::unique_ptr<DaemonMetrics>> serve(const std::string& address,
                                                            core::Nanos period = core::millis(100));
  ~DaemonMetrics();
  DaemonMetrics(const DaemonMetrics&) = delete;
  DaemonMetrics& operator=(const DaemonMetrics&) = delete;

  // Called by the server after each round, on its thread.
  void observe(const TenantTable& table, core::Nanos now);
  std::vector<int> ports() const;

 private:
  struct State;
  explicit DaemonMetrics(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tessera::daemon
