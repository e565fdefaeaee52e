#pragma once
// A tesserad on a fresh socket in the test's temporary folder, served by a thread for the test's
// length (one or more H100s under the cogpu policy, options as the test sets them), and a raw
// client of its socket.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tessera/daemon/control_client.hpp"
#include "tessera/daemon/control_server.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::test {

class ServedDaemon {
 public:
  explicit ServedDaemon(const std::function<void(daemon::ServerOptions&)>& configure = {},
                        int devices = 1) {
    static int counter = 0;
    path_ = ::testing::TempDir() + "tesserad_" + std::to_string(getpid()) + "_" +
            std::to_string(++counter) + ".sock";
    daemon::TenantTable table(
        std::vector<gpu::PartitionGrid>(static_cast<std::size_t>(devices),
                                        *gpu::PartitionGrid::of(*hw::find_gpu("h100"))),
        *daemon::make_node_policy("cogpu"));
    daemon::ServerOptions options;
    options.socket_path = path_;
    if (configure) configure(options);
    auto server = daemon::ControlServer::start(options, std::move(table));
    EXPECT_TRUE(server.has_value()) << server.error().message();
    server_ = std::move(*server);
    thread_ = std::thread([this] { status_ = server_->run([this] { return stop_.load(); }); });
  }
  ~ServedDaemon() {
    stop_ = true;
    thread_.join();
    EXPECT_TRUE(status_.has_value());
  }
  ServedDaemon(const ServedDaemon&) = delete;
  ServedDaemon& operator=(const ServedDaemon&) = delete;

  const std::string& path() const { return path_; }
  nlohmann::json list() {
    auto r = daemon::send_request(path_, {{"op", "list"}});
    EXPECT_TRUE(r.has_value()) << r.error().message();
    return r.value_or(nlohmann::json());
  }

 private:
  std::string path_;
  std::unique_ptr<daemon::ControlServer> server_;
  std::atomic<bool> stop_{false};
  core::Status status_;
  std::thread thread_;
};

// A raw client of the daemon's socket: a process's registration lasts as long as it.
class Connection {
 public:
  explicit Connection(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    EXPECT_EQ(connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
    timeval timeout{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~Connection() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void send(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // The next reply line, and any fd that came with it; "" at end of stream.
  std::string reply(int* fd = nullptr) {
    while (buffer_.find('\n') == std::string::npos) {
      char data[4096];
      iovec iov{data, sizeof data};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      const ssize_t n = recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
      if (n <= 0) return "";
      cmsghdr* cm = CMSG_FIRSTHDR(&msg);
      if (cm != nullptr && cm->cmsg_type == SCM_RIGHTS && fd != nullptr) {
        std::memcpy(fd, CMSG_DATA(cm), sizeof(int));
      }
      buffer_.append(data, static_cast<std::size_t>(n));
    }
    const std::size_t nl = buffer_.find('\n');
    std::string line = buffer_.substr(0, nl);
    buffer_.erase(0, nl + 1);
    return line;
  }

 private:
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace tessera::test
