#pragma once
// The plugin's checkpoint: the claims it has prepared or begun to prepare on this node, in a JSON
// file rewritten whole on every change (core::replace_file). The kubelet calls NodePrepareResources
// again for claims already prepared (after its own restart, or the plugin's), and
// NodeUnprepareResources for claims the plugin may have prepared before it restarted: the
// checkpoint is how both answer from what was done, not from what the API server says now (a
// claim being deleted may already be gone there).
//
// An entry is written as "preparing" before the first side effect (the daemon's grant, the CDI
// spec) and becomes "prepared" after the last, so a plugin killed in between leaves an entry that
// an unprepare, or the next prepare, finishes or undoes: nothing half-prepared is forgotten.

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::dra {

struct PreparedDevice {
  std::string request;
  std::string pool;
  std::string device;
  std::vector<std::string> cdi_ids;
};

struct PreparedClaim {
  std::string ns;
  std::string name;
  bool complete = false;  // "prepared"; false: "preparing"
  std::string tenant;     // its tenant in tesserad
  std::string cdi_spec;   // path of its CDI spec file
  std::vector<PreparedDevice> devices;
  // A MIG partition made for it: its GPU (-1: none, a share granted by tesserad) and its GPU
  // instance (-1: not made yet).
  int mig_gpu = -1;
  std::int64_t mig_instance = -1;
};

class PreparedClaims {
 public:
  // The checkpoint at `path`, with what the file holds (none yet: empty). A file that cannot be
  // read as a checkpoint is an error naming it: the plugin must not start and forget claims it
  // prepared.
  static core::Result<PreparedClaims> open(std::string path);

  const PreparedClaim* find(std::string_view uid) const;
  // Records (or replaces) `uid`'s entry, then writes the file.
  core::Status put(const std::string& uid, PreparedClaim claim);
  // Drops `uid`'s entry, then writes the file (nothing to drop: no write).
  core::Status erase(std::string_view uid);
  const std::map<std::string, PreparedClaim, std::less<>>& claims() const { return claims_; }

 private:
  core::Status write() const;

  std::string path_;
  std::map<std::string, PreparedClaim, std::less<>> claims_;
};

}  // namespace tessera::dra
