#pragma once
// Publishes the node's NodeResourceTopology object (node_resource_topology.hpp) to the API server,
// where topology-aware schedulers read it (the scheduler-plugins NodeResourceTopology plugin): a
// server-side apply of the whole object as field manager "tessera-agent" at
//   /apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/{node}
// (cluster-scoped; the CustomResourceDefinition must be installed, as it is for that plugin).
// It applies when the object differs from the one it last tried, and again every period (an
// object deleted by hand comes back, a failed apply is retried); never more often, however often
// it is called.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tessera/core/clock.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/k8s/api_server_client.hpp"

namespace tessera::k8s {

inline constexpr const char* kNrtFieldManager = "tessera-agent";

class NrtPublisher {
 public:
  NrtPublisher(ApiServerClient client, core::Nanos period, const core::Clock& clock);

  struct Outcome {
    bool attempted = false;
    std::optional<core::Error> error;  // the attempt failed (with the API server's reason)
  };
  // `nrt` is the object as NodeAgent::node_resource_topology() makes it.
  Outcome maybe_publish(const nlohmann::json& nrt);

 private:
  ApiServerClient client_;
  core::Nanos period_;
  const core::Clock& clock_;
  nlohmann::json attempted_;  // the object last tried
  core::Nanos last_attempt_ = 0;
  bool tried_ = false;
};

}  // namespace tessera::k8s
