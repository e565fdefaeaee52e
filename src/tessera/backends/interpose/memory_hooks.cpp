// The wrappers handed out in place of libcuda's memory entry points: each allocation is held in
// the tenant's ledger (memory_ledger.hpp) before it reaches the driver and refused with
// CUDA_ERROR_OUT_OF_MEMORY past the tenant's limit; cuMemGetInfo answers with the limit. The
// limit is TESSERA_MEMORY_LIMIT, or under tesserad the lower of it and the one the daemon sets
// (read from the page at every allocation and cuMemGetInfo; the process registers with the
// daemon at its first allocation if it has not launched yet).

#include "memory_hooks.hpp"

#include <cuda.h>

#include <algorithm>
#include <cstdint>

#include "config.hpp"
#include "daemon_link.hpp"
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
using MemAllocPitchFn = CUresult (*)(CUdeviceptr*, size_t*, size_t, size_t, unsigned);
using MemAllocManagedFn = CUresult (*)(CUdeviceptr*, size_t, unsigned);
using MemAllocFromPoolAsyncFn = CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);

template <class F>
F real(Entry e) {
  return reinterpret_cast<F>(real_driver(false)->entry[static_cast<int>(e)]);
}

// An allocation held in the ledger before `allocate` makes it: refused past the limit, given
// back if the driver fails it. `allocate(name, actual)` makes it and writes its name (and its
// size, where the driver rounds it up).
// The ledger, its limit brought up to what the daemon (if any) says now.
MemoryLedger& current_ledger() {
  MemoryLedger& ledger = memory_ledger();
  if (config().daemon_socket[0] == '\0') return ledger;
  const daemon_abi::AssignmentPage* page = daemon_page();
  if (page == nullptr) return ledger;
  const std::uint64_t own = config().memory_limit;
  const std::uint64_t daemon = page->memory_limit_assigned.load(std::memory_order_acquire);
  const std::uint64_t limit = own == 0 ? daemon : daemon == 0 ? own : std::min(own, daemon);
  if (limit != ledger.limit()) ledger.set_limit(limit);
  return ledger;
}

template <class Allocate>
CUresult held(Entry e, Named kind, std::uint64_t bytes, Allocate&& allocate) {
  MemoryLedger& ledger = current_ledger();
  if (!ledger.reserve(bytes)) {
    // The first refusal is always said: an allocator's out-of-memory would otherwise not say
    // whose limit it met. Later ones are logged when verbose; all are counted in the summary.
    const MemoryLedger::Totals t = ledger.totals();
    if (t.refused == 1 || config().verbose) {
      notice_log(
          "tenant '%s': %s of %llu bytes refused: %llu of its limit of %llu bytes in use "
          "(TESSERA_MEMORY_LIMIT or the daemon's)%s",
          config().tenant, entry_symbol(e), static_cast<unsigned long long>(bytes),
          static_cast<unsigned long long>(t.used), static_cast<unsigned long long>(ledger.limit()),
          config().verbose ? "" : "; later refusals are counted in the summary");
    }
    publish_memory();
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::uint64_t name = 0;
  std::uint64_t actual = bytes;
  const CUresult r = allocate(name, actual);
  if (r == CUDA_SUCCESS) {
    ledger.commit(kind, name, bytes, actual);
  } else {
    ledger.cancel(bytes);
  }
  publish_memory();
  return r;
}

// An allocation named by the device address `call` writes to `out`. Invalid calls (no output,
// zero bytes) are the driver's to reject, untouched.
template <class Call>
CUresult held_address(Entry e, CUdeviceptr* out, std::uint64_t bytes, Call&& call) {
  if (out == nullptr || bytes == 0) return call();
  return held(e, Named::kAddress, bytes, [&](std::uint64_t& name, std::uint64_t&) {
    const CUresult r = call();
    name = *out;
    return r;
  });
}

CUresult mem_alloc(CUdeviceptr* out, size_t bytes) {
  const auto fn = real<MemAllocFn>(Entry::kMemAlloc);
  return held_address(Entry::kMemAlloc, out, bytes, [&] { return fn(out, bytes); });
}

CUresult mem_free(CUdeviceptr ptr) {
  const CUresult r = real<MemFreeFn>(Entry::kMemFree)(ptr);
  if (r == CUDA_SUCCESS && ptr != 0) {
    memory_ledger().release(Named::kAddress, ptr);
    publish_memory();
  }
  return r;
}

// Counted when the call is made: the memory is the stream's from then on.
template <Entry E>
CUresult mem_alloc_async(CUdeviceptr* out, size_t bytes, CUstream stream) {
  const auto fn = real<MemAllocAsyncFn>(E);
  return held_address(E, out, bytes, [&] { return fn(out, bytes, stream); });
}

// From a pool the application made: counted like any stream-ordered allocation.
template <Entry E>
CUresult mem_alloc_from_pool_async(CUdeviceptr* out, size_t bytes, CUmemoryPool pool,
                                   CUstream stream) {
  const auto fn = real<MemAllocFromPoolAsyncFn>(E);
  return held_address(E, out, bytes, [&] { return fn(out, bytes, pool, stream); });
}

// Width x height is held; the driver's pitch (rows padded for alignment) decides what is used.
CUresult mem_alloc_pitch(CUdeviceptr* out, size_t* pitch, size_t width, size_t height,
                         unsigned element_bytes) {
  const auto fn = real<MemAllocPitchFn>(Entry::kMemAllocPitch);
  if (out == nullptr || pitch == nullptr || width == 0 || height == 0 ||
      width > UINT64_MAX / height) {
    return fn(out, pitch, width, height, element_bytes);
  }
  return held(Entry::kMemAllocPitch, Named::kAddress, std::uint64_t{width} * height,
              [&](std::uint64_t& name, std::uint64_t& actual) {
                const CUresult r = fn(out, pitch, width, height, element_bytes);
                name = *out;
                if (r == CUDA_SUCCESS && *pitch >= width) actual = std::uint64_t{*pitch} * height;
                return r;
              });
}

// Managed memory may live on the host too; it is counted as the device's, the bound a tenant
// can be sure of.
CUresult mem_alloc_managed(CUdeviceptr* out, size_t bytes, unsigned flags) {
  const auto fn = real<MemAllocManagedFn>(Entry::kMemAllocManaged);
  return held_address(Entry::kMemAllocManaged, out, bytes, [&] { return fn(out, bytes, flags); });
}

// Given back when the free is enqueued: the tenant may not touch the memory after it.
template <Entry E>
CUresult mem_free_async(CUdeviceptr ptr, CUstream stream) {
  const CUresult r = real<MemFreeAsyncFn>(E)(ptr, stream);
  if (r == CUDA_SUCCESS && ptr != 0) {
    memory_ledger().release(Named::kAddress, ptr);
    publish_memory();
  }
  return r;
}

// A physical allocation counts from cuMemCreate to cuMemRelease, however often it is mapped.
CUresult mem_create(CUmemGenericAllocationHandle* handle, size_t bytes,
                    const CUmemAllocationProp* prop, unsigned long long flags) {
  const auto fn = real<MemCreateFn>(Entry::kMemCreate);
  if (handle == nullptr || bytes == 0) return fn(handle, bytes, prop, flags);
  return held(Entry::kMemCreate, Named::kHandle, bytes, [&](std::uint64_t& name, std::uint64_t&) {
    const CUresult r = fn(handle, bytes, prop, flags);
    name = *handle;
    return r;
  });
}

CUresult mem_release(CUmemGenericAllocationHandle handle) {
  const CUresult r = real<MemReleaseFn>(Entry::kMemRelease)(handle);
  if (r == CUDA_SUCCESS) {
    memory_ledger().release(Named::kHandle, handle);
    publish_memory();
  }
  return r;
}

CUresult mem_get_info(size_t* free_bytes, size_t* total) {
  const CUresult r = real<MemGetInfoFn>(Entry::kMemGetInfo)(free_bytes, total);
  if (r != CUDA_SUCCESS || free_bytes == nullptr || total == nullptr) return r;
  const MemoryLedger::Info info = current_ledger().info(*free_bytes, *total);
  *free_bytes = static_cast<size_t>(info.free);
  *total = static_cast<size_t>(info.total);
  return r;
}

}  // namespace

MemoryLedger& memory_ledger() {
  // Never destroyed: the summary is written by a destructor function, which runs after the
  // library's static objects are gone, and late frees may still arrive from other threads.
  static MemoryLedger* const ledger = new MemoryLedger(config().memory_limit);
  return *ledger;
}

void publish_memory() {
  daemon_abi::AssignmentPage* page = daemon_page_if_attempted();
  if (page == nullptr) return;
  const MemoryLedger& ledger = memory_ledger();
  const MemoryLedger::Totals t = ledger.totals();
  page->memory_used.store(t.used, std::memory_order_relaxed);
  page->memory_limit.store(ledger.limit(), std::memory_order_relaxed);
  page->memory_refused.store(t.refused, std::memory_order_relaxed);
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
    case Entry::kMemAllocFromPoolAsync:
      return reinterpret_cast<void*>(&mem_alloc_from_pool_async<Entry::kMemAllocFromPoolAsync>);
    case Entry::kMemAllocFromPoolAsyncPtsz:
      return reinterpret_cast<void*>(&mem_alloc_from_pool_async<Entry::kMemAllocFromPoolAsyncPtsz>);
    case Entry::kMemAllocPitch: return reinterpret_cast<void*>(&mem_alloc_pitch);
    case Entry::kMemAllocManaged: return reinterpret_cast<void*>(&mem_alloc_managed);
    default: return nullptr;
  }
}

}  // namespace tessera::interpose
