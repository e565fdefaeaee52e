#include "real_driver.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "config.hpp"

namespace tessera::interpose {
namespace {

std::atomic<DlsymFn> g_real_dlsym{nullptr};
std::atomic<const RealDriver*> g_driver{nullptr};
std::mutex g_driver_mutex;

template <class F>
bool resolve(DlsymFn dlsym_fn, void* handle, const char* symbol, F*& out, RealDriver& d) {
  out = reinterpret_cast<F*>(dlsym_fn(handle, symbol));
  if (out == nullptr && d.missing[0] == '\0')
    std::snprintf(d.missing, sizeof d.missing, "%s", symbol);
  return out != nullptr;
}

void fill(RealDriver& d, DlsymFn sym) {
  for (int i = 0; i < kEntryCount; ++i)
    d.entry[i] = sym(d.handle, entry_symbol(static_cast<Entry>(i)));
  bool ok = true;
  ok &= resolve(sym, d.handle, "cuCtxGetCurrent", d.ctx_get_current, d);
  ok &= resolve(sym, d.handle, "cuCtxGetDevice", d.ctx_get_device, d);
  ok &= resolve(sym, d.handle, "cuCtxPushCurrent_v2", d.ctx_push_current, d);
  ok &= resolve(sym, d.handle, "cuCtxPopCurrent_v2", d.ctx_pop_current, d);
  ok &= resolve(sym, d.handle, "cuDeviceGetDevResource", d.device_get_dev_resource, d);
  ok &= resolve(sym, d.handle, "cuDevSmResourceSplitByCount", d.dev_sm_resource_split_by_count, d);
  ok &= resolve(sym, d.handle, "cuDevResourceGenerateDesc", d.dev_resource_generate_desc, d);
  ok &= resolve(sym, d.handle, "cuGreenCtxCreate", d.green_ctx_create, d);
  ok &= resolve(sym, d.handle, "cuGreenCtxGetDevResource", d.green_ctx_get_dev_resource, d);
  ok &= resolve(sym, d.handle, "cuGreenCtxStreamCreate", d.green_ctx_stream_create, d);
  ok &= resolve(sym, d.handle, "cuCtxFromGreenCtx", d.ctx_from_green_ctx, d);
  ok &= resolve(sym, d.handle, "cuEventCreate", d.event_create, d);
  ok &= resolve(sym, d.handle, "cuEventRecord", d.event_record, d);
  ok &= resolve(sym, d.handle, "cuStreamWaitEvent", d.stream_wait_event, d);
  ok &= resolve(sym, d.handle, "cuStreamSynchronize", d.stream_synchronize, d);
  ok &= resolve(sym, d.handle, "cuGreenCtxDestroy", d.green_ctx_destroy, d);
  ok &= resolve(sym, d.handle, "cuStreamDestroy_v2", d.stream_destroy, d);
  ok &= resolve(sym, d.handle, "cuEventDestroy_v2", d.event_destroy, d);
  d.can_route = ok;
  // Optional: stream capture arrived with cuStreamIsCapturing (CUDA 10.0), so a driver without it
  // cannot be capturing; without the occupancy call cooperative launches pass through.
  d.stream_is_capturing =
      reinterpret_cast<decltype(d.stream_is_capturing)>(sym(d.handle, "cuStreamIsCapturing"));
  d.occupancy_max_active_blocks = reinterpret_cast<decltype(d.occupancy_max_active_blocks)>(
      sym(d.handle, "cuOccupancyMaxActiveBlocksPerMultiprocessor"));
  d.event_query = reinterpret_cast<decltype(d.event_query)>(sym(d.handle, "cuEventQuery"));
  d.stream_create_with_priority = reinterpret_cast<decltype(d.stream_create_with_priority)>(
      sym(d.handle, "cuStreamCreateWithPriority"));
  d.event_elapsed_time =
      reinterpret_cast<decltype(d.event_elapsed_time)>(sym(d.handle, "cuEventElapsedTime_v2"));
  if (d.event_elapsed_time == nullptr) {
    d.event_elapsed_time =
        reinterpret_cast<decltype(d.event_elapsed_time)>(sym(d.handle, "cuEventElapsedTime"));
  }
}

}  // namespace

// Called from the dlsym entry (lookup_hooks.cpp) before anything else, so it must not call
// dlsym: dlvsym is a different symbol and RTLD_NEXT from here means "after this library".
DlsymFn real_dlsym() {
  DlsymFn f = g_real_dlsym.load(std::memory_order_acquire);
  if (f != nullptr) return f;
  // GLIBC_2.34 moved dlsym into libc; GLIBC_2.2.5 is the x86_64 baseline (libdl before 2.34).
  for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5"}) {
    f = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", version));
    if (f != nullptr) break;
  }
  g_real_dlsym.store(f, std::memory_order_release);
  return f;
}

const RealDriver* real_driver(bool load) {
  const RealDriver* d = g_driver.load(std::memory_order_acquire);
  if (d != nullptr) return d;
  DlsymFn sym = real_dlsym();
  if (sym == nullptr) return nullptr;
  std::lock_guard lock(g_driver_mutex);
  d = g_driver.load(std::memory_order_acquire);
  if (d != nullptr) return d;
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr && load) handle = dlopen("libcuda.so.1", RTLD_NOW);
  if (handle == nullptr) return nullptr;
  static RealDriver driver;  // lives until exit: the wrappers handed out point into it
  driver.handle = handle;
  fill(driver, sym);
  if (!driver.can_route) {
    verbose_log("libcuda.so.1 lacks %s: every launch passes through", driver.missing);
  }
  g_driver.store(&driver, std::memory_order_release);
  return &driver;
}

void* wrapper_for_real(const RealDriver& d, void* real) {
  if (real == nullptr) return nullptr;
  for (int i = 0; i < kEntryCount; ++i) {
    if (d.entry[i] == real) return wrapper_of(static_cast<Entry>(i));
  }
  return nullptr;
}

}  // namespace tessera::interpose
