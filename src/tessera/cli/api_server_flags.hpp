#pragma once
// The API-server options the extender (to create Bindings) and the agent (to publish its
// NodeResourceTopology) both take: --apiserver URL with --token-file and --ca-file, or
// --in-cluster for the pod's service account.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/k8s/api_server_client.hpp"

namespace tessera::cli {

struct ApiServerFlags {
  std::string url;
  std::string token_file;
  std::string ca_file;
  bool in_cluster = false;
};

// `purpose` completes "API server URL ..." in --apiserver's help (e.g. "to create Bindings at").
void add_api_server_options(CLI::App& command, ApiServerFlags& flags, std::string_view purpose);
// The configuration the flags give; nullopt when neither --apiserver nor --in-cluster is. Fails
// when both are, or --in-cluster runs outside a pod.
core::Result<std::optional<k8s::ApiServerConfig>> api_server_config(const ApiServerFlags& flags);

}  // namespace tessera::cli
