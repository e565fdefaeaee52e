#pragma once
// The tenant's configuration, read once from the environment:
//   TESSERA_TENANT=name           a label for the summary
//   TESSERA_PARTITION_SMS=N       route launches into a green context of N SMs; absent: pass
//                                 every launch through (still counted)
//   TESSERA_MEMORY_LIMIT=bytes    refuse device allocations past this much (memory_ledger.hpp's
//                                 units: 20GiB, 512MiB, ...); cuMemGetInfo answers with it.
//                                 Absent: allocations are counted, not limited
//   TESSERA_DAEMON_SOCKET=path    register with tesserad there when CUDA starts (cuInit), else
//                                 at the first launch or allocation, and follow what it assigns
//                                 (daemon_link.hpp);
//                                 TESSERA_PARTITION_SMS is then ignored. Unreachable: behave as
//                                 without it
//   TESSERA_CLASS=latency-critical|best-effort, TESSERA_PRIORITY=N, TESSERA_TPOT_SLO_MS=ms,
//   TESSERA_TTFT_SLO_MS=ms, TESSERA_SM_SHARE=fraction, TESSERA_DEVICE=ordinal
//                                 what the registration tells the daemon
//                                 (the daemon checks them; absent: its defaults)
//   TESSERA_HOLD_LIMIT_MS=ms      longest a launch waits while the daemon assigns no SMs before
//                                 it goes ahead on the application's stream (default 100)
//   TESSERA_INTERPOSE_LOG=path    write the JSON summary there at exit ("%p" becomes the pid)
//   TESSERA_INTERPOSE_VERBOSE=1   log to stderr

namespace tessera::interpose {

struct Config {
  bool configured = false;  // TESSERA_PARTITION_SMS is set
  bool valid = false;       // ... and is a positive integer
  unsigned partition_sms = 0;
  bool verbose = false;
  char tenant[128] = {};
  char log_path[512] = {};
  char error[192] = {};                 // why TESSERA_PARTITION_SMS is not valid
  unsigned long long memory_limit = 0;  // bytes; 0: none
  char memory_error[192] = {};          // why TESSERA_MEMORY_LIMIT is not valid (then: none)
  char daemon_socket[108] = {};         // TESSERA_DAEMON_SOCKET (sun_path's size)
  // The registration's optional fields as JSON members (",\"priority\":5..."), each only when
  // its variable is set; passed on for the daemon to check.
  char registration_fields[256] = {};
  long long hold_limit_ns = 100'000'000;
};

const Config& config();

// printf-style line on stderr, prefixed "tessera_interpose: ", only when verbose.
void verbose_log(const char* format, ...) __attribute__((format(printf, 1, 2)));
// The same line whether verbose or not: for what the application must hear about.
void notice_log(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace tessera::interpose
