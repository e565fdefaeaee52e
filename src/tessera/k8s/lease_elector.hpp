#pragma once
// Leader election over a coordination.k8s.io/v1 Lease, as client-go's leaderelection does, so
// that two extender replicas can run with one active. Each try reads the Lease: absent, it is
// created with this replica as holder; held by this replica, it is renewed; held by another, it
// is taken only once its holder has not renewed it for leaseDurationSeconds, as this replica
// measured on its own monotonic clock from when it last saw the record change (the holder's
// clock and its renewTime are never compared with ours, so clock skew between nodes does not
// matter). Every write carries the resourceVersion read, so of two replicas racing for it one
// gets 409 Conflict and stays a standby. A leader that cannot renew for renew_deadline stops
// leading.

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "tessera/core/clock.hpp"
#include "tessera/core/error.hpp"
#include "tessera/k8s/api_server_client.hpp"

namespace tessera::k8s {

struct LeaseOptions {
  std::string lease_namespace = "kube-system";
  std::string name = "tessera-extender";
  std::string identity;  // this replica: its pod name
  // client-go's defaults (kube-scheduler's leaderElection settings).
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
};

class LeaseElector {
 public:
  // `clock` measures lease expiry and the renew deadline; `on_change` is told each change of
  // leadership (true: this replica now leads).
  LeaseElector(ApiServerClient client, LeaseOptions options, const core::Clock& clock,
               std::function<void(bool leading)> on_change);

  // One try to acquire or renew. Returns whether this replica leads after it; an error when the
  // API server could not be asked (a leader that errs past renew_deadline is no longer one).
  core::Result<bool> try_acquire_or_renew();
  bool leading() const { return leading_.load(); }
  // The holder this replica last saw ("" when none).
  std::string holder() const;

  // Tries every retry_period until `stop()` (asked every 50 ms); gives the Lease up at the end
  // if it held it (holder cleared, so a standby takes over without waiting for expiry).
  void run(const std::function<bool()>& stop);

 private:
  core::Result<bool> attempt();
  core::Status release();
  void set_leading(bool leading);

  ApiServerClient client_;
  LeaseOptions options_;
  const core::Clock& clock_;
  std::function<void(bool)> on_change_;
  std::atomic<bool> leading_{false};
  // What this replica last saw of the Lease's spec, and when (its clock) it last changed.
  nlohmann::json observed_;
  core::Nanos observed_at_ = 0;
  core::Nanos renewed_at_ = 0;  // the last successful acquire or renew
  mutable std::mutex holder_mu_;
  std::string holder_;
};

}  // namespace tessera::k8s
