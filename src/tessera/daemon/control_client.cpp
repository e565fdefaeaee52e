#include "tessera/daemon/control_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tessera/core/clock.hpp"
#include "tessera/daemon/control_protocol.hpp"

namespace tessera::daemon {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

core::Result<nlohmann::json> send_request(const std::string& socket_path,
                                          const nlohmann::json& request, core::Nanos timeout) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof address.sun_path) {
    return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                       "socket path '{}' must be 1-{} characters", socket_path,
                       sizeof address.sun_path - 1);
  }
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0 ||
      connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return core::failf(core::Domain::kIo, core::Code::kNotFound,
                       "no daemon answers on {}: {} (is `tessera daemon` running, with this "
                       "--socket?)",
                       socket_path, std::strerror(errno));
  }
  const std::string line = request.dump() + "\n";
  for (std::size_t sent = 0; sent < line.size();) {
    const ssize_t n = send(fd.get(), line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return core::failf(core::Domain::kIo, core::Code::kInternal, "sending to {}: {}", socket_path,
                         std::strerror(errno));
    }
    sent += static_cast<std::size_t>(n);
  }
  const core::SystemClock clock;
  const core::Nanos deadline = clock.now() + timeout;
  std::string reply;
  while (reply.find('\n') == std::string::npos) {
    const core::Nanos left = deadline - clock.now();
    pollfd p{fd.get(), POLLIN, 0};
    const int ready =
        left <= 0 ? 0 : poll(&p, 1, static_cast<int>(left / core::kNanosPerMilli + 1));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      return core::failf(core::Domain::kIo, core::Code::kInternal,
                         "the daemon on {} did not answer within {} ms", socket_path,
                         core::to_millis(timeout));
    }
    char buffer[8192];
    const ssize_t n = recv(fd.get(), buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return core::failf(core::Domain::kIo, core::Code::kInternal,
                         "the daemon on {} closed the connection before answering", socket_path);
    }
    reply.append(buffer, static_cast<std::size_t>(n));
    if (reply.size() > 64 * kMaxRequestBytes) {
      return core::failf(core::Domain::kIo, core::Code::kInternal,
                         "the daemon on {} sent a reply line over {} bytes", socket_path,
                         reply.size());
    }
  }
  reply.resize(reply.find('\n'));
  nlohmann::json j = nlohmann::json::parse(reply, nullptr, false);
  if (!j.is_object() || !j.contains("ok") || !j["ok"].is_boolean()) {
    return core::failf(core::Domain::kIo, core::Code::kParse,
                       "the daemon on {} sent a reply that is not a protocol object", socket_path);
  }
  if (!j["ok"].get<bool>()) {
    return core::failf(core::Domain::kConfig, core::Code::kFailedPrecondition, "the daemon: {}",
                       j.value("error", std::string("(no message)")));
  }
  return j;
}

}  // namespace tessera::daemon
