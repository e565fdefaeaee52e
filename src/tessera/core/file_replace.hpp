#pragma once
// Replacing a file whole so that a crash at any moment leaves either the old content or the new,
// never a part: state that must outlive a restart (a daemon's settings, a plugin's checkpoint, a
// CDI spec a container runtime may read at any time) is written to a temporary beside the file,
// synced, and renamed over it.

#include <string>
#include <string_view>

#include "tessera/core/error.hpp"

namespace tessera::core {

// Writes `content` to `path` (mode 0644) through PATH.tmp. `what` names the file in errors ("the
// daemon's settings"); an error leaves the old file as it was and no temporary behind.
Status replace_file(const std::string& path, std::string_view content, std::string_view what);

}  // namespace tessera::core
