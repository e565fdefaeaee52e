#pragma once
// SIGINT and SIGTERM for the servers (agent, extender) and the MIG manager: blocked before any
// thread starts, so every thread inherits the mask and none is interrupted, then taken by the
// main thread (sigwait, or a look between events), so a stop is an orderly one.

#include <csignal>
#include <string_view>

namespace tessera::cli {

class StopSignals {
 public:
  // Blocks SIGINT and SIGTERM in the calling thread; construct before starting threads.
  StopSignals();
  // Restores the mask the calling thread had.
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Waits for one of the two; returns its name, "SIGINT" or "SIGTERM".
  std::string_view wait();
  // The signal that has arrived (taking it), or 0 when none has: for a loop that looks between
  // its own events.
  int take_pending();
  static std::string_view name(int signal);

 private:
  sigset_t signals_;
  sigset_t previous_;
};

}  // namespace tessera::cli
