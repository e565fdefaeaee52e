#pragma once
// Grants asked of tesserad over its control socket (control_protocol.hpp's "grant" and "revoke").

#include <string>

#include "tessera/core/time.hpp"
#include "tessera/dra/dra_driver.hpp"

namespace tessera::dra {

class DaemonGrants final : public TenantGrants {
 public:
  explicit DaemonGrants(std::string socket_path, core::Nanos timeout = core::seconds(5))
      : socket_path_(std::move(socket_path)), timeout_(timeout) {}
  core::Status grant(const nlohmann::json& request) override;
  core::Status revoke(const std::string& claim_uid) override;

 private:
  std::string socket_path_;
  core::Nanos timeout_;
};

}  // namespace tessera::dra
