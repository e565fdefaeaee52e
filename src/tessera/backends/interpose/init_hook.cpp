// The wrapper handed out in place of cuInit. The driver reads what MPS takes from the
// environment once, when CUDA starts in the process (NVIDIA's MPS documentation: the client
// connects to the control daemon when CUDA is first initialised), so anything tesserad decides
// for the process's whole life must be in the environment before the real cuInit runs. Under
// the daemon the process therefore registers here, and sets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE to
// the percentage the daemon's reply gave (the mps-percentage mechanism), unless the environment
// already holds a lower one: both are caps, and the lower holds both.

#include "init_hook.hpp"

#include <cuda.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "config.hpp"
#include "daemon_link.hpp"
#include "real_driver.hpp"

namespace tessera::interpose {
namespace {

using InitFn = CUresult (*)(unsigned);

constexpr const char* kPercentageVariable = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE";

// Every cuInit waits for the first to finish preparing: a second thread's real cuInit must not
// start CUDA before the variable is set.
std::once_flag g_prepared;
std::atomic<int> g_percentage{0};

// A percentage the environment already holds (1-100), or 0.
int percentage_in_environment() {
  const char* text = std::getenv(kPercentageVariable);
  if (text == nullptr) return 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && value >= 1 && value <= 100 ? static_cast<int>(value) : 0;
}

// Once per process, at its first cuInit. setenv is not safe beside another thread's getenv; at
// CUDA's start the application's own threads have yet to touch CUDA, the usual place for it.
void prepare_environment() {
  const int own = percentage_in_environment();
  g_percentage.store(own, std::memory_order_relaxed);
  if (config().daemon_socket[0] == '\0' || daemon_page() == nullptr) return;
  const int daemon = daemon_mps_percentage();
  if (daemon == 0) return;
  if (own != 0 && own <= daemon) {
    verbose_log("%s=%d from the environment holds (tesserad gave %d)", kPercentageVariable, own,
                daemon);
    return;
  }
  char value[8];
  std::snprintf(value, sizeof value, "%d", daemon);
  if (setenv(kPercentageVariable, value, 1) != 0) {
    notice_log("cannot set %s=%d for MPS: the process runs without the daemon's cap",
               kPercentageVariable, daemon);
    return;
  }
  g_percentage.store(daemon, std::memory_order_relaxed);
  verbose_log("%s=%d, as tesserad assigned", kPercentageVariable, daemon);
}

CUresult init(unsigned flags) {
  std::call_once(g_prepared, prepare_environment);
  const auto real =
      reinterpret_cast<InitFn>(real_driver(false)->entry[static_cast<int>(Entry::kInit)]);
  return real(flags);
}

}  // namespace

int mps_percentage_at_start() {
  return g_percentage.load(std::memory_order_relaxed);
}

void* init_wrapper_of(Entry e) {
  return e == Entry::kInit ? reinterpret_cast<void*>(&init) : nullptr;
}

}  // namespace tessera::interpose
