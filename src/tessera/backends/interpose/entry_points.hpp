#pragma once
// The libcuda entry points the interposer wraps, by their exact exported names. Each variant is
// its own entry: a _ptsz function treats the null stream as the per-thread default stream, the
// plain one as the legacy stream, so a wrapper must forward to exactly the variant it replaced.

namespace tessera::interpose {

enum class Entry : int {
  kLaunchKernel,
  kLaunchKernelPtsz,
  kLaunchKernelEx,
  kLaunchKernelExPtsz,
  kLaunchCooperativeKernel,
  kLaunchCooperativeKernelPtsz,
  kGraphLaunch,
  kGraphLaunchPtsz,
  kGetProcAddress,    // the CUDA 11.3 ABI: (symbol, pfn, cudaVersion, flags)
  kGetProcAddressV2,  // the CUDA 12.0 ABI: adds CUdriverProcAddressQueryResult*
  // Device memory, counted against the tenant's limit (memory_hooks.cpp).
  kMemAlloc,       // cuMemAlloc_v2
  kMemFree,        // cuMemFree_v2
  kMemGetInfo,     // cuMemGetInfo_v2
  kMemAllocAsync,  // stream-ordered (CUDA 11.2)
  kMemAllocAsyncPtsz,
  kMemFreeAsync,
  kMemFreeAsyncPtsz,
  kMemCreate,  // the virtual memory API's physical allocations (CUDA 10.2)
  kMemRelease,
  kMemAllocFromPoolAsync,  // from a pool the application made
  kMemAllocFromPoolAsyncPtsz,
  kMemAllocPitch,    // cuMemAllocPitch_v2
  kMemAllocManaged,  // unified memory
  // CUDA's start in the process (init_hook.cpp): the last moment to set what the driver reads
  // from the environment.
  kInit,
};
inline constexpr int kEntryCount = 24;
inline constexpr int kLaunchEntryCount = 8;   // the first eight are launches
inline constexpr int kFirstMemoryEntry = 10;  // then the two lookups, then memory, then cuInit

// The exported libcuda symbol of `e` (cuda.h:159, 203-226 name the _v2 and _ptsz spellings).
const char* entry_symbol(Entry e);
// Whether `e` is a per-thread-default-stream variant.
bool entry_is_ptsz(Entry e);
// The entry whose exported symbol is `symbol`, or -1.
int entry_by_symbol(const char* symbol);
// The family a cuGetProcAddress request names ("cuLaunchKernel", ..., "cuGetProcAddress",
// "cuMemAlloc", ..., "cuInit"): the index of its plain entry, or -1. cuGetProcAddress takes base
// names and picks the variant from its flags, so this is how an unmatched pointer is attributed.
int family_by_base_name(const char* symbol);

}  // namespace tessera::interpose
