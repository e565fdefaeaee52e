#include "entry_points.hpp"

#include <cstring>

namespace tessera::interpose {
namespace {

constexpr const char* kSymbols[kEntryCount] = {
    "cuLaunchKernel",
    "cuLaunchKernel_ptsz",
    "cuLaunchKernelEx",
    "cuLaunchKernelEx_ptsz",
    "cuLaunchCooperativeKernel",
    "cuLaunchCooperativeKernel_ptsz",
    "cuGraphLaunch",
    "cuGraphLaunch_ptsz",
    "cuGetProcAddress",
    "cuGetProcAddress_v2",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemGetInfo_v2",
    "cuMemAllocAsync",
    "cuMemAllocAsync_ptsz",
    "cuMemFreeAsync",
    "cuMemFreeAsync_ptsz",
    "cuMemCreate",
    "cuMemRelease",
    "cuMemAllocFromPoolAsync",
    "cuMemAllocFromPoolAsync_ptsz",
    "cuMemAllocPitch_v2",
    "cuMemAllocManaged",
    "cuInit",
};

}  // namespace

const char* entry_symbol(Entry e) {
  return kSymbols[static_cast<int>(e)];
}

bool entry_is_ptsz(Entry e) {
  const int i = static_cast<int>(e);
  return i < kLaunchEntryCount && i % 2 == 1;
}

int entry_by_symbol(const char* symbol) {
  // Every wrapped name starts with "cu": a cheap reject for the process's other lookups.
  if (symbol == nullptr || symbol[0] != 'c' || symbol[1] != 'u') return -1;
  for (int i = 0; i < kEntryCount; ++i) {
    if (std::strcmp(symbol, kSymbols[i]) == 0) return i;
  }
  return -1;
}

int family_by_base_name(const char* symbol) {
  if (symbol == nullptr) return -1;
  for (int i = 0; i < kLaunchEntryCount; i += 2) {
    if (std::strcmp(symbol, kSymbols[i]) == 0) return i;
  }
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) return static_cast<int>(Entry::kGetProcAddress);
  // A memory entry's base name is its symbol less "_v2" or "_ptsz"; the plain variant comes first.
  const std::size_t n = std::strlen(symbol);
  if (std::strcmp(symbol, "cuInit") == 0) return static_cast<int>(Entry::kInit);
  for (int i = kFirstMemoryEntry; i < static_cast<int>(Entry::kInit); ++i) {
    const char* exported = kSymbols[i];
    if (std::strncmp(symbol, exported, n) != 0) continue;
    const char* rest = exported + n;
    if (*rest == '\0' || std::strcmp(rest, "_v2") == 0 || std::strcmp(rest, "_ptsz") == 0) return i;
  }
  return -1;
}

}  // namespace tessera::interpose
