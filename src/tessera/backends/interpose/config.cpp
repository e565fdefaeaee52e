#include "config.hpp"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "memory_ledger.hpp"

namespace tessera::interpose {
namespace {

void copy(char* out, std::size_t size, const char* in) {
  std::snprintf(out, size, "%s", in != nullptr ? in : "");
}

// Appends ,"key":value for an environment variable that is set: a string value quoted (only
// letters, digits and '-' pass, so nothing needs escaping), a number as written if it is one.
void add_field(Config& c, const char* variable, const char* key, bool quoted) {
  const char* v = std::getenv(variable);
  if (v == nullptr || *v == '\0') return;
  bool clean = std::strlen(v) < 32;
  for (const char* p = v; clean && *p != '\0'; ++p) {
    const char ch = *p;
    clean = (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ||
            (quoted && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')));
  }
  if (!clean) {
    notice_log("%s='%.40s' is not a valid value; the registration leaves it out", variable, v);
    return;
  }
  const std::size_t used = std::strlen(c.registration_fields);
  std::snprintf(c.registration_fields + used, sizeof c.registration_fields - used,
                quoted ? ",\"%s\":\"%s\"" : ",\"%s\":%s", key, v);
}

Config read_config() {
  Config c;
  copy(c.daemon_socket, sizeof c.daemon_socket, std::getenv("TESSERA_DAEMON_SOCKET"));
  add_field(c, "TESSERA_CLASS", "class", true);
  add_field(c, "TESSERA_PRIORITY", "priority", false);
  add_field(c, "TESSERA_TPOT_SLO_MS", "tpot_slo_ms", false);
  add_field(c, "TESSERA_TTFT_SLO_MS", "ttft_slo_ms", false);
  add_field(c, "TESSERA_SM_SHARE", "sm_share", false);
  add_field(c, "TESSERA_DEVICE", "device", false);
  if (const char* hold = std::getenv("TESSERA_HOLD_LIMIT_MS")) {
    char* end = nullptr;
    const double ms = std::strtod(hold, &end);
    // ASSUMPTION: holding a launch for more than a minute is never wanted.
    if (end != hold && *end == '\0' && ms >= 0 && ms <= 60'000) {
      c.hold_limit_ns = static_cast<long long>(ms * 1e6);
    } else {
      notice_log("TESSERA_HOLD_LIMIT_MS='%.40s' is not 0-60000 ms; using 100", hold);
    }
  }
  copy(c.tenant, sizeof c.tenant, std::getenv("TESSERA_TENANT"));
  copy(c.log_path, sizeof c.log_path, std::getenv("TESSERA_INTERPOSE_LOG"));
  const char* verbose = std::getenv("TESSERA_INTERPOSE_VERBOSE");
  c.verbose = verbose != nullptr && std::strcmp(verbose, "1") == 0;
  if (const char* limit = std::getenv("TESSERA_MEMORY_LIMIT")) {
    std::uint64_t bytes = 0;
    if (parse_bytes(limit, bytes)) {
      c.memory_limit = bytes;
    } else {
      std::snprintf(c.memory_error, sizeof c.memory_error,
                    "TESSERA_MEMORY_LIMIT='%s' is not a byte count (20GiB, 512MiB, ...); memory "
                    "is counted, not limited",
                    limit);
    }
  }
  const char* sms = std::getenv("TESSERA_PARTITION_SMS");
  if (sms == nullptr) return c;
  c.configured = true;
  char* end = nullptr;
  errno = 0;
  const unsigned long n = std::strtoul(sms, &end, 10);
  // ASSUMPTION: no GPU has 100000 SMs (an H200 has 132); a larger value is a typo.
  if (end == sms || *end != '\0' || errno != 0 || n == 0 || n > 100000 || sms[0] == '-') {
    std::snprintf(c.error, sizeof c.error,
                  "TESSERA_PARTITION_SMS='%s' is not a positive SM count; launches pass through",
                  sms);
    return c;
  }
  c.partition_sms = static_cast<unsigned>(n);
  c.valid = true;
  return c;
}

}  // namespace

const Config& config() {
  static const Config c = read_config();
  return c;
}

namespace {

void log_line(const char* format, va_list args) {
  char line[512];
  std::vsnprintf(line, sizeof line, format, args);
  std::fprintf(stderr, "tessera_interpose: %s\n", line);
}

}  // namespace

void verbose_log(const char* format, ...) {
  if (!config().verbose) return;
  va_list args;
  va_start(args, format);
  log_line(format, args);
  va_end(args);
}

void notice_log(const char* format, ...) {
  va_list args;
  va_start(args, format);
  log_line(format, args);
  va_end(args);
}

}  // namespace tessera::interpose
