// The wrappers handed out in place of libcuda's memory entry points: each allocation is held in
// the tenant's ledger (memory_ledger.hpp) before it reaches the driver and refused with
// CUDA_ERROR_OUT_OF_MEMORY past TESSERA_MEMORY_LIMIT; cuMemGetInfo answers with the limit.

#include "memory_hooks.hpp"

#include <cuda.h>

#include "config.hpp"
#include "real_driver.hpp"

namespace tessera::interpose {
namespace {

using MemAllocFn = CUresult (*)(CUdeviceptr*, size_t);
using MemFreeFn = CUresult (*)(CUdeviceptr);
using MemGetInfoFn = CUresult (*)(size_t*, size_t*);

template <class F>
F real(Entry e) {
  return reinterpret_cast<F>(real_driver(false)->entry[static_cast<int>(e)]);
}

CUresult mem_alloc(CUdeviceptr* out, size_t bytes) {
  const auto fn = real<MemAllocFn>(Entry::kMemAlloc);
  // Invalid calls (no output, zero bytes) are the driver's to reject, untouched.
  if (out == nullptr || bytes == 0) return fn(out, bytes);
  MemoryLedger& ledger = memory_ledger();
  if (!ledger.reserve(bytes)) {
    verbose_log("tenant '%s': cuMemAlloc of %zu bytes refused: %llu of its %llu bytes in use",
                config().tenant, bytes, static_cast<unsigned long long>(ledger.totals().used),
                static_cast<unsigned long long>(ledger.limit()));
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const CUresult r = fn(out, bytes);
  if (r == CUDA_SUCCESS) {
    ledger.commit(*out, bytes);
  } else {
    ledger.cancel(bytes);
  }
  return r;
}

CUresult mem_free(CUdeviceptr ptr) {
  const CUresult r = real<MemFreeFn>(Entry::kMemFree)(ptr);
  if (r == CUDA_SUCCESS && ptr != 0) memory_ledger().release(ptr);
  return r;
}

CUresult mem_get_info(size_t* free_bytes, size_t* total) {
  const CUresult r = real<MemGetInfoFn>(Entry::kMemGetInfo)(free_bytes, total);
  if (r != CUDA_SUCCESS || free_bytes == nullptr || total == nullptr) return r;
  const MemoryLedger::Info info = memory_ledger().info(*free_bytes, *total);
  *free_bytes = static_cast<size_t>(info.free);
  *total = static_cast<size_t>(info.total);
  return r;
}

}  // namespace

MemoryLedger& memory_ledger() {
  static MemoryLedger ledger(config().memory_limit);
  return ledger;
}

void* memory_wrapper_of(Entry e) {
  switch (e) {
    case Entry::kMemAlloc: return reinterpret_cast<void*>(&mem_alloc);
    case Entry::kMemFree: return reinterpret_cast<void*>(&mem_free);
    case Entry::kMemGetInfo: return reinterpret_cast<void*>(&mem_get_info);
    default: return nullptr;
  }
}

}  // namespace tessera::interpose
