#include "tessera/cli/api_server_flags.hpp"

#include <fmt/format.h>

#include "tessera/core/try.hpp"

namespace tessera::cli {

void add_api_server_options(CLI::App& command, ApiServerFlags& f, std::string_view purpose) {
  command.add_option("--apiserver", f.url, fmt::format("API server URL {}", purpose));
  command.add_option("--token-file", f.token_file, "Bearer token file for --apiserver");
  command.add_option("--ca-file", f.ca_file, "CA bundle that signs --apiserver's certificate");
  command.add_flag("--in-cluster", f.in_cluster,
                   "Use the API server of the cluster this pod runs in (service account)");
}

core::Result<std::optional<k8s::ApiServerConfig>> api_server_config(const ApiServerFlags& f) {
  if (f.in_cluster && !f.url.empty()) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "give either --in-cluster or --apiserver, not both");
  }
  if (f.in_cluster) {
    TESSERA_ASSIGN_OR_RETURN(k8s::ApiServerConfig c, k8s::in_cluster_config());
    return std::optional(std::move(c));
  }
  if (f.url.empty()) return std::optional<k8s::ApiServerConfig>();
  k8s::ApiServerConfig c;
  c.url = f.url;
  c.token_file = f.token_file;
  c.ca_file = f.ca_file;
  return std::optional(std::move(c));
}

}  // namespace tessera::cli
