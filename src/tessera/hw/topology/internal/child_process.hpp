#pragma once
// Running code that may crash, loop or eat memory on untrusted input (libhwloc's XML import) in a
// forked child, so that whatever it does takes down only the child. Internal to tessera_hw.
//
// The child gets an address-space limit (RLIMIT_AS: what it inherits plus `memory_bytes`), a CPU
// limit (RLIMIT_CPU), no core dump, default signal dispositions and only its pipes besides stdin
// and stdout (stderr is one of them); it runs `work` and writes what `work` returns to the other.
// The parent reads at most `max_output_bytes`, and kills the child once `wall_seconds` have passed.
// Output counts only when the child then exits with status 0; anything else is a failure with its
// cause.

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

struct ChildFailure {
  // Why there is no output, as the rest of a sentence about the child: "crashed (SIGSEGV)",
  // "ran out of memory (its limit is 2 GiB)", "ran past its 30 s limit".
  std::string what;
  // The last line the child wrote to its stderr (a library's assertion, say), at most
  // kMaxPrintedBytes; empty if it wrote none. The child's stderr never reaches this process's.
  std::string printed;
};
inline constexpr std::size_t kMaxPrintedBytes = 200;

// What `work` returned, or why there is nothing. `work` must not log (the parent's logger may be
// mid-write in another thread at the fork) and reports failures through its output; an exception
// it throws ends the child as a failure.
std::expected<std::string, ChildFailure> run_in_child(const std::function<std::string()>& work,
                                                      const ChildLimits& limits);

}  // namespace tessera::hw::detail
