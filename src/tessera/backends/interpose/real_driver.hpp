#pragma once
// The real driver as the interposer sees it: glibc's own dlsym, libcuda.so.1's handle, the real
// entry points it wraps (found with the real dlsym, so the pointer-identity table below is exact)
// and the driver functions the routing calls. Never resolved through cuGetProcAddress, so the
// interposer cannot recurse into itself.

#include <cuda.h>

#include "entry_points.hpp"

namespace tessera::interpose {

using DlsymFn = void* (*)(void*, const char*);

// glibc's dlsym: dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"), else "GLIBC_2.2.5" (x86_64's first
// version). nullptr when neither exists. Lock-free after the first call.
DlsymFn real_dlsym();

struct RealDriver {
  void* handle = nullptr;
  void* entry[kEntryCount] = {};  // the real functions, by exact symbol; nullptr if not exported

  // What the routing calls (exact exported names: cuda.h:138-141 map the _v2 spellings).
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*ctx_push_current)(CUcontext) = nullptr;  // cuCtxPushCurrent_v2
  CUresult (*ctx_pop_current)(CUcontext*) = nullptr;  // cuCtxPopCurrent_v2
  CUresult (*device_get_dev_resource)(CUdevice, CUdevResource*, CUdevResourceType) = nullptr;
  CUresult (*dev_sm_resource_split_by_count)(CUdevResource*, unsigned*, const CUdevResource*,
                                             CUdevResource*, unsigned, unsigned) = nullptr;
  CUresult (*dev_resource_generate_desc)(CUdevResourceDesc*, CUdevResource*, unsigned) = nullptr;
  CUresult (*green_ctx_create)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned) = nullptr;
  CUresult (*green_ctx_get_dev_resource)(CUgreenCtx, CUdevResource*, CUdevResourceType) = nullptr;
  CUresult (*green_ctx_stream_create)(CUstream*, CUgreenCtx, unsigned, int) = nullptr;
  CUresult (*ctx_from_green_ctx)(CUcontext*, CUgreenCtx) = nullptr;
  CUresult (*event_create)(CUevent*, unsigned) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*stream_wait_event)(CUstream, CUevent, unsigned) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  // Undo a partition made half-way (cuda.h:24879; cuStreamDestroy_v2, cuEventDestroy_v2).
  CUresult (*green_ctx_destroy)(CUgreenCtx) = nullptr;
  CUresult (*stream_destroy)(CUstream) = nullptr;
  CUresult (*event_destroy)(CUevent) = nullptr;
  // Optional (see fill()).
  CUresult (*stream_is_capturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*occupancy_max_active_blocks)(int*, CUfunction, int, size_t) = nullptr;
  // For timing graph launches under a daemon: cuEventElapsedTime_v2 (12.8+) or its older export.
  CUresult (*event_query)(CUevent) = nullptr;
  CUresult (*event_elapsed_time)(float*, CUevent, CUevent) = nullptr;
  // For a daemon's whole-GPU assignment at a higher priority (CUDA 5.5+).
  CUresult (*stream_create_with_priority)(CUstream*, unsigned, int) = nullptr;

  // All the routing functions above were found (a driver without green contexts, < 12.4, lacks
  // some); when false every launch passes through.
  bool can_route = false;
  char missing[96] = {};  // the first routing function not found
};

// The real driver once libcuda.so.1 is in the process: dlopen(RTLD_NOW | RTLD_NOLOAD), then, if
// `load`, dlopen(RTLD_NOW). nullptr while it is not loaded (and `load` is false) or cannot be.
// Thread-safe; resolved once, under a mutex.
const RealDriver* real_driver(bool load);

// The wrapper that replaces the real pointer `real` (pointer identity with d.entry), or nullptr.
void* wrapper_for_real(const RealDriver& d, void* real);

// The wrapper of entry `e` (lookup_hooks.cpp); of a launch entry (launch_hooks.cpp), a memory
// entry (memory_hooks.cpp) and cuInit (init_hook.cpp); nullptr for the others' entries.
void* wrapper_of(Entry e);
void* launch_wrapper_of(Entry e);
void* memory_wrapper_of(Entry e);
void* init_wrapper_of(Entry e);

}  // namespace tessera::interpose
