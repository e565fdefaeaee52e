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
#include "tessera/core/write_all.hpp"

// Present only in a process with a sanitizer runtime (weak: null otherwise). A fuzzer registers
// a death callback that saves the current input as a crash; in the child, whose failure the
// parent reports as an error, it would save inputs the parent handled.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

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

// Lowers a limit, never raising it past what this process may already use.
void lower_limit(int resource, rlim_t value) {
  rlimit now{};
  if (getrlimit(resource, &now) != 0) return;
  const rlim_t hard = now.rlim_max == RLIM_INFINITY ? value : std::min(now.rlim_max, value);
  const rlimit wanted{.rlim_cur = std::min(hard, value), .rlim_max = hard};
  setrlimit(resource, &wanted);
}

[[noreturn]] void child_main(int out_fd, int err_fd, const std::function<std::string()>& work,
                             const ChildLimits& limits, rlim_t address_space) {
  // Whatever the parent does with signals (handlers, a blocked SIGTERM it waits for), the child
  // dies of them the ordinary way, so the parent sees which one.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(nullptr);
  dup2(err_fd, STDERR_FILENO);
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
  _exit(core::write_all(kOutputFd, out) ? 0 : kExitWriteFailed);
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

// The last non-empty line of what the child printed, cut to kMaxPrintedBytes.
std::string last_line(std::string_view printed) {
  while (!printed.empty() && (printed.back() == '\n' || printed.back() == '\r')) {
    printed.remove_suffix(1);
  }
  const auto start = printed.find_last_of('\n');
  std::string_view line = start == std::string_view::npos ? printed : printed.substr(start + 1);
  if (line.size() > kMaxPrintedBytes) line = line.substr(line.size() - kMaxPrintedBytes);
  return std::string(line);
}

int milliseconds_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 60'000));
}

}  // namespace

std::expected<std::string, ChildFailure> run_in_child(const std::function<std::string()>& work,
                                                      const ChildLimits& limits) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return std::unexpected(
        ChildFailure{fmt::format("could not start (pipe: {})", std::strerror(errno)), {}});
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return std::unexpected(
        ChildFailure{fmt::format("could not start (pipe: {})", std::strerror(err)), {}});
  }
  const std::uint64_t mapped = mapped_bytes();
  const rlim_t address_space = mapped == 0 ? 0 : static_cast<rlim_t>(mapped + limits.memory_bytes);
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return std::unexpected(
        ChildFailure{fmt::format("could not start (fork: {})", std::strerror(err)), {}});
  }
  if (pid == 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    child_main(out_pipe[1], err_pipe[1], work, limits, address_space);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(limits.wall_seconds);
  std::string out;
  std::string printed;  // the end of the child's stderr, at most twice kMaxPrintedBytes
  std::string failure;  // set when the parent stops the child itself
  char buffer[64 * 1024];
  // Both pipes are read until the child closes them (it exits) or the parent gives up on it.
  pollfd fds[2] = {{.fd = out_pipe[0], .events = POLLIN, .revents = 0},
                   {.fd = err_pipe[0], .events = POLLIN, .revents = 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    const int ms = milliseconds_until(deadline);
    if (ms == 0) {
      failure = fmt::format("ran past its {} s limit", limits.wall_seconds);
      break;
    }
    if (poll(fds, 2, ms) <= 0) continue;  // EINTR or the deadline, which the next turn checks
    for (pollfd& p : fds) {
      if (p.fd < 0 || p.revents == 0) continue;
      const ssize_t n = ::read(p.fd, buffer, sizeof buffer);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {  // end of the pipe: the child has exited or is exiting
        ::close(p.fd);
        p.fd = -1;
        continue;
      }
      const std::string_view got(buffer, static_cast<std::size_t>(n));
      if (&p == &fds[1]) {
        printed.append(got);
        if (printed.size() > 2 * kMaxPrintedBytes) {
          printed.erase(0, printed.size() - 2 * kMaxPrintedBytes);
        }
        continue;
      }
      if (out.size() + got.size() > limits.max_output_bytes) {
        failure = fmt::format("produced more than {} of output",
                              core::describe_size(limits.max_output_bytes));
        break;
      }
      out.append(got);
    }
    if (!failure.empty()) break;
  }
  for (const pollfd& p : fds) {
    if (p.fd >= 0) ::close(p.fd);
  }
  if (!failure.empty()) kill(pid, SIGKILL);

  // Reap it: past the deadline it is killed, so this ends.
  int status = 0;
  for (bool killed = !failure.empty();;) {
    const pid_t w = waitpid(pid, &status, killed ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      return std::unexpected(
          ChildFailure{"was reaped elsewhere; its exit status is unknown", last_line(printed)});
    }
    if (milliseconds_until(deadline) == 0) {
      kill(pid, SIGKILL);
      killed = true;
      failure = fmt::format("ran past its {} s limit", limits.wall_seconds);
      continue;
    }
    poll(nullptr, 0, 1);
  }
  if (!failure.empty()) return std::unexpected(ChildFailure{failure, last_line(printed)});
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return out;
  return std::unexpected(ChildFailure{describe_status(status, limits), last_line(printed)});
}

}  // namespace tessera::hw::detail
