#pragma once
// Writing a whole buffer to a file descriptor, however many write(2) calls it takes: what the
// MIG journal and the hwloc child's reply both need.

#include <string_view>

namespace tessera::core {

// Retries interrupted and short writes. False on an error, with errno as write(2) left it (a
// write that returns 0 is reported as EIO). Async-signal-safe: usable in a forked child.
bool write_all(int fd, std::string_view data);

}  // namespace tessera::core
