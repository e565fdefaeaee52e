#pragma once
// tesserad's server: one thread, one poll() loop over its Unix socket and its clients, and the
// policy round on a timer. Requests are control_protocol.hpp's lines. A registered tenant's
// connection is its lease: when it closes (the process exited or died) the tenant is removed and
// its page unmapped, so the policy round gives its SMs to the others.
//
// The socket is open to every user on the node (mode 0666): any process may register itself and
// list. Requests that change other tenants (set, grant, revoke, policy, drain, undrain) are
// refused unless the client, by its socket credentials, is root or the daemon's own user.
//
// A hostile or broken client cannot stop the daemon: each connection has a bounded input buffer
// (kMaxRequestBytes per line; a longer line is answered with an error and the connection closed),
// replies go out as the client reads them (non-blocking, no SIGPIPE), and a bad request gets an
// error reply naming what is wrong while the connection stays open.

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/daemon/tenant_table.hpp"

namespace tessera::daemon {

// Whether a client of user `client` may change other tenants on a daemon running as `daemon`.
bool may_control(uid_t client, uid_t daemon);

struct ServerOptions {
  std::string socket_path;
  // Time between policy rounds. ASSUMPTION: 1 ms keeps a change of activity (an inference going
  // idle or waking) reflected within a few ms; a round costs 0.8-6 us of CPU for 2-32 tenants
  // (bench/daemon_bench.cpp), under 1% of a core.
  core::Nanos tick = core::millis(1);
  std::size_t max_clients = 256;
  // What the node can do (driver, green contexts, MPS), shown by `list`.
  nlohmann::json capabilities = nlohmann::json::object();
  // Who may register as latency-critical or with a priority above 0, by uid (SO_PEERCRED):
  // unset, every process; set, a process of another uid is registered as best-effort at
  // priority 0 and told so in the reply. A process's class is otherwise its own claim.
  std::optional<std::vector<uid_t>> latency_critical_uids;
  // Where what `set` changed of registered tenants is kept across daemon restarts
  // (settings_store.hpp); "": not kept.
  std::string settings_path;
  // Where grants are kept until revoked, across daemon restarts (grant_store.hpp); "": not kept.
  std::string grants_path;
  // Called on the server's thread after every policy round (the metrics' snapshot).
  std::function<void(const TenantTable&, core::Nanos now)> after_round;
};

class ControlServer {
 public:
  // Binds and listens on options.socket_path (mode 0666), making its folder if missing. A stale
  // socket file (nothing listening) is replaced; a live one is an error naming the path, so two
  // daemons never share a socket.
  static core::Result<std::unique_ptr<ControlServer>> start(ServerOptions options,
                                                            TenantTable table);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Serves until `stop()` returns true (asked at least once per tick); then closes every client
  // and removes the socket file.
  core::Status run(const std::function<bool()>& stop);

  const std::string& socket_path() const;

 private:
  struct State;
  explicit ControlServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tessera::daemon
