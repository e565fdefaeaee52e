#pragma once
// The node agent's HTTP routes (served by `tessera agent` on an HttpServer, loopback by default):
//   GET  /healthz                   {"status": "ok", "node", "generation", "gpus", ...}
//   GET  /topology                  {"node", "generation", "topology": graph + status/used_by}
//   GET  /noderesourcetopology      the NRT object as JSON; as YAML with "Accept:
//                                   application/yaml" or at /noderesourcetopology.yaml
//   GET  /allocations               {"generation", "pods": [...]}, the set POST replaces
//   POST /allocations               {"pods": [...]} (node_agent.hpp's parse_allocations): the
//                                   whole set of pods on this node; 400 when malformed, 409 when
//                                   it does not fit the topology (nothing changes then)

#include <functional>

#include "tessera/k8s/http_server.hpp"
#include "tessera/k8s/node_agent.hpp"

namespace tessera::k8s {

// `on_change` (may be empty) runs after an allocation update that changed something.
void add_agent_routes(HttpServer& server, NodeAgent& agent, std::function<void()> on_change);

}  // namespace tessera::k8s
