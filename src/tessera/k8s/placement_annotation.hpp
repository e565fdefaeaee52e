#pragma once
// Where the extender placed a pod on its node, kept on the pod itself (annotation
// tessera.io/placement) so that a restarted extender can rebuild its state from the API server:
//
//   {"gpus":[0,1],"core_groups":[2],"memory":[{"numa":0,"bytes":17179869184}],"affinity":"same-numa"}
//
// GPU and core-group indices are those of the node's topology (hw::HostTopology); affinity is
// cluster::to_string(Affinity).

#include <string>
#include <string_view>

#include "tessera/cluster/state/node_state.hpp"
#include "tessera/core/error.hpp"

namespace tessera::k8s {

inline constexpr std::string_view kPlacementAnnotation = "tessera.io/placement";

std::string placement_annotation(const cluster::Assignment& assignment);
// Fails (kParse / kInvalidArgument) naming what is wrong; indices are checked against the node
// only when the pod is bound there (ClusterState::bind).
core::Result<cluster::Assignment> parse_placement_annotation(std::string_view text);

}  // namespace tessera::k8s
