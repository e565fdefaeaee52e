#pragma once
// The Kubernetes node a node-level command runs on.

#include <string>

namespace tessera::cli {

// `flag` when given, else $NODE_NAME (a DaemonSet's downward API), else the hostname in lowercase
// (as the kubelet names its node by default).
std::string node_name_or_default(const std::string& flag);

}  // namespace tessera::cli
