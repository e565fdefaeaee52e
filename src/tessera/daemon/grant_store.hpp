#pragma once
// The grants the daemon holds (control_protocol.hpp's "grant"), kept in a file so that a daemon
// that is restarted still gives a claim's processes the grant's settings when they register again:
// a Kubernetes DRA driver grants a claim once, before the pod starts, and does not know of the
// restart. The file is rewritten whole on every change (core::replace_file: a temporary beside it,
// synced, then renamed), as one JSON object of "grant" requests by claim, each read back through
// the control protocol's own parser. A grant stays until it is revoked.
//
// A file that cannot be read as one is moved aside (PATH.unreadable), named in the warning
// open() returns, and the store starts empty: the daemon still starts, nothing is lost.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/daemon/control_protocol.hpp"

namespace tessera::daemon {

class GrantStore {
 public:
  // The store at `path` ("": none, every call a no-op), with what the file holds. `warning` is
  // set when an existing file could not be read.
  static GrantStore open(std::string path, std::string& warning);

  // The grants kept, by claim.
  std::vector<GrantRequest> grants() const;
  // Keeps `grant` under its claim (replacing what was kept for it), then writes the file. When
  // the file cannot be written the store is as before.
  core::Status put(const GrantRequest& grant);
  // Drops the claim's grant, then writes the file (nothing to drop: no write). When the file
  // cannot be written the store is as before.
  core::Status forget(std::string_view claim);
  std::size_t size() const { return kept_.size(); }

 private:
  using Grants = std::map<std::string, GrantRequest, std::less<>>;
  core::Status write(const Grants& grants) const;

  std::string path_;
  Grants kept_;
};

}  // namespace tessera::daemon
