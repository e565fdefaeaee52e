#include "daemon_link.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>

#include "config.hpp"
#include "memory_hooks.hpp"

namespace tessera::interpose {
namespace {

struct Link {
  daemon_abi::AssignmentPage* page = nullptr;
  int socket = -1;
  int mps_percentage = 0;  // the reply's mps_active_thread_percentage; 0: none
  char error[320] = {};
};

bool valid_name(const char* name) {
  const std::size_t n = std::strlen(name);
  if (n == 0 || n > 63) return false;
  for (const char* p = name; *p != '\0'; ++p) {
    const char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

bool send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Reads the reply line; the page's fd arrives with its first byte.
bool receive_reply(int fd, char* line, std::size_t size, int* page_fd) {
  std::size_t used = 0;
  while (used + 1 < size) {
    iovec iov{line + used, size - 1 - used};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
      if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
          cm->cmsg_len == CMSG_LEN(sizeof(int))) {
        std::memcpy(page_fd, CMSG_DATA(cm), sizeof(int));
      }
    }
    used += static_cast<std::size_t>(n);
    line[used] = '\0';
    if (std::memchr(line, '\n', used) != nullptr) return true;
  }
  return false;
}

void register_with_daemon(Link& link) {
  const Config& c = config();
  char tenant[80];
  if (c.tenant[0] != '\0') {
    if (!valid_name(c.tenant)) {
      std::snprintf(link.error, sizeof link.error,
                    "TESSERA_TENANT='%.63s' is not 1-63 letters, digits, '.', '_' or '-'",
                    c.tenant);
      return;
    }
    std::snprintf(tenant, sizeof tenant, "%s", c.tenant);
  } else {
    std::snprintf(tenant, sizeof tenant, "pid-%d", static_cast<int>(getpid()));
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", c.daemon_socket);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    std::snprintf(link.error, sizeof link.error, "cannot connect to tesserad at %s: %s",
                  c.daemon_socket, std::strerror(errno));
    if (fd >= 0) close(fd);
    return;
  }
  // ASSUMPTION: a daemon that does not answer a registration within 2 s is not serving; the
  // process goes on without it rather than stall its first launch longer.
  timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  char request[512];
  std::snprintf(request, sizeof request, "{\"op\":\"register\",\"tenant\":\"%s\"%s}\n", tenant,
                c.registration_fields);
  char reply[1024];
  int page_fd = -1;
  if (!send_all(fd, request, std::strlen(request)) ||
      !receive_reply(fd, reply, sizeof reply, &page_fd)) {
    std::snprintf(link.error, sizeof link.error, "tesserad at %s did not answer the registration",
                  c.daemon_socket);
    close(fd);
    if (page_fd >= 0) close(page_fd);
    return;
  }
  if (char* nl = std::strchr(reply, '\n')) *nl = '\0';
  if (std::strstr(reply, "\"ok\":true") == nullptr || page_fd < 0) {
    std::snprintf(link.error, sizeof link.error, "tesserad refused the registration: %.240s",
                  reply);
    close(fd);
    if (page_fd >= 0) close(page_fd);
    return;
  }
  void* p = mmap(nullptr, daemon_abi::kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0);
  close(page_fd);
  auto* page = static_cast<daemon_abi::AssignmentPage*>(p);
  if (p == MAP_FAILED || page->magic != daemon_abi::kPageMagic ||
      page->version != daemon_abi::kPageVersion) {
    std::snprintf(link.error, sizeof link.error,
                  "tesserad's page is not one this interposer reads (version %u, expected %u)",
                  p == MAP_FAILED ? 0u : page->version, daemon_abi::kPageVersion);
    if (p != MAP_FAILED) munmap(p, daemon_abi::kPageBytes);
    close(fd);
    return;
  }
  for (const char* key : {"\"downgraded\":\"", "\"note\":\""}) {
    if (const char* d = std::strstr(reply, key)) {
      d += std::strlen(key);
      notice_log("tesserad: %.*s", static_cast<int>(std::strcspn(d, "\"")), d);
    }
  }
  constexpr const char* kPercentage = "\"mps_active_thread_percentage\":";
  if (const char* m = std::strstr(reply, kPercentage)) {
    const long percent = std::strtol(m + std::strlen(kPercentage), nullptr, 10);
    if (percent >= 1 && percent <= 100) link.mps_percentage = static_cast<int>(percent);
  }
  timeout = {0, 0};  // from now on the connection only waits for the daemon to go away
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  link.page = page;
  link.socket = fd;
  verbose_log("registered with tesserad at %s as '%s'", c.daemon_socket, tenant);
}

// The page launches follow. It changes only when the process registers again with a restarted
// daemon; the pages before stay mapped (a launch may still be reading one; 4 KiB per restart).
std::atomic<daemon_abi::AssignmentPage*> g_page{nullptr};
std::atomic<unsigned> g_registrations{0};
std::atomic<const Link*> g_attempted{nullptr};
// The connection that is the tenant's lease, for the child of a fork to close.
std::atomic<int> g_socket{-1};

// ASSUMPTION: trying a restarted daemon every 250 ms finds it soon after it is back, at the cost
// of a connect attempt (a failed one) four times a second while it is away.
constexpr timespec kRetry{0, 250'000'000};

// Blocks on the connection until the daemon goes away, then keeps the application running on what
// it had (a held assignment becomes the whole GPU: nothing is left to end the hold) and registers
// again once a daemon answers.
void watch(int socket) {
  for (;;) {
    char byte;
    const ssize_t n = recv(socket, &byte, 1, 0);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;  // the daemon sends nothing unasked
    // Unpublished before it is closed: a fork meanwhile must not close a reused descriptor.
    int published = socket;
    g_socket.compare_exchange_strong(published, -1, std::memory_order_acq_rel);
    close(socket);
    daemon_abi::AssignmentPage* old = g_page.load(std::memory_order_acquire);
    std::uint64_t word = old->assignment.load(std::memory_order_acquire);
    while (daemon_abi::unpack(word).sms == daemon_abi::kHoldSms) {
      daemon_abi::Assignment whole = daemon_abi::unpack(word);
      whole.sms = daemon_abi::kWholeGpuSms;
      if (old->assignment.compare_exchange_weak(word, daemon_abi::pack(whole))) break;
    }
    notice_log("tesserad at %s went away; launches keep their last assignment until it is back",
               config().daemon_socket);
    Link next;
    for (;;) {
      nanosleep(&kRetry, nullptr);
      next = Link{};
      register_with_daemon(next);
      if (next.page != nullptr) break;
    }
    g_page.store(next.page, std::memory_order_release);
    g_socket.store(next.socket, std::memory_order_release);
    g_registrations.fetch_add(1, std::memory_order_relaxed);
    publish_memory();
    notice_log("registered again with tesserad at %s", config().daemon_socket);
    socket = next.socket;
  }
}

struct Registration {
  std::once_flag once;
  Link link;
};
// The process's registration, made at most once. A forked child drops its parent's (below) and
// makes its own at its first launch; the parent's stays allocated in the child.
std::atomic<Registration*> g_registration{nullptr};
std::atomic<bool> g_fork_handler{false};

// Runs in the child of fork(), where the registration, its connection and its page are the
// parent's. The child must not keep the parent's lease open (the daemon would keep the parent's
// SMs while a worker lives on after it) nor count its launches on the parent's page. Only the
// forking thread exists here, and nothing is allocated.
void forget_parent_registration() {
  const int socket = g_socket.exchange(-1, std::memory_order_acq_rel);
  if (socket >= 0) close(socket);
  g_page.store(nullptr, std::memory_order_release);
  g_registrations.store(0, std::memory_order_relaxed);
  g_attempted.store(nullptr, std::memory_order_release);
  g_registration.store(nullptr, std::memory_order_release);
}

Registration& registration() {
  Registration* r = g_registration.load(std::memory_order_acquire);
  if (r == nullptr) {
    auto* fresh = new Registration;
    if (g_registration.compare_exchange_strong(r, fresh, std::memory_order_acq_rel)) {
      r = fresh;
    } else {
      delete fresh;
    }
  }
  return *r;
}

void register_first(Link& made) {
  if (config().daemon_socket[0] == '\0') return;
  // A child inherits the handler with the registration it undoes, so it is installed once.
  if (!g_fork_handler.exchange(true)) pthread_atfork(nullptr, nullptr, forget_parent_registration);
  register_with_daemon(made);
  if (made.page == nullptr) {
    notice_log("%s; launches go on without the daemon", made.error);
    return;
  }
  g_page.store(made.page, std::memory_order_release);
  g_socket.store(made.socket, std::memory_order_release);
  g_registrations.store(1, std::memory_order_relaxed);
  try {
    std::thread(watch, made.socket).detach();
  } catch (...) {
    // No thread: the registration holds, without re-registration after a restart.
  }
}

const Link& link() {
  Registration& r = registration();
  std::call_once(r.once, [&r] { register_first(r.link); });
  if (g_attempted.load(std::memory_order_acquire) == nullptr &&
      g_attempted.exchange(&r.link, std::memory_order_acq_rel) == nullptr) {
    publish_memory();
  }
  return r.link;
}

}  // namespace

daemon_abi::AssignmentPage* daemon_page() {
  link();
  return g_page.load(std::memory_order_acquire);
}

daemon_abi::AssignmentPage* daemon_page_if_attempted() {
  return g_attempted.load(std::memory_order_acquire) != nullptr
             ? g_page.load(std::memory_order_acquire)
             : nullptr;
}

unsigned daemon_registrations() {
  return g_registrations.load(std::memory_order_relaxed);
}

int daemon_mps_percentage() {
  const Link* l = g_attempted.load(std::memory_order_acquire);
  return l != nullptr && l->page != nullptr ? l->mps_percentage : 0;
}

const char* daemon_link_error() {
  const Link* l = g_attempted.load(std::memory_order_acquire);
  return l != nullptr ? l->error : "";
}

unsigned long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1'000'000'000ULL +
         static_cast<unsigned long long>(ts.tv_nsec);
}

}  // namespace tessera::interpose
