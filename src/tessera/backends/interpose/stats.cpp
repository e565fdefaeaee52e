#include "stats.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "config.hpp"
#include "daemon_link.hpp"
#include "init_hook.hpp"
#include "memory_hooks.hpp"
#include "partition.hpp"

namespace tessera::interpose {
namespace {

struct Counters {
  std::atomic<unsigned long long> routed{0};
  std::atomic<unsigned long long> order_sync{0};
  std::atomic<unsigned long long> why[kWhyCount] = {};
  std::atomic<unsigned long long> lookups[2] = {};
  std::atomic<unsigned long long> unmatched{0};
};
Counters g_counters[kEntryCount];

constexpr const char* kWhyNames[kWhyCount] = {
    "not_configured",          "bad_config",       "driver_lacks_routing",  "no_context",
    "partition_failed",        "stream_capturing", "cooperative_too_large", "event_failed",
    "partition_launch_failed", "internal_error",   "invalid_arguments",     "assigned_whole_gpu",
    "hold_timed_out",
};

Counters& at(Entry e) {
  return g_counters[static_cast<int>(e)];
}

// A bounded appender: the summary is written at exit, where allocating is best avoided.
struct Out {
  char* p;
  unsigned long size;
  unsigned long used = 0;
  void add(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    if (used >= size) return;
    va_list args;
    va_start(args, format);
    const int n = std::vsnprintf(p + used, size - used, format, args);
    va_end(args);
    if (n > 0) used += static_cast<unsigned long>(n);
    if (used >= size) used = size;
  }
  void str(const char* s) {
    add("\"");
    for (; s != nullptr && *s != '\0'; ++s) {
      const unsigned char c = static_cast<unsigned char>(*s);
      if (c == '"' || c == '\\')
        add("\\%c", c);
      else if (c < 0x20)
        add("\\u%04x", c);
      else
        add("%c", c);
    }
    add("\"");
  }
};

void write_at_exit() {
  const Config& c = config();
  if (c.log_path[0] == '\0') return;
  char path[600];
  // "%p" in the path becomes the pid, so forked or parallel processes do not overwrite each other.
  const char* pid_at = std::strstr(c.log_path, "%p");
  if (pid_at != nullptr) {
    std::snprintf(path, sizeof path, "%.*s%d%s", static_cast<int>(pid_at - c.log_path), c.log_path,
                  static_cast<int>(getpid()), pid_at + 2);
  } else {
    std::snprintf(path, sizeof path, "%s", c.log_path);
  }
  // ASSUMPTION: 64 KiB holds any summary (ten entry points and up to 64 partitions take ~10 KiB);
  // a longer one would be cut short, not overflow (Out is bounded).
  static char text[64 * 1024];
  summary_json(text, sizeof text);
  std::FILE* f = std::fopen(path, "w");
  if (f == nullptr) {
    verbose_log("cannot write the summary to %s", path);
    return;
  }
  std::fputs(text, f);
  std::fputc('\n', f);
  std::fclose(f);
}

// Runs at exit (and if the library is unloaded).
__attribute__((destructor)) void at_exit() {
  write_at_exit();
}

}  // namespace

const char* why_name(Why w) {
  return kWhyNames[static_cast<int>(w)];
}

void count_routed(Entry e) {
  at(e).routed.fetch_add(1, std::memory_order_relaxed);
}
void count_passed(Entry e, Why why) {
  at(e).why[static_cast<int>(why)].fetch_add(1, std::memory_order_relaxed);
}
void count_order_sync(Entry e) {
  at(e).order_sync.fetch_add(1, std::memory_order_relaxed);
}
void count_lookup(Entry e, Lookup how) {
  at(e).lookups[static_cast<int>(how)].fetch_add(1, std::memory_order_relaxed);
}
void count_unmatched(int family) {
  if (family >= 0 && family < kEntryCount) {
    g_counters[family].unmatched.fetch_add(1, std::memory_order_relaxed);
  }
}

void summary_json(char* text, unsigned long size) {
  const Config& c = config();
  Out o{text, size};
  o.add("{\"tenant\": ");
  o.str(c.tenant);
  o.add(", \"daemon\": {\"socket\": ");
  o.str(c.daemon_socket);
  const daemon_abi::AssignmentPage* page = daemon_page_if_attempted();
  o.add(", \"registered\": %s, \"error\": ", page != nullptr ? "true" : "false");
  o.str(daemon_link_error());
  if (page != nullptr) {
    o.add(
        ", \"registrations\": %u, \"launches\": %llu, \"held_launches\": %llu, "
        "\"hold_timeouts\": %llu",
        daemon_registrations(), static_cast<unsigned long long>(page->launches.load()),
        static_cast<unsigned long long>(page->held_launches.load()),
        static_cast<unsigned long long>(page->hold_timeouts.load()));
    o.add(", \"mps_active_thread_percentage\": %d", mps_percentage_at_start());
  }
  o.add("}");
  o.add(", \"partition_sms_requested\": %u, \"config_error\": ", c.partition_sms);
  o.str(c.error);
  o.add(", \"partitions\": [");
  for_each_partition([&](const PartitionInfo& p, bool first) {
    o.add(
        "%s{\"device\": %d, \"first_sm\": %d, \"whole_gpu\": %s, \"stream_priority\": %d, "
        "\"sms\": %u, \"ok\": %s, \"error\": ",
        first ? "" : ", ", p.device, p.first_sm, p.whole ? "true" : "false", -p.priority, p.sms,
        p.ok ? "true" : "false");
    o.str(p.error);
    o.add("}");
  });
  const MemoryLedger& ledger = memory_ledger();
  const MemoryLedger::Totals m = ledger.totals();
  o.add("], \"memory\": {\"limit\": %llu, \"config_error\": ",
        static_cast<unsigned long long>(ledger.limit()));
  o.str(c.memory_error);
  o.add(
      ", \"used\": %llu, \"peak\": %llu, \"allocations\": %llu, \"refused\": %llu, "
      "\"untracked_frees\": %llu}",
      static_cast<unsigned long long>(m.used), static_cast<unsigned long long>(m.peak),
      static_cast<unsigned long long>(m.allocations), static_cast<unsigned long long>(m.refused),
      static_cast<unsigned long long>(m.untracked_frees));
  o.add(", \"entry_points\": {");
  for (int i = 0; i < kEntryCount; ++i) {
    const Counters& k = g_counters[i];
    o.add("%s", i == 0 ? "" : ", ");
    o.str(entry_symbol(static_cast<Entry>(i)));
    if (i >= kFirstMemoryEntry) {  // not launches: only how they were hooked
      o.add(
          ": {\"hooked_by_dlsym\": %llu, \"hooked_by_proc_address\": %llu, "
          "\"unmatched_proc_address\": %llu}",
          k.lookups[0].load(std::memory_order_relaxed),
          k.lookups[1].load(std::memory_order_relaxed),
          k.unmatched.load(std::memory_order_relaxed));
      continue;
    }
    unsigned long long passed = 0;
    for (const auto& w : k.why) passed += w.load(std::memory_order_relaxed);
    o.add(": {\"routed\": %llu, \"passed_through\": %llu, \"why\": {",
          k.routed.load(std::memory_order_relaxed), passed);
    bool first = true;
    for (int w = 0; w < kWhyCount; ++w) {
      const unsigned long long n = k.why[w].load(std::memory_order_relaxed);
      if (n == 0) continue;
      o.add("%s\"%s\": %llu", first ? "" : ", ", kWhyNames[w], n);
      first = false;
    }
    o.add(
        "}, \"order_syncs\": %llu, \"hooked_by_dlsym\": %llu, \"hooked_by_proc_address\": %llu, "
        "\"unmatched_proc_address\": %llu}",
        k.order_sync.load(std::memory_order_relaxed), k.lookups[0].load(std::memory_order_relaxed),
        k.lookups[1].load(std::memory_order_relaxed), k.unmatched.load(std::memory_order_relaxed));
  }
  o.add("}}");
}

}  // namespace tessera::interpose
