#pragma once
// A client of tesserad's control socket: one request line out, one reply line back. `tessera ctl`
// uses it, and so do the tests; the interposer has its own (it links no tessera library).

#include <nlohmann/json.hpp>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"

namespace tessera::daemon {

// Sends `request` to the daemon on `socket_path` and returns its reply object. Fails (kIo) when
// nothing listens there or no whole reply comes within `timeout`, and (kFailedPrecondition) with
// the daemon's message when it answers {"ok": false}.
core::Result<nlohmann::json> send_request(const std::string& socket_path,
                                          const nlohmann::json& request,
                                          core::Nanos timeout = core::seconds(5));

}  // namespace tessera::daemon
