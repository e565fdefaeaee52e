#pragma once
// The page one tenant process shares with tesserad: a memfd the daemon makes per tenant and hands
// over with the registration reply (SCM_RIGHTS). The daemon writes the tenant's assignment; the
// interposer reads it on every launch with one acquire load, no system call, and writes what the
// policy needs to see (launches, the time of the last one, launches it held). A tenant sees only
// its own page. Header-only and std-only: libtessera_interpose.so includes it and links no tessera
// library.
//
// Fail-open: the mapping outlives the daemon, so if the daemon dies the application keeps
// launching on its last assignment.

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tessera::daemon_abi {

inline constexpr std::uint32_t kPageMagic = 0x61737374;  // "tssa"
// Changes whenever the layout does: an interposer and a daemon of different builds refuse each
// other's pages instead of misreading them.
inline constexpr std::uint32_t kPageVersion = 3;
inline constexpr std::size_t kPageBytes = 4096;

// One assignment in one 64-bit word, so a launch never sees the first SM of one assignment with
// the count or priority of another: bits 0-15 the SM count, 16-31 the first SM, 32-39 the stream
// priority, 40-63 a sequence number that grows (modulo 2^24) with every change.
//   count == kHoldSms:       no SMs now: hold launches (for at most the interposer's hold limit)
//   count == kWholeGpuSms:   no partition: with priority 0 launches go to the application's own
//                            stream unchanged, above 0 to a stream of that priority on the whole
//                            GPU
//   otherwise:               a stream of that priority in a green context of SMs
//                            [first, first + count) of the device
// The priority counts levels above the least urgent (CUDA's 0): the stream is made with CUDA
// priority -priority, which the driver clamps to the device's range (cuStreamCreateWithPriority).
inline constexpr std::uint32_t kHoldSms = 0;
inline constexpr std::uint32_t kWholeGpuSms = 0xffff;
inline constexpr std::uint32_t kMaxStreamPriority = 0xff;
inline constexpr std::uint32_t kSequenceMask = 0xffffff;

struct Assignment {
  std::uint32_t first_sm = 0;
  std::uint32_t sms = kWholeGpuSms;
  std::uint32_t sequence = 0;
  std::uint32_t priority = 0;
};

constexpr std::uint64_t pack(Assignment a) {
  return (static_cast<std::uint64_t>(a.sequence & kSequenceMask) << 40) |
         (static_cast<std::uint64_t>(a.priority & kMaxStreamPriority) << 32) |
         (static_cast<std::uint64_t>(a.first_sm & 0xffff) << 16) | (a.sms & 0xffff);
}
constexpr Assignment unpack(std::uint64_t word) {
  return {static_cast<std::uint32_t>((word >> 16) & 0xffff),
          static_cast<std::uint32_t>(word & 0xffff), static_cast<std::uint32_t>(word >> 40),
          static_cast<std::uint32_t>((word >> 32) & kMaxStreamPriority)};
}

struct AssignmentPage {
  std::uint32_t magic;
  std::uint32_t version;
  // Written by the daemon. Its own cache line: the interposer's counters change on every launch.
  alignas(64) std::atomic<std::uint64_t> assignment;
  // The device's partition step: the interposer splits the device into groups of this many SMs
  // (one split call, so groups combine into one green context) and takes those in its range.
  std::atomic<std::uint32_t> granule_sms;
  // A device memory limit the daemon sets (`ctl set --memory-limit`), in bytes; 0: none. The
  // interposer reads it at every allocation and cuMemGetInfo and holds the tenant to the lower of
  // it and its own TESSERA_MEMORY_LIMIT.
  std::atomic<std::uint64_t> memory_limit_assigned;
  // Written by the interposer (CLOCK_MONOTONIC, which every process on the node shares).
  alignas(64) std::atomic<std::uint64_t> launches;
  std::atomic<std::uint64_t> last_launch_ns;
  std::atomic<std::uint64_t> held_launches;  // launches that waited for SMs
  std::atomic<std::uint64_t> held_ns;        // their total wait
  std::atomic<std::uint64_t> hold_timeouts;  // waits that reached the limit and went ahead
  std::atomic<std::uint64_t> routed_sms;     // SMs of the partition the last routed launch used
  // The interposer's memory ledger: bytes held, the limit in force (0: none), allocations it
  // refused.
  std::atomic<std::uint64_t> memory_used;
  std::atomic<std::uint64_t> memory_limit;
  std::atomic<std::uint64_t> memory_refused;
  // Graph launches timed on the GPU (events around each on the partition stream): a serving
  // engine that captures its decode step launches one graph per step, so these are its steps.
  // `steps` counts the timed ones finished; the last one's duration and the SMs it ran on.
  std::atomic<std::uint64_t> steps;
  std::atomic<std::uint64_t> last_step_ns;
  std::atomic<std::uint64_t> last_step_sms;
};
static_assert(sizeof(AssignmentPage) <= kPageBytes);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "the page's atomics must be lock-free to work between processes");

}  // namespace tessera::daemon_abi
