#pragma once
// Running code that may crash, loop or eat memory on untrusted input (libhwloc's XML import) in a
// forked child, so that whatever it does takes down only the child. Internal to tessera_hw.
//
// The child gets an address-space limit (RLIMIT_AS: what it inherits plus `memory_bytes`), a CPU
// limit (RLIMIT_CPU), no core dump, default signal dispositions and only its pipe besides stdin,
// stdout and stderr; it runs `work` and writes what `work` returns to the pipe. The parent reads
// at most `max_output_bytes`, and kills the child once `wall_seconds` have passed. Output counts
// only when the child then exits with status 0; anything else is a failure with its cause.

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <string>

namespace tessera::hw::detail {

struct ChildLimits {
  std::uint64_t memory_bytes = 2ULL << 30;
  int cpu_seconds = 20;
  int wall_seconds = 30;
  std::size_t max_output_bytes = 256 << 20;
};

// What `work` returned, or why there is nothing, as the rest of a sentence about the child:
// "crashed (SIGSEGV)", "ran out of memory (its limit is 2 GiB)", "was stopped after 30 s".
// `work` must not log (the parent's logger may be mid-write in another thread at the fork) and
// reports failures through its output; an exception it throws ends the child as a failure.
std::expected<std::string, std::string> run_in_child(const std::function<std::string()>& work,
                                                     const ChildLimits& limits);

}  // namespace tessera::hw::detail
