#pragma once
// What `tessera ctl set` changed of registered tenants, kept in a file so that a daemon that is
// restarted (upgraded, or killed) gives the tenants those settings back when they register again
// (they do on their own: the interposer reconnects). The file is rewritten whole on every change
// (a temporary beside it, then rename), as one JSON object of "set" requests by tenant name, each
// read back through the control protocol's own parser. A tenant that leaves is forgotten.
//
// A file that cannot be read as one is moved aside (PATH.unreadable), named in the warning
// open() returns, and the store starts empty: the daemon still starts, nothing is lost.

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/daemon/control_protocol.hpp"

namespace tessera::daemon {

class SettingsStore {
 public:
  // The store at `path` ("": none, every call a no-op), with what the file holds. `warning` is
  // set when an existing file could not be read.
  static SettingsStore open(std::string path, std::string& warning);

  // What was set for `tenant` (its name in the request), if anything.
  std::optional<SetRequest> find(std::string_view tenant) const;
  // Adds the fields `request` gives to what is kept for its tenant, then writes the file.
  core::Status remember(const SetRequest& request);
  // Drops what is kept for `tenant`, then writes the file (nothing to drop: no write).
  core::Status forget(std::string_view tenant);
  std::size_t size() const { return kept_.size(); }

 private:
  core::Status write() const;

  std::string path_;
  std::map<std::string, SetRequest, std::less<>> kept_;
};

// A set request as the JSON object parse_request reads back ("op": "set" included).
nlohmann::json set_request_json(const SetRequest& request);

}  // namespace tessera::daemon
