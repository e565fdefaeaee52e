#include "tessera/k8s/lease_elector.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <thread>

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;

// A metav1.MicroTime: RFC 3339 with microseconds, in UTC.
std::string micro_time_now() {
  const auto now =
      std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
  const auto seconds = std::chrono::time_point_cast<std::chrono::seconds>(now);
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:06}Z", seconds, (now - seconds).count());
}

core::Error lease_error(std::string message) {
  return core::Error(core::Domain::kK8s, core::Code::kFailedPrecondition, std::move(message));
}

}  // namespace

LeaseElector::LeaseElector(ApiServerClient client, LeaseOptions options, const core::Clock& clock,
                           std::function<void(bool)> on_change)
    : client_(std::move(client)),
      options_(std::move(options)),
      clock_(clock),
      on_change_(std::move(on_change)) {}

std::string LeaseElector::holder() const {
  std::lock_guard lock(holder_mu_);
  return holder_;
}

void LeaseElector::set_leading(bool leading) {
  if (leading_.exchange(leading) == leading) return;
  core::logger().info("lease {}/{}: {}", options_.lease_namespace, options_.name,
                      leading ? "this replica leads" : "this replica no longer leads");
  if (on_change_) on_change_(leading);
}

core::Result<bool> LeaseElector::try_acquire_or_renew() {
  try {
    return attempt();
  } catch (const json::exception& e) {
    return std::unexpected(
        lease_error(fmt::format("lease {}/{}: a Lease this replica cannot read: {}",
                                options_.lease_namespace, options_.name, e.what())));
  }
}

core::Result<bool> LeaseElector::attempt() {
  const std::string collection =
      fmt::format("/apis/coordination.k8s.io/v1/namespaces/{}/leases", options_.lease_namespace);
  const std::string path = collection + "/" + options_.name;
  const core::Nanos now = clock_.now();
  const std::string stamp = micro_time_now();
  const auto duration = static_cast<std::int64_t>(options_.lease_duration.count());
  const auto fail = [&](std::string why) -> core::Result<bool> {
    // A leader that cannot renew within renew_deadline must stop acting as one.
    if (leading() &&
        now - renewed_at_ >
            std::chrono::duration_cast<std::chrono::nanoseconds>(options_.renew_deadline).count()) {
      set_leading(false);
    }
    return std::unexpected(
        lease_error(fmt::format("lease {}/{}: {}", options_.lease_namespace, options_.name, why)));
  };
  TESSERA_ASSIGN_OR_RETURN(const ApiResponse got, client_.get(path));
  if (got.status == 404) {
    const json lease{
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", options_.name}, {"namespace", options_.lease_namespace}}},
        {"spec",
         {{"holderIdentity", options_.identity},
          {"leaseDurationSeconds", duration},
          {"acquireTime", stamp},
          {"renewTime", stamp},
          {"leaseTransitions", 0}}}};
    TESSERA_ASSIGN_OR_RETURN(const ApiResponse created, client_.post(collection, lease));
    if (created.status == 409) return false;  // another replica created it first
    if (created.status / 100 != 2) {
      return fail(fmt::format("creating it: HTTP {}: {}", created.status, created.reason()));
    }
    renewed_at_ = now;
    {
      std::lock_guard lock(holder_mu_);
      holder_ = options_.identity;
    }
    set_leading(true);
    return true;
  }
  if (got.status != 200)
    return fail(fmt::format("reading it: HTTP {}: {}", got.status, got.reason()));
  json lease = json::parse(got.body, nullptr, false);
  if (!lease.is_object() || !lease.value("spec", json()).is_object()) {
    return fail("reading it: the answer is not a Lease");
  }
  json& spec = lease["spec"];
  const std::string holder = spec.value("holderIdentity", "");
  if (spec != observed_) {
    observed_ = spec;
    observed_at_ = now;
  }
  {
    std::lock_guard lock(holder_mu_);
    holder_ = holder;
  }
  const std::int64_t their_duration = spec.value("leaseDurationSeconds", duration);
  const bool expired = now - observed_at_ > their_duration * 1'000'000'000LL;
  if (!holder.empty() && holder != options_.identity && !expired) {
    set_leading(false);
    return false;
  }
  if (holder != options_.identity) {
    spec["acquireTime"] = stamp;
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] = duration;
  spec["renewTime"] = stamp;
  TESSERA_ASSIGN_OR_RETURN(const ApiResponse updated, client_.put(path, lease));
  if (updated.status == 409) {  // another replica wrote it since this one read it
    set_leading(false);
    return false;
  }
  if (updated.status / 100 != 2) {
    return fail(fmt::format("updating it: HTTP {}: {}", updated.status, updated.reason()));
  }
  observed_ = spec;
  observed_at_ = now;
  renewed_at_ = now;
  {
    std::lock_guard lock(holder_mu_);
    holder_ = options_.identity;
  }
  set_leading(true);
  return true;
}

core::Status LeaseElector::release() {
  const std::string path = fmt::format("/apis/coordination.k8s.io/v1/namespaces/{}/leases/{}",
                                       options_.lease_namespace, options_.name);
  TESSERA_ASSIGN_OR_RETURN(const ApiResponse got, client_.get(path));
  if (got.status != 200) return {};
  json lease = json::parse(got.body, nullptr, false);
  if (!lease.is_object() || !lease.value("spec", json()).is_object() ||
      lease["spec"].value("holderIdentity", "") != options_.identity) {
    return {};
  }
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = micro_time_now();
  TESSERA_ASSIGN_OR_RETURN(const ApiResponse put, client_.put(path, lease));
  if (put.status / 100 != 2) {
    return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                       "giving up lease {}/{}: HTTP {}: {}", options_.lease_namespace,
                       options_.name, put.status, put.reason());
  }
  return {};
}

void LeaseElector::run(const std::function<bool()>& stop) {
  // release() reads the Lease too.
  const auto give_up = [this] {
    try {
      return release();
    } catch (const json::exception& e) {
      return core::Status(std::unexpected(lease_error(e.what())));
    }
  };
  while (!stop()) {
    if (auto r = try_acquire_or_renew(); !r) core::logger().warn("{}", r.error().message());
    const auto until = std::chrono::steady_clock::now() + options_.retry_period;
    while (!stop() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (leading()) {
    set_leading(false);
    if (auto st = give_up(); !st) core::logger().warn("{}", st.error().message());
  }
}

}  // namespace tessera::k8s
