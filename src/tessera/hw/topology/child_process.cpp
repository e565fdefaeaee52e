#include "tessera/hw/topology/internal/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <new>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/core/file_read.hpp"

namespace tessera::hw::detail {

namespace {

// The child writes its output here: the pipe, moved past stdin, stdout and stderr.
constexpr int kOutputFd = 3;
// Exit statuses of failures the child notices itself.
constexpr int kExitOutOfMemory = 90;
constexpr int kExitException = 91;
constexpr int kExitWriteFailed = 92;

using Clock = std::chrono::steady_clock;

// The address space this process maps now (/proc/self/statm, in pages); 0 when unknown. The
// child's RLIMIT_AS counts what it inherits, so its budget is added to this.
std::uint64_t mapped_bytes() {
  std::ifstream in("/proc/self/statm");
  std::uint64_t pages = 0;
  if (!(in >> pages)) return 0;
  return pages * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Lowers a limit, never raising it past what this process may already use.
void lower_limit(int resource, rlim_t value) {
  rlimit now{};
  if (getrlimit(resource, &now) != 0) return;
  const rlim_t hard = now.rlim_max == RLIM_INFINITY ? value : std::min(now.rlim_max, value);
  const rlimit wanted{.rlim_cur = std::min(hard, value), .rlim_max = hard};
  setrlimit(resource, &wanted);
}

[[noreturn]] void child_main(int out_fd, const std::function<std::string()>& work,
                             const ChildLimits& limits, rlim_t address_space) {
  // Whatever the parent does with signals (handlers, a blocked SIGTERM it waits for), the child
  // dies of them the ordinary way, so the parent sees which one.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (out_fd != kOutputFd) dup2(out_fd, kOutputFd);
  close_range(kOutputFd + 1, ~0U, 0);  // the parent's sockets and files are not the child's

  lower_limit(RLIMIT_CORE, 0);
  // SIGXCPU at the soft limit, SIGKILL a second later if that is caught or ignored.
  const auto cpu = static_cast<rlim_t>(limits.cpu_seconds);
  rlimit cpu_limit{.rlim_cur = cpu, .rlim_max = cpu + 1};
  rlimit cpu_now{};
  if (getrlimit(RLIMIT_CPU, &cpu_now) == 0 && cpu_now.rlim_max != RLIM_INFINITY) {
    cpu_limit.rlim_max = std::min(cpu_limit.rlim_max, cpu_now.rlim_max);
    cpu_limit.rlim_cur = std::min(cpu_limit.rlim_cur, cpu_limit.rlim_max);
  }
  setrlimit(RLIMIT_CPU, &cpu_limit);
  if (address_space != 0) lower_limit(RLIMIT_AS, address_space);

  std::string out;
  try {
    out = work();
  } catch (const std::bad_alloc&) {
    _exit(kExitOutOfMemory);
  } catch (...) {
    _exit(kExitException);
  }
  _exit(write_all(kOutputFd, out) ? 0 : kExitWriteFailed);
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

std::string describe_status(int status, const ChildLimits& limits) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGXCPU) {
      return fmt::format("ran past its {} s CPU limit ({})", limits.cpu_seconds, signal_name(sig));
    }
    if (sig == SIGKILL) return fmt::format("was killed ({})", signal_name(sig));
    return fmt::format("crashed ({})", signal_name(sig));
  }
  if (WIFEXITED(status)) {
    switch (WEXITSTATUS(status)) {
      case kExitOutOfMemory:
        return fmt::format("ran out of memory (its limit is {} more than tessera's)",
                           core::describe_size(limits.memory_bytes));
      case kExitException: return "failed with an exception";
      case kExitWriteFailed: return "could not send its result";
      default: return fmt::format("exited with status {}", WEXITSTATUS(status));
    }
  }
  return fmt::format("ended with wait status {}", status);
}

int milliseconds_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 60'000));
}

}  // namespace

std::expected<std::string, std::string> run_in_child(const std::function<std::string()>& work,
                                                     const ChildLimits& limits) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return std::unexpected(fmt::format("could not start (pipe: {})", std::strerror(errno)));
  }
  const std::uint64_t mapped = mapped_bytes();
  const rlim_t address_space = mapped == 0 ? 0 : static_cast<rlim_t>(mapped + limits.memory_bytes);
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return std::unexpected(fmt::format("could not start (fork: {})", std::strerror(err)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], work, limits, address_space);
  }
  ::close(fds[1]);

  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(limits.wall_seconds);
  std::string out;
  std::string failure;  // set when the parent stops the child itself
  char buffer[64 * 1024];
  for (;;) {
    pollfd p{.fd = fds[0], .events = POLLIN, .revents = 0};
    const int ms = milliseconds_until(deadline);
    if (ms == 0) {
      failure = fmt::format("ran past its {} s limit", limits.wall_seconds);
      break;
    }
    const int ready = poll(&p, 1, ms);
    if (ready <= 0) continue;  // EINTR or the deadline, which the next turn checks
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // end of output: the child has exited or is exiting
    if (out.size() + static_cast<std::size_t>(n) > limits.max_output_bytes) {
      failure = fmt::format("produced more than {} of output",
                            core::describe_size(limits.max_output_bytes));
      break;
    }
    out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (!failure.empty()) kill(pid, SIGKILL);

  // Reap it: past the deadline it is killed, so this ends.
  int status = 0;
  for (bool killed = !failure.empty();;) {
    const pid_t w = waitpid(pid, &status, killed ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno == EINTR) continue;
    if (w < 0)
      return std::unexpected(std::string("was reaped elsewhere; its exit status is unknown"));
    if (milliseconds_until(deadline) == 0) {
      kill(pid, SIGKILL);
      killed = true;
      failure = fmt::format("ran past its {} s limit", limits.wall_seconds);
      continue;
    }
    poll(nullptr, 0, 1);
  }
  if (!failure.empty()) return std::unexpected(failure);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return out;
  return std::unexpected(describe_status(status, limits));
}

}  // namespace tessera::hw::detail
