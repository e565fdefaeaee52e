#include "tessera/daemon/control_server.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>
#include <variant>
#include <vector>

#include "tessera/core/log.hpp"
#include "tessera/daemon/grant_store.hpp"
#include "tessera/daemon/settings_store.hpp"
#include "tessera/daemon/tenant_page.hpp"

namespace tessera::daemon {
namespace {

core::Nanos monotonic_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<core::Nanos>(ts.tv_sec) * core::kNanosPerSecond + ts.tv_nsec;
}

core::Result<sockaddr_un> address_of(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path) {
    return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                       "socket path '{}' must be 1-{} characters", path, sizeof a.sun_path - 1);
  }
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

// True when a daemon answers on `path`.
bool live(const sockaddr_un& a) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool up = connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return up;
}

// A reply, and the fd that travels with its first byte (SCM_RIGHTS), if any.
struct Outgoing {
  std::string bytes;
  int fd = -1;
  std::size_t sent = 0;
};

struct Client {
  int fd = -1;
  int pid = 0;
  uid_t uid = static_cast<uid_t>(-1);  // unknown: never root
  std::string in;
  std::deque<Outgoing> out;
  int tenant = 0;  // TenantTable id once registered
  std::string tenant_name;
  std::unique_ptr<TenantPage> page;
  bool closing = false;  // close once `out` is flushed

  std::size_t pending() const {
    std::size_t bytes = 0;
    for (const Outgoing& o : out) bytes += o.bytes.size() - o.sent;
    return bytes;
  }
};

// A client that sends requests without reading the replies is not read from while this much
// waits for it, so it cannot make the daemon buffer without end.
constexpr std::size_t kMaxPendingReply = 1 << 20;

std::string ok_reply(nlohmann::json body = nlohmann::json::object()) {
  body["ok"] = true;
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

bool may_control(uid_t client, uid_t daemon) {
  return client == 0 || client == daemon;
}

struct ControlServer::State {
  ServerOptions options;
  TenantTable table;
  SettingsStore settings;
  GrantStore grants;
  int listen_fd = -1;
  std::vector<std::unique_ptr<Client>> clients;
  bool draining = false;

  State(ServerOptions o, TenantTable t, SettingsStore s, GrantStore g)
      : options(std::move(o)), table(std::move(t)), settings(std::move(s)), grants(std::move(g)) {}

  void handle_line(Client& c, std::string_view line, core::Nanos now);
  std::string downgrade_untrusted(TenantSettings& settings, uid_t uid) const;
  std::string handle(Client& c, const Request& request, core::Nanos now, int& fd_out);
  std::string register_tenant(Client& c, const RegisterRequest& request, core::Nanos now,
                              int& fd_out);
  std::string grant(const GrantRequest& request);
  std::string revoke(const RevokeRequest& request);
  // The grants kept from before the restart, given to the table again; one that no longer
  // applies (a device the daemon has no more) is named in a warning and forgotten.
  void restore_grants();
  void read_from(Client& c, core::Nanos now);
  void write_to(Client& c);
  // Closes the connection; its tenant leaves the table, and, when `left` (not a daemon that is
  // stopping: its tenants register again with the next one), the settings store.
  void drop(Client& c, bool left = true);
  void accept_clients();
  // What `set` gave tenant `name` before the daemon restarted, applied again; a warning when it
  // no longer applies (then it is forgotten).
  void restore(const std::string& name, RegisterRequest& registered);
};

// Why `settings` were lowered to best-effort at priority 0 ("" if they were not).
std::string ControlServer::State::downgrade_untrusted(TenantSettings& settings, uid_t uid) const {
  const auto& trusted = options.latency_critical_uids;
  if (!trusted || std::ranges::find(*trusted, uid) != trusted->end()) return "";
  if (settings.tenant_class != TenantClass::kLatencyCritical && settings.priority <= 0) return "";
  const std::string asked =
      fmt::format("{}, priority {}", tenant_class_name(settings.tenant_class), settings.priority);
  settings.tenant_class = TenantClass::kBestEffort;
  settings.priority = 0;
  return fmt::format(
      "registered as best-effort, priority 0 instead of {}: uid {} is not in the daemon's "
      "--latency-critical-uids",
      asked, uid);
}

void ControlServer::State::handle_line(Client& c, std::string_view line, core::Nanos now) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) return;
  auto request = parse_request(line);
  if (!request) {
    c.out.push_back({error_reply(request.error().message())});
    return;
  }
  int fd = -1;
  std::string reply = handle(c, *request, now, fd);
  c.out.push_back({std::move(reply), fd});
}

std::string ControlServer::State::register_tenant(Client& c, const RegisterRequest& r,
                                                  core::Nanos now, int& fd_out) {
  if (c.tenant != 0) {
    return error_reply("this connection already registered tenant '" + c.tenant_name +
                       "' (one tenant per connection)");
  }
  if (draining) return error_reply("the daemon is draining: it accepts no new tenants");
  auto page = TenantPage::create(r.tenant);
  if (!page) return error_reply(page.error().message());
  RegisterRequest with_pid = r;
  with_pid.pid = c.pid;
  // The table applies the grant too; this copy is what the reply and the log say. The cluster
  // authorized the claim, so its settings are not lowered for an untrusted uid.
  const std::optional<GrantRequest> grant = table.grant_for(r.tenant);
  std::string downgraded;
  std::string granted;
  if (grant) {
    apply(*grant, with_pid);
    granted =
        fmt::format(" under claim '{}'{}", grant->claim,
                    r.device == grant->device
                        ? ""
                        : fmt::format(" (it asked for device {}; the grant's holds)", r.device));
  } else {
    downgraded = downgrade_untrusted(with_pid.settings, c.uid);
  }
  auto id = table.add(with_pid, (*page)->page(), now);
  if (!id) return error_reply(id.error().message());
  c.tenant = *id;
  c.tenant_name = r.tenant;
  c.page = std::move(*page);
  restore(r.tenant, with_pid);
  table.tick(now);  // the newcomer gets its assignment before its first launch
  fd_out = c.page->fd();
  const std::string note = table.note_for(with_pid.settings);
  const int percentage = table.mps_percentage(with_pid.settings);
  core::logger().info(
      "tenant '{}' (pid {}, {}, priority {}) registered on device {}{}{}{}{}", r.tenant, c.pid,
      tenant_class_name(with_pid.settings.tenant_class), with_pid.settings.priority,
      with_pid.device, granted, downgraded.empty() ? "" : ": " + downgraded,
      note.empty() ? "" : "; " + note,
      percentage > 0 ? fmt::format("; MPS active thread percentage {}", percentage) : "");
  nlohmann::json body{{"tenant", r.tenant},
                      {"class", tenant_class_name(with_pid.settings.tenant_class)},
                      {"priority", with_pid.settings.priority},
                      {"page_version", daemon_abi::kPageVersion}};
  if (grant) body["claim"] = grant->claim;
  if (!downgraded.empty()) body["downgraded"] = downgraded;
  if (!note.empty()) body["note"] = note;
  if (percentage > 0) body["mps_active_thread_percentage"] = percentage;
  return ok_reply(std::move(body));
}

// Stored only once the table took it, and given back to the table when it cannot be stored: a
// grant the next daemon would not know of is refused, so the DRA driver tries again.
std::string ControlServer::State::grant(const GrantRequest& r) {
  const auto again = table.grant(r);
  if (!again) return error_reply(again.error().message());
  if (!*again) {
    if (auto kept = grants.put(r); !kept) {
      table.revoke(r.claim);
      return error_reply(
          fmt::format("claim '{}' is not granted: {}", r.claim, kept.error().message()));
    }
    core::logger().info(
        "claim '{}' granted tenant '{}' on device {} ({}, priority {}, SM share {}, memory limit "
        "{} bytes)",
        r.claim, r.tenant, r.device, tenant_class_name(r.settings.tenant_class),
        r.settings.priority, r.settings.sm_share, r.settings.memory_limit);
  }
  return ok_reply(
      {{"claim", r.claim}, {"tenant", r.tenant}, {"device", r.device}, {"again", *again}});
}

// Forgotten in the file first: a revoke the file does not keep is refused, so the grant does not
// come back at the next start.
std::string ControlServer::State::revoke(const RevokeRequest& r) {
  if (auto kept = grants.forget(r.claim); !kept) {
    return error_reply(
        fmt::format("claim '{}' is still granted: {}", r.claim, kept.error().message()));
  }
  const bool was_granted = table.revoke(r.claim);
  if (was_granted) core::logger().info("claim '{}' revoked", r.claim);
  return ok_reply({{"claim", r.claim}, {"was_granted", was_granted}});
}

void ControlServer::State::restore_grants() {
  for (const GrantRequest& g : grants.grants()) {
    if (auto held = table.grant(g); !held) {
      core::logger().warn(
          "claim '{}': the grant kept from before the restart no longer applies ({}); "
          "forgotten",
          g.claim, held.error().message());
      if (auto s = grants.forget(g.claim); !s) core::logger().warn("{}", s.error().message());
    }
  }
  if (!table.grants().empty()) {
    core::logger().info("{} grant(s) kept from before the restart", table.grants().size());
  }
}

std::string ControlServer::State::handle(Client& c, const Request& request, core::Nanos now,
                                         int& fd_out) {
  if (const auto* r = std::get_if<RegisterRequest>(&request)) {
    return register_tenant(c, *r, now, fd_out);
  }
  if (std::holds_alternative<ListRequest>(request)) {
    nlohmann::json body = table.to_json();
    body["draining"] = draining;
    body["capabilities"] = options.capabilities;
    return ok_reply(std::move(body));
  }
  // Every request but these two changes other tenants.
  if (!may_control(c.uid, geteuid())) {
    return error_reply(
        fmt::format("set, grant, revoke, policy, drain and undrain need root or the daemon's user "
                    "(uid {}); this client is uid {}",
                    geteuid(), c.uid));
  }
  if (const auto* r = std::get_if<SetRequest>(&request)) {
    if (auto s = table.set(*r); !s) return error_reply(s.error().message());
    if (auto kept = settings.remember(*r); !kept) {
      core::logger().warn("{}; the setting holds until the daemon restarts",
                          kept.error().message());
    }
    table.tick(now);
    return ok_reply();
  }
  if (const auto* r = std::get_if<GrantRequest>(&request)) return grant(*r);
  if (const auto* r = std::get_if<RevokeRequest>(&request)) return revoke(*r);
  if (const auto* r = std::get_if<PolicyRequest>(&request)) {
    if (auto s = table.set_policy(r->name); !s) return error_reply(s.error().message());
    core::logger().info("policy is now '{}'", r->name);
    table.tick(now);
    return ok_reply({{"policy", r->name}});
  }
  const auto& d = std::get<DrainRequest>(request);
  draining = d.drain;
  return ok_reply({{"draining", draining}, {"tenants", table.size()}});
}

// One recv per poll round, so a client that floods requests takes turns with the others.
void ControlServer::State::read_from(Client& c, core::Nanos now) {
  char buffer[8192];
  const ssize_t n = recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
  if (n < 0) {
    if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      c.closing = true;
      c.out.clear();
    }
    return;
  }
  if (n == 0) {  // the client closed: what it sent last without a newline is not a request
    c.closing = true;
    c.out.clear();
    return;
  }
  c.in.append(buffer, static_cast<std::size_t>(n));
  std::size_t start = 0;
  for (std::size_t nl; (nl = c.in.find('\n', start)) != std::string::npos; start = nl + 1) {
    handle_line(c, std::string_view(c.in).substr(start, nl - start), now);
  }
  c.in.erase(0, start);
  if (c.in.size() > kMaxRequestBytes) {
    c.out.push_back({error_reply("request line longer than " + std::to_string(kMaxRequestBytes) +
                                 " bytes: closing the connection")});
    c.in.clear();
    c.closing = true;
  }
}

void ControlServer::State::write_to(Client& c) {
  while (!c.out.empty()) {
    Outgoing& o = c.out.front();
    iovec iov{o.bytes.data() + o.sent, o.bytes.size() - o.sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (o.fd >= 0 && o.sent == 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* cm = CMSG_FIRSTHDR(&msg);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(cm), &o.fd, sizeof(int));
    }
    const ssize_t n = sendmsg(c.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        c.closing = true;
        c.out.clear();
      }
      return;
    }
    o.sent += static_cast<std::size_t>(n);
    if (o.sent == o.bytes.size()) c.out.pop_front();
  }
}

void ControlServer::State::restore(const std::string& name, RegisterRequest& registered) {
  const auto kept = settings.find(name);
  if (!kept) return;
  if (auto s = table.set(*kept); !s) {
    core::logger().warn(
        "tenant '{}': the settings kept from before the restart no longer apply "
        "({}); forgotten",
        name, s.error().message());
    (void)settings.forget(name);
    return;
  }
  apply(*kept, registered.settings);
  core::logger().info("tenant '{}': settings kept from before the restart applied again", name);
}

void ControlServer::State::drop(Client& c, bool left) {
  if (c.tenant != 0) {
    table.remove(c.tenant);
    core::logger().info("tenant '{}' (pid {}) left", c.tenant_name, c.pid);
    if (left) {
      if (auto s = settings.forget(c.tenant_name); !s)
        core::logger().warn("{}", s.error().message());
    }
    c.tenant = 0;
  }
  c.page.reset();
  close(c.fd);
  c.fd = -1;
}

void ControlServer::State::accept_clients() {
  for (;;) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: none left; anything else: try again next round
    if (clients.size() >= options.max_clients) {
      const std::string reply = error_reply("the daemon has too many connections");
      (void)send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      continue;
    }
    auto c = std::make_unique<Client>();
    c->fd = fd;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      c->pid = cred.pid;
      c->uid = cred.uid;
    }
    clients.push_back(std::move(c));
  }
}

core::Result<std::unique_ptr<ControlServer>> ControlServer::start(ServerOptions options,
                                                                  TenantTable table) {
  auto address = address_of(options.socket_path);
  if (!address) return std::unexpected(address.error());
  if (live(*address)) {
    return core::failf(core::Domain::kIo, core::Code::kFailedPrecondition,
                       "a daemon already listens on {}", options.socket_path);
  }
  // The socket's folder (/run/tessera by default) is made if missing, as systemd's
  // RuntimeDirectory would.
  const std::filesystem::path folder = std::filesystem::path(options.socket_path).parent_path();
  std::error_code made;
  if (!folder.empty()) std::filesystem::create_directories(folder, made);
  if (made) {
    return core::failf(core::Domain::kIo, core::Code::kFailedPrecondition,
                       "cannot make the socket's folder {}: {}", folder.string(), made.message());
  }
  unlink(options.socket_path.c_str());  // a stale socket from a daemon that died
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return core::failf(core::Domain::kIo, core::Code::kInternal, "socket: {}",
                       std::strerror(errno));
  }
  // Anyone on the node may connect (tenants run as any user); what changes other tenants is
  // checked per request (may_control).
  if (bind(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0 ||
      chmod(options.socket_path.c_str(), 0666) != 0 || listen(fd, 64) != 0) {
    const int saved = errno;
    close(fd);
    return core::failf(core::Domain::kIo, core::Code::kFailedPrecondition, "listening on {}: {}",
                       options.socket_path, std::strerror(saved));
  }
  std::string unreadable;
  SettingsStore settings = SettingsStore::open(options.settings_path, unreadable);
  if (!unreadable.empty()) core::logger().warn("{}", unreadable);
  unreadable.clear();
  GrantStore grants = GrantStore::open(options.grants_path, unreadable);
  if (!unreadable.empty()) core::logger().warn("{}", unreadable);
  auto state = std::make_unique<State>(std::move(options), std::move(table), std::move(settings),
                                       std::move(grants));
  state->listen_fd = fd;
  state->restore_grants();
  return std::unique_ptr<ControlServer>(new ControlServer(std::move(state)));
}

ControlServer::ControlServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

ControlServer::~ControlServer() {
  for (auto& c : state_->clients) {
    if (c->fd >= 0) state_->drop(*c, false);
  }
  if (state_->listen_fd >= 0) {
    close(state_->listen_fd);
    unlink(state_->options.socket_path.c_str());
  }
}

const std::string& ControlServer::socket_path() const {
  return state_->options.socket_path;
}

core::Status ControlServer::run(const std::function<bool()>& stop) {
  State& s = *state_;
  core::Nanos next_tick = monotonic_now();
  std::vector<pollfd> fds;
  while (!stop()) {
    fds.clear();
    fds.push_back({s.listen_fd, POLLIN, 0});
    for (const auto& c : s.clients) {
      const bool reading = !c->closing && c->pending() < kMaxPendingReply;
      const short events =
          static_cast<short>((reading ? POLLIN : 0) | (c->out.empty() ? 0 : POLLOUT));
      fds.push_back({c->fd, events, 0});
    }
    const core::Nanos now = monotonic_now();
    const core::Nanos wait = std::max<core::Nanos>(0, next_tick - now);
    const int timeout_ms =
        static_cast<int>((wait + core::kNanosPerMilli - 1) / core::kNanosPerMilli);
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      return core::failf(core::Domain::kIo, core::Code::kInternal, "poll: {}",
                         std::strerror(errno));
    }
    const core::Nanos after = monotonic_now();
    for (std::size_t i = 1; i < fds.size(); ++i) {
      Client& c = *s.clients[i - 1];
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !c.closing &&
          c.pending() < kMaxPendingReply) {
        s.read_from(c, after);
      }
      if (!c.out.empty()) s.write_to(c);
    }
    std::erase_if(s.clients, [&](const std::unique_ptr<Client>& c) {
      if (!c->closing || !c->out.empty()) return false;
      s.drop(*c);
      return true;
    });
    if ((fds[0].revents & POLLIN) != 0) s.accept_clients();
    if (after >= next_tick) {
      s.table.tick(after);
      if (s.options.after_round) s.options.after_round(s.table, after);
      next_tick = after + s.options.tick;
    }
  }
  return {};
}

}  // namespace tessera::daemon
