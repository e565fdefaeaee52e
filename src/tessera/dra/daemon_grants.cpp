#include "tessera/dra/daemon_grants.hpp"

#include "tessera/core/try.hpp"
#include "tessera/daemon/control_client.hpp"

namespace tessera::dra {

core::Status DaemonGrants::grant(const nlohmann::json& request) {
  TESSERA_TRY(daemon::send_request(socket_path_, request, timeout_));
  return {};
}

core::Status DaemonGrants::revoke(const std::string& claim_uid) {
  TESSERA_TRY(
      daemon::send_request(socket_path_, {{"op", "revoke"}, {"claim", claim_uid}}, timeout_));
  return {};
}

}  // namespace tessera::dra
