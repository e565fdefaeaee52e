#pragma once
// SIGINT and SIGTERM for the servers (agent, extender): blocked before any thread starts, so every
// thread inherits the mask and none is interrupted, then taken by the main thread with sigwait,
// so a stop is an orderly one.

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

 private:
  sigset_t signals_;
  sigset_t previous_;
};

}  // namespace tessera::cli
