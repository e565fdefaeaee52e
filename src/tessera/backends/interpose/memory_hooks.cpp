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
using MemAllocAsyncFn = CUresult (*)(CUdeviceptr*, size_t, CUstream);
using MemFreeAsyncFn = CUresult (*)(CUdeviceptr, CUstream);
using MemCreateFn = CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                                 unsigned long long);
using MemReleaseFn = CUresult (*)(CUmemGenericAllocationHandle);

template <class F>
F real(Entry e) {
  return reinterpret_cast<F>(real_driver(false)->entry[static_cast<int>(e)]);
}

// An allocation held in the ledger before `allocate` makes it: refused past the limit, given
// back if the driver fails it. `allocate(name)` makes it and writes its name.
template <class Allocate>
CUresult held(Entry e, Named kind, std::uint64_t bytes, Allocate&& allocate) {
  MemoryLedger& ledger = memory_ledger();
  if (!ledger.reserve(bytes)) {
    verbose_log("tenant '%s': %s of %llu bytes refused: %llu of its %llu bytes in use",
                config().tenant, entry_symbol(e), static_cast<unsigned long long>(bytes),
                static_cast<unsigned long long>(ledger.totals().used),
                static_cast<unsigned long long>(ledger.limit()));
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::uint64_t name = 0;
  const CUresult r = allocate(name);
  if (r == CUDA_SUCCESS) {
    ledger.commit(kind, name, bytes);
  } else {
    ledger.cancel(bytes);
  }
  return r;
}

// Invalid calls (no output, zero bytes) are the driver's to reject, untouched.
CUresult mem_alloc(CUdeviceptr* out, size_t bytes) {
  const auto fn = real<MemAllocFn>(Entry::kMemAlloc);
  if (out == nullptr || bytes == 0) return fn(out, bytes);
  return held(Entry::kMemAlloc, Named::kAddress, bytes, [&](std::uint64_t& name) {
    const CUresult r = fn(out, bytes);
    name = *out;
    return r;
  });
}

CUresult mem_free(CUdeviceptr ptr) {
  const CUresult r = real<MemFreeFn>(Entry::kMemFree)(ptr);
  if (r == CUDA_SUCCESS && ptr != 0) memory_ledger().release(Named::kAddress, ptr);
  return r;
}

// Counted when the call is made: the memory is the stream's from then on.
template <Entry E>
CUresult mem_alloc_async(CUdeviceptr* out, size_t bytes, CUstream stream) {
  const auto fn = real<MemAllocAsyncFn>(E);
  if (out == nullptr || bytes == 0) return fn(out, bytes, stream);
  return held(E, Named::kAddress, bytes, [&](std::uint64_t& name) {
    const CUresult r = fn(out, bytes, stream);
    name = *out;
    return r;
  });
}

// Given back when the free is enqueued: the tenant may not touch the memory after it.
template <Entry E>
CUresult mem_free_async(CUdeviceptr ptr, CUstream stream) {
  const CUresult r = real<MemFreeAsyncFn>(E)(ptr, stream);
  if (r == CUDA_SUCCESS && ptr != 0) memory_ledger().release(Named::kAddress, ptr);
  return r;
}

// A physical allocation counts from cuMemCreate to cuMemRelease, however often it is mapped.
CUresult mem_create(CUmemGenericAllocationHandle* handle, size_t bytes,
                    const CUmemAllocationProp* prop, unsigned long long flags) {
  const auto fn = real<MemCreateFn>(Entry::kMemCreate);
  if (handle == nullptr || bytes == 0) return fn(handle, bytes, prop, flags);
  return held(Entry::kMemCreate, Named::kHandle, bytes, [&](std::uint64_t& name) {
    const CUresult r = fn(handle, bytes, prop, flags);
    name = *handle;
    return r;
  });
}

CUresult mem_release(CUmemGenericAllocationHandle handle) {
  const CUresult r = real<MemReleaseFn>(Entry::kMemRelease)(handle);
  if (r == CUDA_SUCCESS) memory_ledger().release(Named::kHandle, handle);
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
    case Entry::kMemAllocAsync:
      return reinterpret_cast<void*>(&mem_alloc_async<Entry::kMemAllocAsync>);
    case Entry::kMemAllocAsyncPtsz:
      return reinterpret_cast<void*>(&mem_alloc_async<Entry::kMemAllocAsyncPtsz>);
    case Entry::kMemFreeAsync:
      return reinterpret_cast<void*>(&mem_free_async<Entry::kMemFreeAsync>);
    case Entry::kMemFreeAsyncPtsz:
      return reinterpret_cast<void*>(&mem_free_async<Entry::kMemFreeAsyncPtsz>);
    case Entry::kMemCreate: return reinterpret_cast<void*>(&mem_create);
    case Entry::kMemRelease: return reinterpret_cast<void*>(&mem_release);
    default: return nullptr;
  }
}

}  // namespace tessera::interpose
