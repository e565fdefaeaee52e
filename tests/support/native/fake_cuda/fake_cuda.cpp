// A fake libcuda for tests (fake_cuda_control.h describes the model): the driver entry points
// tessera uses, under their real versioned symbol names, plus cuGetProcAddress / _v2 resolving
// base names by version, plus the test controls. Every entry point is extern "C", locks the one
// state mutex, counts the call (for injected failures), logs it, and catches every exception:
// nothing crosses the C ABI.
#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "fake_cuda_control.h"
#include "fake_cuda_state.hpp"
#include "tessera/backends/cuda/kernel_params.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

using fake_cuda::Kind;
using fake_cuda::make_handle;
using fake_cuda::Op;
using fake_cuda::OpKind;
using fake_cuda::State;
using nlohmann::json;

namespace {

// ASSUMPTION: H100/H200 limits from the CUDA C++ Programming Guide's table of compute capability
// 9.0 (227 KiB opt-in shared memory per block, 228 KiB per SM, 32 blocks and 2048 threads per
// SM); the 50 MiB L2 is the H100 SXM5 figure (Hopper whitepaper), assumed for H200 too.
constexpr int kSharedOptin = 232448;
constexpr int kSharedPerSm = 233472;
constexpr int kL2Bytes = 50 * 1024 * 1024;
// ASSUMPTION: registers never limit occupancy in the fake; 32 per thread is reported.
constexpr int kRegisters = 32;

template <typename F>
CUresult guarded(const char* name, bool needs_init, F&& body) noexcept {
  try {
    std::lock_guard lock(fake_cuda::state_mutex());
    State& s = fake_cuda::state();
    CUresult r = s.before_call(name, needs_init);
    if (r == CUDA_SUCCESS) r = body(s);
    s.log_call(name, r);
    return r;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

bool valid_device(const State& s, CUdevice d) {
  return d >= 0 && static_cast<std::size_t>(d) < s.devices.size();
}
const fake_cuda::Device& device(const State& s, CUdevice d) {
  return s.devices.at(static_cast<std::size_t>(d));
}

const std::map<int, std::string>& error_names() {
  static const std::map<int, std::string> names = {
#include "fake_cuda_errors.inc"
  };
  return names;
}

// cuGetErrorString's text: the driver's wording for the codes tessera's messages show most,
// otherwise the name in words ("CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION" -> "invalid resource
// configuration"; the real driver's sentence may differ).
const std::map<int, std::string>& error_strings() {
  static const std::map<int, std::string> strings = [] {
    std::map<int, std::string> out;
    for (const auto& [code, name] : error_names()) {
      std::string words = name.rfind("CUDA_ERROR_", 0) == 0 ? name.substr(11) : name;
      std::transform(words.begin(), words.end(), words.begin(), [](char c) {
        return c == '_' ? ' ' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      });
      out[code] = words;
    }
    out[CUDA_SUCCESS] = "no error";
    out[CUDA_ERROR_INVALID_VALUE] = "invalid argument";
    out[CUDA_ERROR_OUT_OF_MEMORY] = "out of memory";
    out[CUDA_ERROR_NOT_INITIALIZED] = "initialization error";
    out[CUDA_ERROR_NO_DEVICE] = "no CUDA-capable device is detected";
    out[CUDA_ERROR_STUB_LIBRARY] = "CUDA driver is a stub library";
    return out;
  }();
  return strings;
}

// ---- Streams, launches, copies -------------------------------------------------------------

CUresult no_context(const State& s) {
  return s.current_context() == 0 ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

// The stream id for `h`, or the error: a null/legacy/per-thread handle needs a current context.
CUresult resolve_stream(State& s, CUstream h, std::uint64_t* id) {
  *id = s.stream_id(h);
  if (*id != 0) return CUDA_SUCCESS;
  return reinterpret_cast<std::uint64_t>(h) <= 2 ? CUDA_ERROR_INVALID_CONTEXT
                                                 : CUDA_ERROR_INVALID_HANDLE;
}

CUresult launch(State& s, const char* entry, CUfunction f, const unsigned grid[3],
                const unsigned block[3], unsigned shared, CUstream hs, void** params,
                void** extra) {
  auto kit = s.kernels.find(fake_cuda::handle_id(f, Kind::kKernel));
  if (kit == s.kernels.end()) return CUDA_ERROR_INVALID_HANDLE;
  const fake_cuda::Kernel& k = kit->second;
  // The driver's limits (cuDeviceGetAttribute's MAX_GRID_DIM_* / MAX_BLOCK_DIM_* for CC 9.0).
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || grid[0] > 2147483647u || grid[1] > 65535 ||
      grid[2] > 65535) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (block[0] == 0 || block[1] == 0 || block[2] == 0 || block[0] > 1024 || block[1] > 1024 ||
      block[2] > 64 || std::uint64_t{block[0]} * block[1] * block[2] > 1024) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (shared > static_cast<unsigned>(k.max_dynamic_shared)) return CUDA_ERROR_INVALID_VALUE;
  if (params != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t sid = 0;
  if (CUresult r = resolve_stream(s, hs, &sid); r != CUDA_SUCCESS) return r;
  Op op;
  op.kind = OpKind::kLaunch;
  op.kernel = k.name;
  op.entry = entry;
  std::copy(grid, grid + 3, op.grid);
  std::copy(block, block + 3, op.block);
  op.shared = shared;
  // The driver copies the arguments at launch time: later changes to the caller's struct do not
  // reach the kernel.
  const std::size_t size = fake_cuda::params_size(k.name);
  if (size > 0) {
    const void* src = nullptr;
    if (params != nullptr) {
      src = params[0];
    } else if (extra != nullptr) {
      std::size_t have = 0;
      for (void** e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
        if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) src = e[1];
        if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE) have = *static_cast<std::size_t*>(e[1]);
      }
      if (have < size) return CUDA_ERROR_INVALID_VALUE;
    }
    if (src == nullptr) return CUDA_ERROR_INVALID_VALUE;
    op.params.assign(static_cast<const unsigned char*>(src),
                     static_cast<const unsigned char*>(src) + size);
  }
  s.enqueue(sid, std::move(op));
  return CUDA_SUCCESS;
}

CUresult launch_plain(const char* name, const char* entry, CUfunction f, unsigned gx, unsigned gy,
                      unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
                      CUstream hs, void** params, void** extra) {
  return guarded(name, true, [&](State& s) {
    const unsigned grid[3] = {gx, gy, gz};
    const unsigned block[3] = {bx, by, bz};
    return launch(s, entry, f, grid, block, shared, hs, params, extra);
  });
}

CUresult launch_ex(const char* entry, const CUlaunchConfig* config, CUfunction f, void** params,
                   void** extra) {
  return guarded("cuLaunchKernelEx", true, [&](State& s) {
    if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
    const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
    return launch(s, entry, f, grid, block, config->sharedMemBytes, config->hStream, params, extra);
  });
}

CUresult graph_launch(const char* entry, CUgraphExec exec, CUstream hs) {
  return guarded("cuGraphLaunch", true, [&](State& s) {
    auto it = s.graph_execs.find(fake_cuda::handle_id(exec, Kind::kGraphExec));
    if (it == s.graph_execs.end()) return CUDA_ERROR_INVALID_HANDLE;
    std::uint64_t sid = 0;
    if (CUresult r = resolve_stream(s, hs, &sid); r != CUDA_SUCCESS) return r;
    Op op;
    op.kind = OpKind::kGraphLaunch;
    op.graph = it->second;
    op.entry = entry;
    s.enqueue(sid, std::move(op));
    return CUDA_SUCCESS;
  });
}

CUresult stream_synchronize(CUstream hs) {
  return guarded("cuStreamSynchronize", true, [&](State& s) {
    std::uint64_t sid = 0;
    if (CUresult r = resolve_stream(s, hs, &sid); r != CUDA_SUCCESS) return r;
    return s.drain(sid, "cuStreamSynchronize");
  });
}

CUresult stream_query(CUstream hs) {
  return guarded("cuStreamQuery", true, [&](State& s) {
    std::uint64_t sid = 0;
    if (CUresult r = resolve_stream(s, hs, &sid); r != CUDA_SUCCESS) return r;
    s.run();
    if (s.sticky_error() != CUDA_SUCCESS) return s.sticky_error();
    auto it = s.streams.find(sid);
    return it == s.streams.end() || it->second.queue.empty() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  });
}

CUresult stream_wait_event(CUstream hs, CUevent ev, unsigned flags) {
  return guarded("cuStreamWaitEvent", true, [&](State& s) {
    // CU_EVENT_WAIT_DEFAULT (0) or CU_EVENT_WAIT_EXTERNAL (1) (cuda.h).
    if (flags > 1) return CUDA_ERROR_INVALID_VALUE;
    auto eit = s.events.find(fake_cuda::handle_id(ev, Kind::kEvent));
    if (eit == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
    std::uint64_t sid = 0;
    if (CUresult r = resolve_stream(s, hs, &sid); r != CUDA_SUCCESS) return r;
    Op op;
    op.kind = OpKind::kWait;
    op.event = eit->first;
    op.record_op = eit->second.last_record;  // the record enqueued last, as CUDA defines it
    s.enqueue(sid, std::move(op));
    return CUDA_SUCCESS;
  });
}

CUresult event_record(CUevent ev, CUstream hs) {
  return guarded("cuEventRecord", true, [&](State& s) {
    auto eit = s.events.find(fake_cuda::handle_id(ev, Kind::kEvent));
    if (eit == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
    std::uint64_t sid = 0;
    if (CUresult r = resolve_stream(s, hs, &sid); r != CUDA_SUCCESS) return r;
    Op op;
    op.kind = OpKind::kEventRecord;
    op.event = eit->first;
    eit->second.last_record = s.enqueue(sid, std::move(op));
    return CUDA_SUCCESS;
  });
}

CUresult event_elapsed(float* ms, CUevent start, CUevent end) {
  return guarded("cuEventElapsedTime", true, [&](State& s) {
    if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto a = s.events.find(fake_cuda::handle_id(start, Kind::kEvent));
    auto b = s.events.find(fake_cuda::handle_id(end, Kind::kEvent));
    if (a == s.events.end() || b == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
    if (((a->second.flags | b->second.flags) & CU_EVENT_DISABLE_TIMING) != 0) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
    if (a->second.last_record == 0 || b->second.last_record == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (!s.record_done(a->second.last_record) || !s.record_done(b->second.last_record)) {
      return CUDA_ERROR_NOT_READY;
    }
    const double ns = static_cast<double>(s.record_time(b->second.last_record)) -
                      static_cast<double>(s.record_time(a->second.last_record));
    *ms = static_cast<float>(ns / 1e6);
    return CUDA_SUCCESS;
  });
}

// A synchronous copy or memset: enqueued on the current context's default stream, which is then
// drained (the fake does not model the legacy stream's implicit synchronisation with other
// blocking streams).
CUresult sync_op(State& s, Op op, const char* call) {
  if (CUresult r = no_context(s); r != CUDA_SUCCESS) return r;
  const std::uint64_t sid = s.default_stream(s.current_context());
  s.enqueue(sid, std::move(op));
  return s.drain(sid, call);
}

CUresult copy_async(const char* name, OpKind kind, std::uint64_t dst, std::uint64_t src,
                    std::size_t bytes, CUstream hs) {
  return guarded(name, true, [&](State& s) {
    const std::uint64_t dev = kind == OpKind::kCopyHtoD ? dst : src;
    if (s.check_range(dev, bytes) == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::uint64_t sid = 0;
    if (CUresult r = resolve_stream(s, hs, &sid); r != CUDA_SUCCESS) return r;
    Op op;
    op.kind = kind;
    op.dst = dst;
    op.src = src;
    op.bytes = bytes;
    s.enqueue(sid, std::move(op));
    return CUDA_SUCCESS;
  });
}

// ---- Green-context resources ---------------------------------------------------------------

// The fake's bookkeeping inside CUdevResource's _internal_padding (cuda.h:24794): a magic and
// the resource's id in the state.
constexpr std::uint64_t kResourceMagic = 0x4641'4b45'5253'4331ull;  // "FAKERSC1"

void write_resource(State& s, CUdevResource* out, fake_cuda::Resource r) {
  const std::uint64_t id = s.next_id();
  const auto& d = device(s, r.device);
  std::memset(out, 0, sizeof *out);
  out->type = CU_DEV_RESOURCE_TYPE_SM;
  out->sm.smCount = static_cast<unsigned>(r.sms.size());
  out->sm.minSmPartitionSize = static_cast<unsigned>(d.min_partition);
  out->sm.smCoscheduledAlignment = static_cast<unsigned>(d.alignment);
  std::memcpy(out->_internal_padding, &kResourceMagic, 8);
  std::memcpy(out->_internal_padding + 8, &id, 8);
  s.resources[id] = std::move(r);
}

fake_cuda::Resource* read_resource(State& s, const CUdevResource* in) {
  if (in == nullptr || in->type != CU_DEV_RESOURCE_TYPE_SM) return nullptr;
  std::uint64_t magic = 0;
  std::uint64_t id = 0;
  std::memcpy(&magic, in->_internal_padding, 8);
  std::memcpy(&id, in->_internal_padding + 8, 8);
  if (magic != kResourceMagic) return nullptr;
  auto it = s.resources.find(id);
  return it == s.resources.end() ? nullptr : &it->second;
}

CUresult green_unsupported(const State& s) {
  return s.green_contexts ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace

// ---- Initialisation, errors, devices -------------------------------------------------------

FAKE_EXPORT CUresult cuInit(unsigned int flags) {
  return guarded("cuInit", false, [&](State& s) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    for (const char* name : {"CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}) {
      const char* value = std::getenv(name);
      s.init_log[name] = value != nullptr ? json(value) : json(nullptr);
    }
    if (s.no_device) return CUDA_ERROR_NO_DEVICE;
    s.initialized = true;
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuDriverGetVersion(int* version) {
  return guarded("cuDriverGetVersion", false, [&](State& s) {
    if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *version = s.driver_version;
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuGetErrorName(CUresult error, const char** out) {
  return guarded("cuGetErrorName", false, [&](State&) {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto it = error_names().find(static_cast<int>(error));
    *out = it == error_names().end() ? nullptr : it->second.c_str();
    return *out == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuGetErrorString(CUresult error, const char** out) {
  return guarded("cuGetErrorString", false, [&](State&) {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto it = error_strings().find(static_cast<int>(error));
    *out = it == error_strings().end() ? nullptr : it->second.c_str();
    return *out == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuDeviceGetCount(int* count) {
  return guarded("cuDeviceGetCount", true, [&](State& s) {
    if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *count = static_cast<int>(s.devices.size());
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  return guarded("cuDeviceGet", true, [&](State& s) {
    if (dev == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(s, ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  return guarded("cuDeviceGetName", true, [&](State& s) {
    if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    const std::string& n = device(s, dev).name;
    const std::size_t k = std::min(n.size(), static_cast<std::size_t>(len - 1));
    std::memcpy(name, n.data(), k);
    name[k] = '\0';
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attr, CUdevice dev) {
  return guarded("cuDeviceGetAttribute", true, [&](State& s) {
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    const auto& d = device(s, dev);
    if (auto it = d.attributes.find(static_cast<int>(attr)); it != d.attributes.end()) {
      *value = it->second;
      return CUDA_SUCCESS;
    }
    switch (attr) {
      case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = d.sms; break;
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = d.cc_major; break;
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = d.cc_minor; break;
      case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *value = d.clock_khz; break;
      case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *value = 1; break;
      case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: *value = 0; break;
      case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
      case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *value = 1024; break;
      case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *value = 64; break;
      case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = 2147483647; break;
      case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
      case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; break;
      case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
      case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = 48 * 1024; break;
      case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = kSharedOptin; break;
      case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = kSharedPerSm; break;
      case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
      case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *value = 32; break;
      case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = kL2Bytes; break;
      default:
        // Not modelled: a test that needs one scripts it ("attributes": {"<number>": value}).
        s.note(json{{"call", "cuDeviceGetAttribute"},
                    {"unmodelled_attribute", static_cast<int>(attr)}});
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  return guarded("cuDeviceTotalMem", true, [&](State& s) {
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = device(s, dev).memory_bytes;
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  return guarded("cuDeviceGetUuid", true, [&](State& s) {
    if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    std::memcpy(uuid->bytes, device(s, dev).uuid, 16);
    return CUDA_SUCCESS;
  });
}

// ---- Contexts ------------------------------------------------------------------------------

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  return guarded("cuDevicePrimaryCtxRetain", true, [&](State& s) {
    if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    ++s.primary_retains[static_cast<std::size_t>(dev)];
    // The primary contexts are ids 1..n (State's constructor).
    *ctx = make_handle<CUcontext>(Kind::kContext, static_cast<std::uint64_t>(dev) + 1);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return guarded("cuDevicePrimaryCtxRelease", true, [&](State& s) {
    if (!valid_device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    int& n = s.primary_retains[static_cast<std::size_t>(dev)];
    if (n == 0) return CUDA_ERROR_INVALID_CONTEXT;
    --n;
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  return guarded("cuCtxSetCurrent", true, [&](State& s) {
    const std::uint64_t id = fake_cuda::handle_id(ctx, Kind::kContext);
    if (ctx != nullptr && s.context(id) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    auto& stack = fake_cuda::ctx_stack();
    if (stack.empty()) {
      stack.push_back(id);
    } else {
      stack.back() = id;
    }
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  return guarded("cuCtxGetCurrent", true, [&](State& s) {
    if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const std::uint64_t id = s.current_context();
    *ctx = id == 0 ? nullptr : make_handle<CUcontext>(Kind::kContext, id);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  return guarded("cuCtxPushCurrent", true, [&](State& s) {
    const std::uint64_t id = fake_cuda::handle_id(ctx, Kind::kContext);
    if (s.context(id) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    fake_cuda::ctx_stack().push_back(id);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  return guarded("cuCtxPopCurrent", true, [&](State&) {
    auto& stack = fake_cuda::ctx_stack();
    if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx != nullptr) {
      *ctx = stack.back() == 0 ? nullptr : make_handle<CUcontext>(Kind::kContext, stack.back());
    }
    stack.pop_back();
    return CUDA_SUCCESS;
  });
}

namespace {
CUresult ctx_get_device(State& s, CUdevice* dev, CUcontext ctx) {
  if (dev == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::uint64_t id =
      ctx == nullptr ? s.current_context() : fake_cuda::handle_id(ctx, Kind::kContext);
  const fake_cuda::Context* c = s.context(id);
  if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = c->device;
  return CUDA_SUCCESS;
}

CUresult ctx_synchronize(State& s, CUcontext ctx) {
  const std::uint64_t id =
      ctx == nullptr ? s.current_context() : fake_cuda::handle_id(ctx, Kind::kContext);
  if (s.context(id) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  s.run();
  if (s.sticky_error() != CUDA_SUCCESS) return s.sticky_error();
  for (const auto& [sid, st] : s.streams) {
    if (st.ctx == id && !st.queue.empty()) return s.drain(sid, "cuCtxSynchronize");
  }
  return CUDA_SUCCESS;
}
}  // namespace

FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice* dev) {
  return guarded("cuCtxGetDevice", true, [&](State& s) { return ctx_get_device(s, dev, nullptr); });
}
FAKE_EXPORT CUresult cuCtxGetDevice_v2(CUdevice* dev, CUcontext ctx) {
  return guarded("cuCtxGetDevice", true, [&](State& s) { return ctx_get_device(s, dev, ctx); });
}
FAKE_EXPORT CUresult cuCtxSynchronize(void) {
  return guarded("cuCtxSynchronize", true, [&](State& s) { return ctx_synchronize(s, nullptr); });
}
FAKE_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  return guarded("cuCtxSynchronize", true, [&](State& s) { return ctx_synchronize(s, ctx); });
}

// ---- Green contexts ------------------------------------------------------------------------

FAKE_EXPORT CUresult cuDeviceGetDevResource(CUdevice dev, CUdevResource* res,
                                            CUdevResourceType type) {
  return guarded("cuDeviceGetDevResource", true, [&](State& s) {
    if (CUresult r = green_unsupported(s); r != CUDA_SUCCESS) return r;
    if (res == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    if (!valid_device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    fake_cuda::Resource r;
    r.device = dev;
    for (int i = 0; i < device(s, dev).sms; ++i) r.sms.push_back(i);
    write_resource(s, res, std::move(r));
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuDevSmResourceSplitByCount(CUdevResource* result, unsigned int* nbGroups,
                                                 const CUdevResource* input,
                                                 CUdevResource* remaining, unsigned int useFlags,
                                                 unsigned int minCount) {
  return guarded("cuDevSmResourceSplitByCount", true, [&](State& s) {
    if (CUresult r = green_unsupported(s); r != CUDA_SUCCESS) return r;
    if (nbGroups == nullptr || input == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (input->type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    const fake_cuda::Resource* in = read_resource(s, input);
    if (in == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // cuda.h:24986: "output results cannot be split again without first creating a descriptor
    // and a green context with that descriptor".
    if (!in->splittable) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    const unsigned known = CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING |
                           CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE;
    if ((useFlags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
    const unsigned total = static_cast<unsigned>(in->sms.size());
    // cuda.h: "Value of minCount must be between 0 and the SM count specified in input".
    if (minCount > total) return CUDA_ERROR_INVALID_VALUE;
    const auto& d = device(s, in->device);
    unsigned min_part = static_cast<unsigned>(d.min_partition);
    unsigned align = static_cast<unsigned>(d.alignment);
    if ((useFlags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING) != 0) {
      // ASSUMPTION: ignoring co-scheduling lowers both limits to one TPC (2 SMs); cuda.h says
      // only that they are lowered.
      min_part = std::min(min_part, 2u);
      align = std::min(align, 2u);
    }
    const unsigned count = (std::max(minCount, min_part) + align - 1) / align * align;
    unsigned groups = count == 0 ? 0 : total / count;
    if (result == nullptr) {
      *nbGroups = groups;
      return CUDA_SUCCESS;
    }
    if (*nbGroups == 0) return CUDA_ERROR_INVALID_VALUE;
    groups = std::min(groups, *nbGroups);
    const std::uint64_t split = s.next_id();
    const std::vector<int> sms = in->sms;  // `in` may move when resources grow
    const int dev = in->device;
    for (unsigned g = 0; g < groups; ++g) {
      fake_cuda::Resource r{
          dev, {sms.begin() + g * count, sms.begin() + (g + 1) * count}, split, false};
      write_resource(s, &result[g], std::move(r));
    }
    if (remaining != nullptr) {
      fake_cuda::Resource r{dev, {sms.begin() + groups * count, sms.end()}, split, false};
      write_resource(s, remaining, std::move(r));
    }
    *nbGroups = groups;
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuDevResourceGenerateDesc(CUdevResourceDesc* desc, CUdevResource* resources,
                                               unsigned int nb) {
  return guarded("cuDevResourceGenerateDesc", true, [&](State& s) {
    if (CUresult r = green_unsupported(s); r != CUDA_SUCCESS) return r;
    if (desc == nullptr || resources == nullptr || nb == 0) return CUDA_ERROR_INVALID_VALUE;
    fake_cuda::Desc d;
    for (unsigned i = 0; i < nb; ++i) {
      if (resources[i].type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
      const fake_cuda::Resource* r = read_resource(s, &resources[i]);
      if (r == nullptr) return CUDA_ERROR_INVALID_VALUE;
      if (i == 0) d.device = r->device;
      // cuda.h:25050-25057: several resources must come from one device and one split call.
      if (nb > 1) {
        const fake_cuda::Resource* first = read_resource(s, &resources[0]);
        if (r->device != first->device || r->split == 0 || r->split != first->split) {
          return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
        }
      }
      d.sms.insert(d.sms.end(), r->sms.begin(), r->sms.end());
    }
    const std::uint64_t id = s.next_id();
    s.descs[id] = std::move(d);
    *desc = make_handle<CUdevResourceDesc>(Kind::kDesc, id);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx* out, CUdevResourceDesc hdesc, CUdevice dev,
                                      unsigned int flags) {
  return guarded("cuGreenCtxCreate", true, [&](State& s) {
    if (CUresult r = green_unsupported(s); r != CUDA_SUCCESS) return r;
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // cuda.h:24849: CU_GREEN_CTX_DEFAULT_STREAM "is required".
    if (flags != CU_GREEN_CTX_DEFAULT_STREAM) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    auto dit = s.descs.find(fake_cuda::handle_id(hdesc, Kind::kDesc));
    if (dit == s.descs.end() || dit->second.device != dev) return CUDA_ERROR_INVALID_VALUE;
    fake_cuda::GreenCtx g;
    g.device = dev;
    g.sms = dit->second.sms;
    // The scripted shortfall: the driver may give fewer SMs than asked (pytorch issue #195378).
    // ASSUMPTION: at least one SM is always left.
    const std::size_t lose = std::min<std::size_t>(
        static_cast<std::size_t>(device(s, dev).shortfall), g.sms.empty() ? 0 : g.sms.size() - 1);
    g.sms.resize(g.sms.size() - lose);
    const std::uint64_t gid = s.next_id();
    const std::uint64_t cid = s.next_id();
    g.ctx = cid;
    s.green_log.push_back(json{{"id", gid},
                               {"device", dev},
                               {"requested", dit->second.sms.size()},
                               {"sm_ids", g.sms},
                               {"ctx", cid},
                               {"destroyed", false}});
    s.greens[gid] = std::move(g);
    s.contexts[cid] = fake_cuda::Context{dev, gid, 0};
    s.default_stream(cid);  // CU_GREEN_CTX_DEFAULT_STREAM
    *out = make_handle<CUgreenCtx>(Kind::kGreenCtx, gid);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx h) {
  return guarded("cuGreenCtxDestroy", true, [&](State& s) {
    if (CUresult r = green_unsupported(s); r != CUDA_SUCCESS) return r;
    const std::uint64_t gid = fake_cuda::handle_id(h, Kind::kGreenCtx);
    auto it = s.greens.find(gid);
    if (it == s.greens.end()) return CUDA_ERROR_INVALID_HANDLE;
    const std::uint64_t cid = it->second.ctx;
    int live = 0;
    for (const auto& [sid, st] : s.streams) {
      if (st.green == gid && !st.destroyed && sid != s.contexts.at(cid).default_stream) ++live;
    }
    // The real driver does not destroy the green context's streams (cuda.h, cuGreenCtxDestroy):
    // the caller should have; the log says when it did not.
    if (live > 0) {
      s.note(json{{"call", "cuGreenCtxDestroy"}, {"green_ctx", gid}, {"live_streams", live}});
    }
    for (auto& g : s.green_log) {
      if (g["id"] == gid) g["destroyed"] = true;
    }
    s.greens.erase(it);
    s.contexts.erase(cid);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuCtxFromGreenCtx(CUcontext* ctx, CUgreenCtx h) {
  return guarded("cuCtxFromGreenCtx", true, [&](State& s) {
    if (CUresult r = green_unsupported(s); r != CUDA_SUCCESS) return r;
    if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto it = s.greens.find(fake_cuda::handle_id(h, Kind::kGreenCtx));
    if (it == s.greens.end()) return CUDA_ERROR_INVALID_HANDLE;
    *ctx = make_handle<CUcontext>(Kind::kContext, it->second.ctx);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuGreenCtxGetDevResource(CUgreenCtx h, CUdevResource* res,
                                              CUdevResourceType type) {
  return guarded("cuGreenCtxGetDevResource", true, [&](State& s) {
    if (CUresult r = green_unsupported(s); r != CUDA_SUCCESS) return r;
    if (res == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    auto it = s.greens.find(fake_cuda::handle_id(h, Kind::kGreenCtx));
    if (it == s.greens.end()) return CUDA_ERROR_INVALID_HANDLE;
    // What the green context really got, and splittable again (cuda.h:24986).
    write_resource(s, res, fake_cuda::Resource{it->second.device, it->second.sms, 0, true});
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuGreenCtxStreamCreate(CUstream* out, CUgreenCtx h, unsigned int flags,
                                            int priority) {
  return guarded("cuGreenCtxStreamCreate", true, [&](State& s) {
    if (CUresult r = green_unsupported(s); r != CUDA_SUCCESS) return r;
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // cuda.h:25252: flags must include CU_STREAM_NON_BLOCKING.
    if ((flags & CU_STREAM_NON_BLOCKING) == 0) return CUDA_ERROR_INVALID_VALUE;
    auto it = s.greens.find(fake_cuda::handle_id(h, Kind::kGreenCtx));
    if (it == s.greens.end()) return CUDA_ERROR_INVALID_HANDLE;
    *out = make_handle<CUstream>(Kind::kStream, s.new_stream(it->second.ctx, flags, priority));
    return CUDA_SUCCESS;
  });
}

// ---- Streams and events --------------------------------------------------------------------

FAKE_EXPORT CUresult cuStreamCreateWithPriority(CUstream* out, unsigned int flags, int priority) {
  return guarded("cuStreamCreateWithPriority", true, [&](State& s) {
    if (out == nullptr || flags > CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = no_context(s); r != CUDA_SUCCESS) return r;
    *out = make_handle<CUstream>(Kind::kStream, s.new_stream(s.current_context(), flags, priority));
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuStreamCreate(CUstream* out, unsigned int flags) {
  return guarded("cuStreamCreate", true, [&](State& s) {
    if (out == nullptr || flags > CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = no_context(s); r != CUDA_SUCCESS) return r;
    *out = make_handle<CUstream>(Kind::kStream, s.new_stream(s.current_context(), flags, 0));
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream h) {
  return guarded("cuStreamDestroy", true, [&](State& s) {
    const std::uint64_t id = fake_cuda::handle_id(h, Kind::kStream);
    auto it = s.streams.find(id);
    if (it == s.streams.end() || it->second.destroyed) return CUDA_ERROR_INVALID_HANDLE;
    // Work already queued still runs (as on the real driver); the stream goes when it drains.
    it->second.destroyed = true;
    if (it->second.queue.empty()) s.streams.erase(it);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuStreamSynchronize(CUstream h) {
  return stream_synchronize(h);
}
FAKE_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream h) {
  return stream_synchronize(h);
}
FAKE_EXPORT CUresult cuStreamQuery(CUstream h) {
  return stream_query(h);
}
FAKE_EXPORT CUresult cuStreamQuery_ptsz(CUstream h) {
  return stream_query(h);
}
FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags) {
  return stream_wait_event(h, e, flags);
}
FAKE_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int flags) {
  return stream_wait_event(h, e, flags);
}

namespace {
CUresult stream_is_capturing(CUstream hs, CUstreamCaptureStatus* status) {
  return guarded("cuStreamIsCapturing", true, [&](State& s) {
    if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::uint64_t sid = 0;
    if (CUresult r = resolve_stream(s, hs, &sid); r != CUDA_SUCCESS) return r;
    *status = CU_STREAM_CAPTURE_STATUS_NONE;  // the fake has no stream capture
    return CUDA_SUCCESS;
  });
}
}  // namespace

FAKE_EXPORT CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus* status) {
  return stream_is_capturing(h, status);
}
FAKE_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus* status) {
  return stream_is_capturing(h, status);
}

FAKE_EXPORT CUresult cuEventCreate(CUevent* out, unsigned int flags) {
  return guarded("cuEventCreate", true, [&](State& s) {
    // CU_EVENT_DEFAULT | BLOCKING_SYNC | DISABLE_TIMING | INTERPROCESS (0x7, cuda.h).
    if (out == nullptr || flags > 0x7) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = no_context(s); r != CUDA_SUCCESS) return r;
    const std::uint64_t id = s.next_id();
    s.events[id] = fake_cuda::Event{flags, 0};
    *out = make_handle<CUevent>(Kind::kEvent, id);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent h) {
  return guarded("cuEventDestroy", true, [&](State& s) {
    return s.events.erase(fake_cuda::handle_id(h, Kind::kEvent)) == 1 ? CUDA_SUCCESS
                                                                      : CUDA_ERROR_INVALID_HANDLE;
  });
}

FAKE_EXPORT CUresult cuEventRecord(CUevent e, CUstream h) {
  return event_record(e, h);
}
FAKE_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream h) {
  return event_record(e, h);
}

FAKE_EXPORT CUresult cuEventQuery(CUevent h) {
  return guarded("cuEventQuery", true, [&](State& s) {
    auto it = s.events.find(fake_cuda::handle_id(h, Kind::kEvent));
    if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
    const std::uint64_t rec = it->second.last_record;
    s.run();
    if (s.sticky_error() != CUDA_SUCCESS) return s.sticky_error();
    return rec == 0 || s.record_done(rec) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  });
}

FAKE_EXPORT CUresult cuEventSynchronize(CUevent h) {
  return guarded("cuEventSynchronize", true, [&](State& s) {
    auto it = s.events.find(fake_cuda::handle_id(h, Kind::kEvent));
    if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
    const std::uint64_t rec = it->second.last_record;
    s.run();
    if (s.sticky_error() != CUDA_SUCCESS) return s.sticky_error();
    if (rec == 0 || s.record_done(rec)) return CUDA_SUCCESS;
    s.note(json{{"call", "cuEventSynchronize"},
                {"event", it->first},
                {"why", "its record can never execute; the real driver would wait forever"}});
    return CUDA_ERROR_LAUNCH_TIMEOUT;
  });
}

FAKE_EXPORT CUresult cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) {
  return event_elapsed(ms, a, b);
}
// The CUDA 2.0 ABI of the same call (cudaTypedefs.h: PFN_cuEventElapsedTime_v2000), exported so
// that cuGetProcAddress can show it honours the requested version.
extern "C" __attribute__((visibility("default"))) CUresult fake_event_elapsed_v1(
    float* ms, CUevent a, CUevent b) __asm__("cuEventElapsedTime");
CUresult fake_event_elapsed_v1(float* ms, CUevent a, CUevent b) {
  return event_elapsed(ms, a, b);
}

// ---- Memory --------------------------------------------------------------------------------

namespace {

// Device memory on `dev` (the current context's unless given), host memory behind it.
CUresult alloc_device(State& s, std::uint64_t* out, size_t bytes, bool physical, int dev = -1) {
  if (dev < 0) {
    if (CUresult r = no_context(s); r != CUDA_SUCCESS) return r;
    dev = s.context(s.current_context())->device;
  }
  auto& d = s.devices.at(static_cast<std::size_t>(dev));
  if (d.used_bytes + bytes > d.memory_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = nullptr;
  // 256-byte alignment, as cuMemAlloc guarantees (CUDA C++ Programming Guide, device memory).
  if (posix_memalign(&p, 256, bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  d.used_bytes += bytes;
  s.allocations()[reinterpret_cast<std::uint64_t>(p)] =
      fake_cuda::Allocation{.bytes = bytes, .host = false, .device = dev, .physical = physical};
  *out = reinterpret_cast<std::uint64_t>(p);
  return CUDA_SUCCESS;
}

CUresult free_device(State& s, std::uint64_t key, bool physical) {
  auto it = s.allocations().find(key);
  if (it == s.allocations().end() || it->second.host || it->second.physical != physical) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  s.devices.at(static_cast<std::size_t>(it->second.device)).used_bytes -= it->second.bytes;
  std::free(reinterpret_cast<void*>(key));
  s.allocations().erase(it);
  return CUDA_SUCCESS;
}

CUresult alloc_pointer(State& s, CUdeviceptr* out, size_t bytes) {
  if (out == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::uint64_t p = 0;
  const CUresult r = alloc_device(s, &p, bytes, false);
  if (r == CUDA_SUCCESS) *out = static_cast<CUdeviceptr>(p);
  return r;
}

}  // namespace

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* out, size_t bytes) {
  return guarded("cuMemAlloc", true, [&](State& s) { return alloc_pointer(s, out, bytes); });
}

FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr) {
  return guarded("cuMemFree", true, [&](State& s) { return free_device(s, ptr, false); });
}

// Stream-ordered allocation: the fake allocates and frees at the call (memory is not ordered on
// the stream here; only its use is).
FAKE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* out, size_t bytes, CUstream) {
  return guarded("cuMemAllocAsync", true, [&](State& s) { return alloc_pointer(s, out, bytes); });
}
FAKE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* out, size_t bytes, CUstream) {
  return guarded("cuMemAllocAsync_ptsz", true,
                 [&](State& s) { return alloc_pointer(s, out, bytes); });
}
FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream) {
  return guarded("cuMemFreeAsync", true, [&](State& s) { return free_device(s, ptr, false); });
}
FAKE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr ptr, CUstream) {
  return guarded("cuMemFreeAsync_ptsz", true, [&](State& s) { return free_device(s, ptr, false); });
}

// Pitched rows are padded to 512 bytes (ASSUMPTION: the real pitch follows the device's texture
// alignment; any padding shows the same way).
FAKE_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* out, size_t* pitch, size_t width,
                                        size_t height, unsigned element_bytes) {
  return guarded("cuMemAllocPitch", true, [&](State& s) {
    if (pitch == nullptr || width == 0 || height == 0 ||
        (element_bytes != 4 && element_bytes != 8 && element_bytes != 16)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    const size_t padded = (width + 511) / 512 * 512;
    const CUresult r = alloc_pointer(s, out, padded * height);
    if (r == CUDA_SUCCESS) *pitch = padded;
    return r;
  });
}

FAKE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* out, size_t bytes, unsigned flags) {
  return guarded("cuMemAllocManaged", true, [&](State& s) {
    // CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST (cuda.h).
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    return alloc_pointer(s, out, bytes);
  });
}

// From an application's pool: the fake has no pools, so any non-null pool handle stands for one.
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* out, size_t bytes, CUmemoryPool pool,
                                             CUstream) {
  return guarded("cuMemAllocFromPoolAsync", true, [&](State& s) {
    return pool == nullptr ? CUDA_ERROR_INVALID_VALUE : alloc_pointer(s, out, bytes);
  });
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* out, size_t bytes, CUmemoryPool pool,
                                                  CUstream) {
  return guarded("cuMemAllocFromPoolAsync_ptsz", true, [&](State& s) {
    return pool == nullptr ? CUDA_ERROR_INVALID_VALUE : alloc_pointer(s, out, bytes);
  });
}

// The virtual memory API's physical allocations: a handle per allocation on prop's device (the
// fake maps nothing; cuMemMap and the rest are not faked).
FAKE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes,
                                 const CUmemAllocationProp* prop, unsigned long long flags) {
  return guarded("cuMemCreate", true, [&](State& s) {
    if (handle == nullptr || bytes == 0 || prop == nullptr || flags != 0 ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || !valid_device(s, prop->location.id)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::uint64_t h = 0;
    const CUresult r = alloc_device(s, &h, bytes, true, prop->location.id);
    if (r == CUDA_SUCCESS) *handle = h;
    return r;
  });
}
FAKE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  return guarded("cuMemRelease", true, [&](State& s) { return free_device(s, handle, true); });
}

FAKE_EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  return guarded("cuMemGetInfo", true, [&](State& s) {
    if (free_bytes == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = no_context(s); r != CUDA_SUCCESS) return r;
    const auto& d = s.devices.at(static_cast<std::size_t>(s.context(s.current_context())->device));
    *total = d.memory_bytes;
    *free_bytes = d.memory_bytes - d.used_bytes;
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  return guarded("cuMemcpyHtoD", true, [&](State& s) {
    if (s.check_range(dst, bytes) == nullptr || src == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Op op;
    op.kind = OpKind::kCopyHtoD;
    op.dst = dst;
    op.src = reinterpret_cast<std::uint64_t>(src);
    op.bytes = bytes;
    return sync_op(s, std::move(op), "cuMemcpyHtoD");
  });
}

FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  return guarded("cuMemcpyDtoH", true, [&](State& s) {
    if (s.check_range(src, bytes) == nullptr || dst == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Op op;
    op.kind = OpKind::kCopyDtoH;
    op.dst = reinterpret_cast<std::uint64_t>(dst);
    op.src = src;
    op.bytes = bytes;
    return sync_op(s, std::move(op), "cuMemcpyDtoH");
  });
}

FAKE_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes,
                                          CUstream h) {
  return copy_async("cuMemcpyHtoDAsync", OpKind::kCopyHtoD, dst,
                    reinterpret_cast<std::uint64_t>(src), bytes, h);
}

FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream h) {
  return copy_async("cuMemcpyDtoHAsync", OpKind::kCopyDtoH, reinterpret_cast<std::uint64_t>(dst),
                    src, bytes, h);
}

FAKE_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n) {
  return guarded("cuMemsetD8", true, [&](State& s) {
    if (s.check_range(dst, n) == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Op op;
    op.kind = OpKind::kMemset;
    op.dst = dst;
    op.bytes = n;
    op.value = value;
    return sync_op(s, std::move(op), "cuMemsetD8");
  });
}

FAKE_EXPORT CUresult cuMemHostAlloc(void** out, size_t bytes, unsigned int flags) {
  return guarded("cuMemHostAlloc", true, [&](State& s) {
    // CU_MEMHOSTALLOC_PORTABLE | DEVICEMAP | WRITECOMBINED (cuda.h:3248-3260).
    if (out == nullptr || bytes == 0 || flags > 0x7) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = no_context(s); r != CUDA_SUCCESS) return r;
    void* p = nullptr;
    if (posix_memalign(&p, 4096, bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    std::memset(p, 0, bytes);
    const int dev = s.context(s.current_context())->device;
    s.allocations()[reinterpret_cast<std::uint64_t>(p)] = fake_cuda::Allocation{bytes, true, dev};
    *out = p;
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuMemFreeHost(void* p) {
  return guarded("cuMemFreeHost", true, [&](State& s) {
    auto it = s.allocations().find(reinterpret_cast<std::uint64_t>(p));
    if (it == s.allocations().end() || !it->second.host) return CUDA_ERROR_INVALID_VALUE;
    std::free(p);
    s.allocations().erase(it);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* out, void* p, unsigned int flags) {
  return guarded("cuMemHostGetDevicePointer", true, [&](State& s) {
    if (out == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    const auto addr = reinterpret_cast<std::uint64_t>(p);
    if (s.check_range(addr, 1) == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto it = std::prev(s.allocations().upper_bound(addr));
    if (!it->second.host) return CUDA_ERROR_INVALID_VALUE;
    // Unified addressing: the device sees mapped host memory at the host address
    // (cuda_runtime_api.h:8340-8350, notes section 6).
    *out = addr;
    return CUDA_SUCCESS;
  });
}

// ---- Libraries, kernels, launches ----------------------------------------------------------

FAKE_EXPORT CUresult cuLibraryLoadData(CUlibrary* out, const void* code, CUjit_option*, void**,
                                       unsigned int, CUlibraryOption*, void**, unsigned int) {
  return guarded("cuLibraryLoadData", true, [&](State& s) {
    if (out == nullptr || code == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const auto* b = static_cast<const unsigned char*>(code);
    const std::size_t size = fake_cuda::image_size(code);
    const std::uint64_t id = s.next_id();
    s.libraries[id].image.assign(b, b + size);
    s.note(json{{"call", "cuLibraryLoadData"}, {"library", id}, {"bytes", size}});
    *out = make_handle<CUlibrary>(Kind::kLibrary, id);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuLibraryUnload(CUlibrary h) {
  return guarded("cuLibraryUnload", true, [&](State& s) {
    const std::uint64_t id = fake_cuda::handle_id(h, Kind::kLibrary);
    if (s.libraries.erase(id) == 0) return CUDA_ERROR_INVALID_HANDLE;
    std::erase_if(s.kernels, [&](const auto& k) { return k.second.library == id; });
    return CUDA_SUCCESS;
  });
}

namespace {
bool ident_char(unsigned char c) {
  return std::isalnum(c) != 0 || c == '_' || c == '$';
}

// Whether `name` occurs in the image as a whole symbol (the fatbin holds the kernels' names in
// its ELF string tables and PTX; a misspelt name is absent, as the real driver finds it).
bool image_has(const std::vector<unsigned char>& image, const std::string& name) {
  if (name.empty()) return false;
  auto it = image.begin();
  while ((it = std::search(it, image.end(), name.begin(), name.end())) != image.end()) {
    const bool left = it == image.begin() || !ident_char(*(it - 1));
    const auto after = it + static_cast<std::ptrdiff_t>(name.size());
    const bool right = after == image.end() || !ident_char(*after);
    if (left && right) return true;
    ++it;
  }
  return false;
}
}  // namespace

FAKE_EXPORT CUresult cuLibraryGetKernel(CUkernel* out, CUlibrary h, const char* name) {
  return guarded("cuLibraryGetKernel", true, [&](State& s) {
    if (out == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const std::uint64_t lib = fake_cuda::handle_id(h, Kind::kLibrary);
    auto lit = s.libraries.find(lib);
    if (lit == s.libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
    for (const auto& [id, k] : s.kernels) {
      if (k.library == lib && k.name == name) {
        *out = make_handle<CUkernel>(Kind::kKernel, id);
        return CUDA_SUCCESS;
      }
    }
    if (!image_has(lit->second.image, name)) return CUDA_ERROR_NOT_FOUND;
    const std::uint64_t id = s.next_id();
    s.kernels[id] = fake_cuda::Kernel{lib, name, 48 * 1024};
    *out = make_handle<CUkernel>(Kind::kKernel, id);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuKernelGetAttribute(int* value, CUfunction_attribute attr, CUkernel h,
                                          CUdevice dev) {
  return guarded("cuKernelGetAttribute", true, [&](State& s) {
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    auto it = s.kernels.find(fake_cuda::handle_id(h, Kind::kKernel));
    if (it == s.kernels.end()) return CUDA_ERROR_INVALID_HANDLE;
    switch (attr) {
      case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
      case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
      case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = 0; break;
      case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = kRegisters; break;
      case CU_FUNC_ATTRIBUTE_PTX_VERSION:
      case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
        *value = device(s, dev).cc_major * 10 + device(s, dev).cc_minor;
        break;
      case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        *value = it->second.max_dynamic_shared;
        break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attr, int value, CUkernel h,
                                          CUdevice dev) {
  return guarded("cuKernelSetAttribute", true, [&](State& s) {
    if (!valid_device(s, dev)) return CUDA_ERROR_INVALID_DEVICE;
    auto it = s.kernels.find(fake_cuda::handle_id(h, Kind::kKernel));
    if (it == s.kernels.end()) return CUDA_ERROR_INVALID_HANDLE;
    if (attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
      if (value < 0 || value > kSharedOptin) return CUDA_ERROR_INVALID_VALUE;
      it->second.max_dynamic_shared = value;
      return CUDA_SUCCESS;
    }
    return attr == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT ? CUDA_SUCCESS
                                                                      : CUDA_ERROR_INVALID_VALUE;
  });
}

FAKE_EXPORT CUresult cuFuncGetName(const char** name, CUfunction f) {
  return guarded("cuFuncGetName", true, [&](State& s) {
    if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto it = s.kernels.find(fake_cuda::handle_id(f, Kind::kKernel));
    if (it == s.kernels.end()) return CUDA_ERROR_INVALID_HANDLE;
    *name = it->second.name.c_str();
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuKernelGetName(const char** name, CUkernel k) {
  return cuFuncGetName(name, reinterpret_cast<CUfunction>(k));
}

FAKE_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction f,
                                                                 int block_size,
                                                                 size_t dynamic_shared) {
  return guarded("cuOccupancyMaxActiveBlocksPerMultiprocessor", true, [&](State& s) {
    if (blocks == nullptr || block_size <= 0 || block_size > 1024) return CUDA_ERROR_INVALID_VALUE;
    if (s.kernels.count(fake_cuda::handle_id(f, Kind::kKernel)) == 0) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
    // 2048 threads and 32 blocks per SM; shared memory per block plus the 1 KiB the system
    // reserves per block (CUDA C++ Programming Guide, CC 9.0). ASSUMPTION: registers never limit.
    const int warps = (block_size + 31) / 32;
    int n = std::min(32, 64 / warps);
    if (dynamic_shared > 0) {
      n = std::min(n, static_cast<int>(kSharedPerSm / (dynamic_shared + 1024)));
    }
    *blocks = n;
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                    CUstream h, void** params, void** extra) {
  return launch_plain("cuLaunchKernel", "cuLaunchKernel", f, gx, gy, gz, bx, by, bz, shared, h,
                      params, extra);
}
FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                         unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                         CUstream h, void** params, void** extra) {
  return launch_plain("cuLaunchKernel", "cuLaunchKernel_ptsz", f, gx, gy, gz, bx, by, bz, shared, h,
                      params, extra);
}
FAKE_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                               unsigned bx, unsigned by, unsigned bz,
                                               unsigned shared, CUstream h, void** params) {
  return launch_plain("cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", f, gx, gy, gz, bx,
                      by, bz, shared, h, params, nullptr);
}
FAKE_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                    unsigned gz, unsigned bx, unsigned by,
                                                    unsigned bz, unsigned shared, CUstream h,
                                                    void** params) {
  return launch_plain("cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", f, gx, gy, gz,
                      bx, by, bz, shared, h, params, nullptr);
}
FAKE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                      void** extra) {
  return launch_ex("cuLaunchKernelEx", config, f, params, extra);
}
FAKE_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                           void** params, void** extra) {
  return launch_ex("cuLaunchKernelEx_ptsz", config, f, params, extra);
}

// ---- Graphs: just enough for a launch to be seen (an empty graph that logs graph_launch) ----

FAKE_EXPORT CUresult cuGraphCreate(CUgraph* out, unsigned int flags) {
  return guarded("cuGraphCreate", true, [&](State& s) {
    if (out == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    const std::uint64_t id = s.next_id();
    s.graphs.insert(id);
    *out = make_handle<CUgraph>(Kind::kGraph, id);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec* out, CUgraph g, unsigned long long) {
  return guarded("cuGraphInstantiate", true, [&](State& s) {
    const std::uint64_t gid = fake_cuda::handle_id(g, Kind::kGraph);
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (s.graphs.count(gid) == 0) return CUDA_ERROR_INVALID_HANDLE;
    const std::uint64_t id = s.next_id();
    s.graph_execs[id] = gid;
    *out = make_handle<CUgraphExec>(Kind::kGraphExec, id);
    return CUDA_SUCCESS;
  });
}

FAKE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec h) {
  return guarded("cuGraphExecDestroy", true, [&](State& s) {
    return s.graph_execs.erase(fake_cuda::handle_id(h, Kind::kGraphExec)) == 1
               ? CUDA_SUCCESS
               : CUDA_ERROR_INVALID_HANDLE;
  });
}

FAKE_EXPORT CUresult cuGraphDestroy(CUgraph h) {
  return guarded("cuGraphDestroy", true, [&](State& s) {
    return s.graphs.erase(fake_cuda::handle_id(h, Kind::kGraph)) == 1 ? CUDA_SUCCESS
                                                                      : CUDA_ERROR_INVALID_HANDLE;
  });
}

FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec h, CUstream s) {
  return graph_launch("cuGraphLaunch", h, s);
}
FAKE_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec h, CUstream s) {
  return graph_launch("cuGraphLaunch_ptsz", h, s);
}

FAKE_EXPORT CUresult cuGetExportTable(const void** table, const CUuuid*) {
  return guarded("cuGetExportTable", false, [&](State&) {
    if (table != nullptr) *table = nullptr;
    return CUDA_ERROR_NOT_SUPPORTED;  // no private tables in the fake
  });
}

// ---- cuGetProcAddress ----------------------------------------------------------------------

namespace {

struct Proc {
  const char* name;  // the base name callers ask for
  int version;       // the CUDA version that introduced this ABI (cudaTypedefs.h PFN_*_vNNNNN)
  bool ptsz;         // the per-thread default stream variant
  bool green;        // hidden when the script says green_contexts: false
  void* fn;
};

template <typename F>
void* fp(F f) {
  return reinterpret_cast<void*>(f);
}

CUresult get_proc_address_v1(const char*, void**, int, cuuint64_t);

const std::vector<Proc>& procs() {
  static const std::vector<Proc> table = {
      {"cuInit", 2000, false, false, fp(&cuInit)},
      {"cuDriverGetVersion", 2020, false, false, fp(&cuDriverGetVersion)},
      {"cuGetErrorName", 6000, false, false, fp(&cuGetErrorName)},
      {"cuGetErrorString", 6000, false, false, fp(&cuGetErrorString)},
      {"cuDeviceGetCount", 2000, false, false, fp(&cuDeviceGetCount)},
      {"cuDeviceGet", 2000, false, false, fp(&cuDeviceGet)},
      {"cuDeviceGetName", 2000, false, false, fp(&cuDeviceGetName)},
      {"cuDeviceGetAttribute", 2000, false, false, fp(&cuDeviceGetAttribute)},
      {"cuDeviceTotalMem", 3020, false, false, fp(&cuDeviceTotalMem_v2)},
      {"cuDeviceGetUuid", 11040, false, false, fp(&cuDeviceGetUuid_v2)},
      {"cuDevicePrimaryCtxRetain", 7000, false, false, fp(&cuDevicePrimaryCtxRetain)},
      {"cuDevicePrimaryCtxRelease", 11000, false, false, fp(&cuDevicePrimaryCtxRelease_v2)},
      {"cuCtxSetCurrent", 4000, false, false, fp(&cuCtxSetCurrent)},
      {"cuCtxGetCurrent", 4000, false, false, fp(&cuCtxGetCurrent)},
      {"cuCtxSynchronize", 2000, false, false, fp(&cuCtxSynchronize)},
      {"cuCtxSynchronize", 13000, false, false, fp(&cuCtxSynchronize_v2)},
      {"cuCtxPushCurrent", 4000, false, false, fp(&cuCtxPushCurrent_v2)},
      {"cuCtxPopCurrent", 4000, false, false, fp(&cuCtxPopCurrent_v2)},
      {"cuCtxGetDevice", 2000, false, false, fp(&cuCtxGetDevice)},
      {"cuCtxGetDevice", 13000, false, false, fp(&cuCtxGetDevice_v2)},
      {"cuDeviceGetDevResource", 12040, false, true, fp(&cuDeviceGetDevResource)},
      {"cuDevSmResourceSplitByCount", 12040, false, true, fp(&cuDevSmResourceSplitByCount)},
      {"cuDevResourceGenerateDesc", 12040, false, true, fp(&cuDevResourceGenerateDesc)},
      {"cuGreenCtxCreate", 12040, false, true, fp(&cuGreenCtxCreate)},
      {"cuGreenCtxDestroy", 12040, false, true, fp(&cuGreenCtxDestroy)},
      {"cuCtxFromGreenCtx", 12040, false, true, fp(&cuCtxFromGreenCtx)},
      {"cuGreenCtxGetDevResource", 12040, false, true, fp(&cuGreenCtxGetDevResource)},
      {"cuGreenCtxStreamCreate", 12050, false, true, fp(&cuGreenCtxStreamCreate)},
      {"cuStreamCreate", 2000, false, false, fp(&cuStreamCreate)},
      {"cuStreamCreateWithPriority", 5050, false, false, fp(&cuStreamCreateWithPriority)},
      {"cuStreamDestroy", 4000, false, false, fp(&cuStreamDestroy_v2)},
      {"cuStreamSynchronize", 2000, false, false, fp(&cuStreamSynchronize)},
      {"cuStreamSynchronize", 7000, true, false, fp(&cuStreamSynchronize_ptsz)},
      {"cuStreamQuery", 2000, false, false, fp(&cuStreamQuery)},
      {"cuStreamQuery", 7000, true, false, fp(&cuStreamQuery_ptsz)},
      {"cuStreamWaitEvent", 3020, false, false, fp(&cuStreamWaitEvent)},
      {"cuStreamWaitEvent", 7000, true, false, fp(&cuStreamWaitEvent_ptsz)},
      {"cuStreamIsCapturing", 10000, false, false, fp(&cuStreamIsCapturing)},
      {"cuStreamIsCapturing", 10000, true, false, fp(&cuStreamIsCapturing_ptsz)},
      {"cuEventCreate", 2000, false, false, fp(&cuEventCreate)},
      {"cuEventDestroy", 4000, false, false, fp(&cuEventDestroy_v2)},
      {"cuEventRecord", 2000, false, false, fp(&cuEventRecord)},
      {"cuEventRecord", 7000, true, false, fp(&cuEventRecord_ptsz)},
      {"cuEventQuery", 2000, false, false, fp(&cuEventQuery)},
      {"cuEventSynchronize", 2000, false, false, fp(&cuEventSynchronize)},
      {"cuEventElapsedTime", 2000, false, false, fp(&fake_event_elapsed_v1)},
      {"cuEventElapsedTime", 12080, false, false, fp(&cuEventElapsedTime_v2)},
      {"cuMemAlloc", 3020, false, false, fp(&cuMemAlloc_v2)},
      {"cuMemFree", 3020, false, false, fp(&cuMemFree_v2)},
      {"cuMemGetInfo", 3020, false, false, fp(&cuMemGetInfo_v2)},
      {"cuMemAllocAsync", 11020, false, false, fp(&cuMemAllocAsync)},
      {"cuMemAllocAsync", 11020, true, false, fp(&cuMemAllocAsync_ptsz)},
      {"cuMemFreeAsync", 11020, false, false, fp(&cuMemFreeAsync)},
      {"cuMemFreeAsync", 11020, true, false, fp(&cuMemFreeAsync_ptsz)},
      {"cuMemCreate", 10020, false, false, fp(&cuMemCreate)},
      {"cuMemAllocPitch", 3020, false, false, fp(&cuMemAllocPitch_v2)},
      {"cuMemAllocManaged", 6000, false, false, fp(&cuMemAllocManaged)},
      {"cuMemAllocFromPoolAsync", 11020, false, false, fp(&cuMemAllocFromPoolAsync)},
      {"cuMemAllocFromPoolAsync", 11020, true, false, fp(&cuMemAllocFromPoolAsync_ptsz)},
      {"cuMemRelease", 10020, false, false, fp(&cuMemRelease)},
      {"cuMemcpyHtoD", 3020, false, false, fp(&cuMemcpyHtoD_v2)},
      {"cuMemcpyDtoH", 3020, false, false, fp(&cuMemcpyDtoH_v2)},
      {"cuMemcpyHtoDAsync", 3020, false, false, fp(&cuMemcpyHtoDAsync_v2)},
      {"cuMemcpyDtoHAsync", 3020, false, false, fp(&cuMemcpyDtoHAsync_v2)},
      {"cuMemsetD8", 3020, false, false, fp(&cuMemsetD8_v2)},
      {"cuMemHostAlloc", 2020, false, false, fp(&cuMemHostAlloc)},
      {"cuMemFreeHost", 2000, false, false, fp(&cuMemFreeHost)},
      {"cuMemHostGetDevicePointer", 3020, false, false, fp(&cuMemHostGetDevicePointer_v2)},
      {"cuLibraryLoadData", 12000, false, false, fp(&cuLibraryLoadData)},
      {"cuLibraryUnload", 12000, false, false, fp(&cuLibraryUnload)},
      {"cuLibraryGetKernel", 12000, false, false, fp(&cuLibraryGetKernel)},
      {"cuKernelGetAttribute", 12000, false, false, fp(&cuKernelGetAttribute)},
      {"cuKernelSetAttribute", 12000, false, false, fp(&cuKernelSetAttribute)},
      {"cuKernelGetName", 12030, false, false, fp(&cuKernelGetName)},
      {"cuFuncGetName", 12030, false, false, fp(&cuFuncGetName)},
      {"cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050, false, false,
       fp(&cuOccupancyMaxActiveBlocksPerMultiprocessor)},
      {"cuLaunchKernel", 4000, false, false, fp(&cuLaunchKernel)},
      {"cuLaunchKernel", 7000, true, false, fp(&cuLaunchKernel_ptsz)},
      {"cuLaunchKernelEx", 11060, false, false, fp(&cuLaunchKernelEx)},
      {"cuLaunchKernelEx", 11060, true, false, fp(&cuLaunchKernelEx_ptsz)},
      {"cuLaunchCooperativeKernel", 9000, false, false, fp(&cuLaunchCooperativeKernel)},
      {"cuLaunchCooperativeKernel", 9000, true, false, fp(&cuLaunchCooperativeKernel_ptsz)},
      {"cuGraphCreate", 10000, false, false, fp(&cuGraphCreate)},
      {"cuGraphInstantiateWithFlags", 11040, false, false, fp(&cuGraphInstantiateWithFlags)},
      {"cuGraphExecDestroy", 10000, false, false, fp(&cuGraphExecDestroy)},
      {"cuGraphDestroy", 10000, false, false, fp(&cuGraphDestroy)},
      {"cuGraphLaunch", 10000, false, false, fp(&cuGraphLaunch)},
      {"cuGraphLaunch", 10000, true, false, fp(&cuGraphLaunch_ptsz)},
      {"cuGetExportTable", 3000, false, false, fp(&cuGetExportTable)},
      {"cuGetProcAddress", 11030, false, false, fp(&get_proc_address_v1)},
      {"cuGetProcAddress", 12000, false, false, fp(&cuGetProcAddress_v2)},
  };
  return table;
}

// The newest variant of `symbol` no newer than `version`, the per-thread one when the flags ask
// for it and it exists (cuda.h:24290-24320, CU_GET_PROC_ADDRESS_* at 2411-2413).
CUresult lookup(State& s, const char* symbol, void** pfn, int version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr || flags > 3) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const bool ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const Proc* best = nullptr;
  bool exists = false;
  for (const Proc& p : procs()) {
    if (std::strcmp(p.name, symbol) != 0 || (p.green && !s.green_contexts)) continue;
    if (p.version > s.driver_version) continue;  // newer than the scripted driver: unknown to it
    exists = true;
    if (p.version > version) continue;
    const bool better = best == nullptr || p.version > best->version ||
                        (p.version == best->version && p.ptsz == ptsz);
    if (p.ptsz && !ptsz) continue;
    if (better) best = &p;
  }
  if (best == nullptr) {
    if (status != nullptr) {
      *status = exists ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                       : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return CUDA_ERROR_NOT_FOUND;
  }
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  *pfn = best->fn;
  return CUDA_SUCCESS;
}

CUresult get_proc_address_v1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return guarded("cuGetProcAddress", false,
                 [&](State& s) { return lookup(s, symbol, pfn, version, flags, nullptr); });
}

}  // namespace

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  return guarded("cuGetProcAddress", false,
                 [&](State& s) { return lookup(s, symbol, pfn, version, flags, status); });
}

// The CUDA 11.3 ABI, exported under its unversioned name (cuda.h maps cuGetProcAddress to _v2).
extern "C" __attribute__((visibility("default"))) CUresult fake_get_proc_address_v1(
    const char* symbol, void** pfn, int version, cuuint64_t flags) __asm__("cuGetProcAddress");
CUresult fake_get_proc_address_v1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return get_proc_address_v1(symbol, pfn, version, flags);
}

// ---- Test controls (fake_cuda_control.h) ---------------------------------------------------

namespace {
std::string& last_error() {
  static std::string e;
  return e;
}
std::string& log_text() {
  static std::string t;
  return t;
}
}  // namespace

FAKE_EXPORT int fake_cuda_reset(const char* script_json) {
  try {
    std::lock_guard lock(fake_cuda::state_mutex());
    json script = json::object();
    if (script_json != nullptr && *script_json != '\0') script = json::parse(script_json);
    fake_cuda::replace_state(std::make_unique<State>(script));
    last_error().clear();
    return 0;
  } catch (const std::exception& e) {
    last_error() = e.what();
    return -1;
  } catch (...) {
    last_error() = "unknown error";
    return -1;
  }
}

FAKE_EXPORT const char* fake_cuda_log_json(void) {
  try {
    std::lock_guard lock(fake_cuda::state_mutex());
    log_text() = fake_cuda::state().log_json().dump();
  } catch (...) {
    log_text() = "{}";
  }
  return log_text().c_str();
}

FAKE_EXPORT void fake_cuda_progress(void) {
  try {
    std::lock_guard lock(fake_cuda::state_mutex());
    fake_cuda::state().run();
    fake_cuda::write_log_file_now();
  } catch (...) {
  }
}

FAKE_EXPORT const char* fake_cuda_last_error(void) {
  return last_error().c_str();
}
