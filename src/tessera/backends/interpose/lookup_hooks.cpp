// The three symbols the interposer exports (exports.map): dlsym, cuGetProcAddress and
// cuGetProcAddress_v2. The CUDA runtime dlopens libcuda.so.1, looks up cuGetProcAddress_v2 with
// dlsym and fetches every other entry point through it (notes section 5), so both lookups are
// hooked; anything that is not one of the wrapped entry points passes through untouched.

#include <cuda.h>
#include <dlfcn.h>

#include "config.hpp"
#include "entry_points.hpp"
#include "real_driver.hpp"
#include "stats.hpp"

// The exported lookups (below). A driver that takes its own function's address through the
// dynamic symbol table (symbol interposition) hands these back: they are already the wrappers.
extern "C" CUresult cuGetProcAddress_v2(const char*, void**, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult*);
extern "C" CUresult tessera_interpose_get_proc_address_v1(const char*, void**, int,
                                                          cuuint64_t) __asm__("cuGetProcAddress");

namespace tessera::interpose {
namespace {

using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t);
using GetProcAddressV2Fn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult*);

// The wrapper for what the real cuGetProcAddress returned for `symbol`: by pointer identity with
// the exported variants, so the version and stream flavour the driver chose are kept.
void* hook_proc_address(const RealDriver& d, const char* symbol, void* p, int cuda_version) {
  if (p == reinterpret_cast<void*>(&cuGetProcAddress_v2)) {
    count_lookup(Entry::kGetProcAddressV2, Lookup::kGetProcAddress);
    return p;
  }
  if (p == reinterpret_cast<void*>(&tessera_interpose_get_proc_address_v1)) {
    count_lookup(Entry::kGetProcAddress, Lookup::kGetProcAddress);
    return p;
  }
  if (void* w = wrapper_for_real(d, p)) {
    for (int i = 0; i < kEntryCount; ++i) {
      if (d.entry[i] == p) count_lookup(static_cast<Entry>(i), Lookup::kGetProcAddress);
    }
    return w;
  }
  const int family = family_by_base_name(symbol);
  if (family < 0) return p;
  count_unmatched(family);
  if (family == static_cast<int>(Entry::kGetProcAddress)) {
    // Not the exported function, but still cuGetProcAddress: later lookups must stay hooked.
    // PFN_cuGetProcAddress_v12000 is the _v2 ABI (cudaTypedefs.h), older versions the first.
    const Entry e = cuda_version >= 12000 ? Entry::kGetProcAddressV2 : Entry::kGetProcAddress;
    count_lookup(e, Lookup::kGetProcAddress);
    return wrapper_of(e);
  }
  verbose_log("cuGetProcAddress(%s) returned %p, none of the exported variants: not hooked", symbol,
              p);
  return p;
}

CUresult proc_address_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                         CUdriverProcAddressQueryResult* status) {
  const RealDriver* d = real_driver(true);
  const auto real = d != nullptr ? reinterpret_cast<GetProcAddressV2Fn>(
                                       d->entry[static_cast<int>(Entry::kGetProcAddressV2)])
                                 : nullptr;
  if (real == nullptr) return CUDA_ERROR_NOT_FOUND;
  const CUresult r = real(symbol, pfn, cuda_version, flags, status);
  if (r == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr) {
    *pfn = hook_proc_address(*d, symbol, *pfn, cuda_version);
  }
  return r;
}

CUresult proc_address_v1(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  const RealDriver* d = real_driver(true);
  if (d == nullptr) return CUDA_ERROR_NOT_FOUND;
  const auto real =
      reinterpret_cast<GetProcAddressFn>(d->entry[static_cast<int>(Entry::kGetProcAddress)]);
  // A driver without the 11.3 symbol still answers through _v2 (same lookup, no status).
  if (real == nullptr) return proc_address_v2(symbol, pfn, cuda_version, flags, nullptr);
  const CUresult r = real(symbol, pfn, cuda_version, flags);
  if (r == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr) {
    *pfn = hook_proc_address(*d, symbol, *pfn, cuda_version);
  }
  return r;
}

}  // namespace

void* wrapper_of(Entry e) {
  if (e == Entry::kGetProcAddress) return reinterpret_cast<void*>(&proc_address_v1);
  if (e == Entry::kGetProcAddressV2) return reinterpret_cast<void*>(&proc_address_v2);
  if (void* w = launch_wrapper_of(e)) return w;
  if (void* w = init_wrapper_of(e)) return w;
  return memory_wrapper_of(e);
}

}  // namespace tessera::interpose

using tessera::interpose::Entry;

// The exported cuGetProcAddress_v2 and (under its 11.3 name, which cuda.h:159 maps onto _v2)
// cuGetProcAddress: a program linked against libcuda binds to these first under LD_PRELOAD.
extern "C" __attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
    CUdriverProcAddressQueryResult* status) {
  return tessera::interpose::proc_address_v2(symbol, pfn, cuda_version, flags, status);
}
extern "C" __attribute__((visibility("default"))) CUresult tessera_interpose_get_proc_address_v1(
    const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) __asm__("cuGetProcAddress");
extern "C" CUresult tessera_interpose_get_proc_address_v1(const char* symbol, void** pfn,
                                                          int cuda_version, cuuint64_t flags) {
  return tessera::interpose::proc_address_v1(symbol, pfn, cuda_version, flags);
}

// dlsym. glibc's dlsym resolves RTLD_NEXT (and RTLD_DEFAULT's scope) relative to its caller's
// return address, so a C++ wrapper that calls it would answer for this library instead of the
// application. The entry below therefore only asks "is this a lookup to hook?" and otherwise
// tail-jumps into the real dlsym with the caller's return address untouched. Hooked lookups (the
// wrapped names, never with RTLD_NEXT) are answered by the real dlsym called from here: the
// same answer for a libcuda handle; for RTLD_DEFAULT it is the global scope's.
extern "C" {
__attribute__((visibility("hidden"))) void* tessera_interpose_real_dlsym_ptr = nullptr;

// 1: answer with tessera_interpose_dlsym_hook; 0: tail-jump to the real dlsym.
__attribute__((visibility("hidden"), used)) int tessera_interpose_dlsym_wanted(void* handle,
                                                                               const char* name) {
  const auto real = tessera::interpose::real_dlsym();
  if (real == nullptr) return 1;  // the hook answers nullptr
  __atomic_store_n(&tessera_interpose_real_dlsym_ptr, reinterpret_cast<void*>(real),
                   __ATOMIC_RELAXED);
  return handle != RTLD_NEXT && tessera::interpose::entry_by_symbol(name) >= 0 ? 1 : 0;
}

__attribute__((visibility("hidden"), used)) void* tessera_interpose_dlsym_hook(void* handle,
                                                                               const char* name) {
  using namespace tessera::interpose;
  const DlsymFn real = real_dlsym();
  if (real == nullptr) return nullptr;
  void* p = real(handle, name);
  if (p == nullptr) return p;
  // Without RTLD_NOLOAD finding libcuda.so.1, `p` cannot be one of its functions.
  const RealDriver* d = real_driver(false);
  if (d == nullptr) return p;
  void* w = wrapper_for_real(*d, p);
  if (w == nullptr) return p;
  for (int i = 0; i < kEntryCount; ++i) {
    if (d->entry[i] == p) count_lookup(static_cast<Entry>(i), Lookup::kDlsym);
  }
  return w;
}
}

#if defined(__x86_64__)
// System V x86_64: keep the arguments across the check, realign the stack for the call (entry is
// 8 mod 16; two pushes and 8 bytes make it 0), then jump without touching the return address.
__asm__(R"(
    .text
    .globl dlsym
    .type dlsym, @function
dlsym:
    .cfi_startproc
    pushq %rdi
    .cfi_adjust_cfa_offset 8
    pushq %rsi
    .cfi_adjust_cfa_offset 8
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call tessera_interpose_dlsym_wanted
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq %rsi
    .cfi_adjust_cfa_offset -8
    popq %rdi
    .cfi_adjust_cfa_offset -8
    testl %eax, %eax
    jnz tessera_interpose_dlsym_hook
    jmp *tessera_interpose_real_dlsym_ptr(%rip)
    .cfi_endproc
    .size dlsym, .-dlsym
)");
#else
#error "the dlsym entry is written for x86_64 only (first cut)"
#endif
