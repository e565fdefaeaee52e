#include "tessera/cli/stop_signals.hpp"

#include <pthread.h>

namespace tessera::cli {

StopSignals::StopSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals_, &previous_);
}

StopSignals::~StopSignals() {
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

std::string_view StopSignals::wait() {
  int signal = 0;
  sigwait(&signals_, &signal);
  return name(signal);
}

int StopSignals::take_pending() {
  const timespec now{0, 0};
  const int signal = sigtimedwait(&signals_, nullptr, &now);
  return signal > 0 ? signal : 0;
}

std::string_view StopSignals::name(int signal) {
  return signal == SIGINT ? "SIGINT" : "SIGTERM";
}

}  // namespace tessera::cli
