#pragma once
// Per-entry-point counters (lock-free) and the JSON summary written to $TESSERA_INTERPOSE_LOG when
// the process exits.

#include "entry_points.hpp"

namespace tessera::interpose {

// Why a launch went to the application's own stream instead of the partition.
enum class Why : int {
  kNotConfigured,          // TESSERA_PARTITION_SMS absent
  kBadConfig,              // TESSERA_PARTITION_SMS not a positive integer
  kDriverLacksRouting,     // libcuda lacks a green-context or event function
  kNoContext,              // no current context (the launch itself will fail the same way)
  kPartitionFailed,        // the green context could not be made in this context
  kStreamCapturing,        // the stream is being captured into a graph (or the query failed)
  kCooperativeTooLarge,    // the cooperative grid does not fit on the partition's SMs
  kEventFailed,            // recording or waiting on the ordering event failed
  kPartitionLaunchFailed,  // the launch on the partition stream failed; retried on the app's
  kInternalError,          // an exception inside the interposer
  kInvalidArguments,       // e.g. a null CUlaunchConfig: the driver rejects it, untouched
  kAssignedWholeGpu,       // the daemon assigned the whole GPU at the least priority
  kHoldTimedOut,           // the daemon assigned no SMs for longer than the hold limit
};
inline constexpr int kWhyCount = 13;
const char* why_name(Why w);

// How a wrapper was handed out.
enum class Lookup : int { kDlsym, kGetProcAddress };

void count_routed(Entry e);
void count_passed(Entry e, Why why);
// A routed launch whose closing event failed: the interposer synchronised the partition stream
// so the application's later work still comes after the kernel.
void count_order_sync(Entry e);
void count_lookup(Entry e, Lookup how);
// cuGetProcAddress returned, for a wrapped family, a pointer that is none of the exported
// variants: handed back unwrapped (those launches are not seen).
void count_unmatched(int family);

// The summary as JSON text into `out` (truncated at `size`); used at exit and by tests.
void summary_json(char* out, unsigned long size);

}  // namespace tessera::interpose
