// A CUDA program that reaches the driver exactly as the CUDA runtime does (cudart cannot run
// against the fake libcuda: it needs the driver's private export tables, docs/cuda.md "The
// interposer"): dlopen("libcuda.so.1"), dlsym cuGetProcAddress_v2, then every entry point through
// it with the versions and flags cudart 13 asks for (cuLaunchKernel 4000; the per-thread
// variants 7000/11060 with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM). cuLaunchKernelEx,
// cuLaunchCooperativeKernel and cuGraphLaunch are also found with plain dlsym, as a program
// linked against libcuda would.
//
//   driver_app launches     copy in, seven launches (one cooperative grid too large for a small
//                           partition), copy out, synchronise; prints "ok"
//   driver_app threads      four threads, each on its own stream, launch 500 kernels at once
//                           (the first launches race to make the partition)
//   driver_app dlsym-next   checks that dlsym(RTLD_NEXT, ...) still answers for the caller
//   driver_app memory       allocates 256 KiB buffers through cuMemAlloc, cuMemAllocAsync (plain
//                           and _ptsz) and cuMemCreate, then a fifth before and after a free,
//                           printing each result and what cuMemGetInfo says along the way
//   driver_app memory-other the other ways to allocate: pitched, managed, from a pool
//   driver_app memory-steps:PATH  one 256 KiB buffer, then writes PATH.ready and waits (at most
//                           10 s) for PATH.go to exist; then allocates 256 KiB buffers until one
//                           is refused (at most 8), printing each result and cuMemGetInfo's
//                           answer before and after (a limit the daemon changes meanwhile)
//   driver_app graphs:MS     one stream: a graph launched every millisecond for MS ms (a serving
//                           engine's captured decode steps), then synchronises
//   driver_app phases:P,...  one stream, phase by phase: "onMS" launches kernel "phase<i>" every
//                           millisecond for MS ms, "offMS" launches nothing for MS ms; then
//                           synchronises (a serving loop that goes idle and comes back)
//   driver_app fork:MS       one launch, then a child that sleeps MS ms and outlives the
//                           program (a data-loader worker); prints "child PID"

#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

GetProcAddressV2 g_gpa = nullptr;
int g_failures = 0;

template <class F>
F get(const char* name, int version, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (g_gpa(name, &p, version, flags, &status) != CUDA_SUCCESS || p == nullptr) {
    std::fprintf(stderr, "cuGetProcAddress(%s, %d, %llu) failed\n", name, version,
                 static_cast<unsigned long long>(flags));
    ++g_failures;
  }
  return reinterpret_cast<F>(p);
}

bool ok(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "%s returned %d\n", what, static_cast<int>(r));
  ++g_failures;
  return false;
}

int dlsym_next() {
  // The interposer exports dlsym and comes right after the executable in the search order, so
  // the next "dlsym" after this program is the interposer's (or libc's without it): the same as
  // the global lookup. An interposer that called glibc's dlsym itself would answer libc's here.
  void* next = dlsym(RTLD_NEXT, "dlsym");
  void* global = dlsym(RTLD_DEFAULT, "dlsym");
  std::printf("next=%p global=%p\n", next, global);
  if (next == nullptr || next != global) return 1;
  std::printf("ok\n");
  return 0;
}

int launches() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
    return 2;
  }
  g_gpa = reinterpret_cast<GetProcAddressV2>(dlsym(lib, "cuGetProcAddress_v2"));
  if (g_gpa == nullptr) return 2;
  // cudart asks for cuGetProcAddress itself at 11030 and 12000 and then keeps using it.
  auto gpa_v1 = get<GetProcAddressV1>("cuGetProcAddress", 11030);
  g_gpa = get<GetProcAddressV2>("cuGetProcAddress", 12000);
  if (g_gpa == nullptr || gpa_v1 == nullptr) return 2;

  auto init = get<CUresult (*)(unsigned)>("cuInit", 2000);
  auto device_get = get<CUresult (*)(CUdevice*, int)>("cuDeviceGet", 2000);
  auto retain = get<CUresult (*)(CUcontext*, CUdevice)>("cuDevicePrimaryCtxRetain", 7000);
  auto set_current = get<CUresult (*)(CUcontext)>("cuCtxSetCurrent", 4000);
  auto stream_create = get<CUresult (*)(CUstream*, unsigned)>("cuStreamCreate", 2000);
  auto stream_sync = get<CUresult (*)(CUstream)>("cuStreamSynchronize", 2000);
  auto ctx_sync = get<CUresult (*)()>("cuCtxSynchronize", 2000);
  auto mem_alloc = get<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020);
  auto htod =
      get<CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>("cuMemcpyHtoDAsync", 3020);
  auto dtoh = get<CUresult (*)(void*, CUdeviceptr, size_t, CUstream)>("cuMemcpyDtoHAsync", 3020);
  auto load = get<CUresult (*)(CUlibrary*, const void*, CUjit_option*, void**, unsigned,
                               CUlibraryOption*, void**, unsigned)>("cuLibraryLoadData", 12000);
  auto get_kernel =
      get<CUresult (*)(CUkernel*, CUlibrary, const char*)>("cuLibraryGetKernel", 12000);
  auto graph_create = get<CUresult (*)(CUgraph*, unsigned)>("cuGraphCreate", 10000);
  auto graph_instantiate = get<CUresult (*)(CUgraphExec*, CUgraph, unsigned long long)>(
      "cuGraphInstantiateWithFlags", 11040);
  using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, CUstream, void**, void**);
  using LaunchEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
  using LaunchCooperative = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                         unsigned, unsigned, unsigned, CUstream, void**);
  using GraphLaunch = CUresult (*)(CUgraphExec, CUstream);
  auto launch = get<LaunchKernel>("cuLaunchKernel", 4000);
  auto launch_ptsz =
      get<LaunchKernel>("cuLaunchKernel", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  auto launch_ex_ptsz =
      get<LaunchEx>("cuLaunchKernelEx", 11060, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  auto launch_ex = reinterpret_cast<LaunchEx>(dlsym(lib, "cuLaunchKernelEx"));
  auto cooperative = reinterpret_cast<LaunchCooperative>(dlsym(lib, "cuLaunchCooperativeKernel"));
  auto graph_launch = reinterpret_cast<GraphLaunch>(dlsym(lib, "cuGraphLaunch"));
  if (g_failures > 0 || launch_ex == nullptr || cooperative == nullptr || graph_launch == nullptr) {
    return 2;
  }
  // The 11.3 lookup answers like the 12.0 one.
  void* via_v1 = nullptr;
  if (gpa_v1("cuLaunchKernel", &via_v1, 4000, 0) != CUDA_SUCCESS ||
      via_v1 != reinterpret_cast<void*>(launch)) {
    std::fprintf(stderr, "cuGetProcAddress (11.3) gave %p for cuLaunchKernel, _v2 gave %p\n",
                 via_v1, reinterpret_cast<void*>(launch));
    return 2;
  }

  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (!ok(init(0), "cuInit") || !ok(device_get(&dev, 0), "cuDeviceGet") ||
      !ok(retain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      !ok(set_current(ctx), "cuCtxSetCurrent")) {
    return 1;
  }
  // A text image naming the kernels (the fake looks the names up in the image).
  static const char kImage[] = "app_step app_ptsz app_ex app_ex_ptsz app_coop_big app_coop";
  CUlibrary library = nullptr;
  if (!ok(load(&library, kImage, nullptr, nullptr, 0, nullptr, nullptr, 0), "cuLibraryLoadData")) {
    return 1;
  }
  auto kernel = [&](const char* name) {
    CUkernel k = nullptr;
    ok(get_kernel(&k, library, name), name);
    return reinterpret_cast<CUfunction>(k);  // cudart launches CUkernel handles (cuda.h:17492)
  };
  CUstream s = nullptr;
  CUdeviceptr buffer = 0;
  if (!ok(stream_create(&s, 0), "cuStreamCreate") || !ok(mem_alloc(&buffer, 256), "cuMemAlloc")) {
    return 1;
  }
  unsigned char host[256] = {};
  ok(htod(buffer, host, sizeof host, s), "cuMemcpyHtoDAsync");
  ok(launch(kernel("app_step"), 4, 1, 1, 128, 1, 1, 0, s, nullptr, nullptr), "cuLaunchKernel");
  ok(launch_ptsz(kernel("app_ptsz"), 2, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr),
     "cuLaunchKernel_ptsz");
  CUlaunchConfig config{};
  config.gridDimX = 8;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 256;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = s;
  ok(launch_ex(&config, kernel("app_ex"), nullptr, nullptr), "cuLaunchKernelEx");
  config.hStream = nullptr;  // the per-thread default stream, through the _ptsz variant
  ok(launch_ex_ptsz(&config, kernel("app_ex_ptsz"), nullptr, nullptr), "cuLaunchKernelEx_ptsz");
  // 4096 blocks of 1024 threads are never co-resident on a small partition (2 per SM).
  ok(cooperative(kernel("app_coop_big"), 4096, 1, 1, 1024, 1, 1, 0, s, nullptr),
     "cuLaunchCooperativeKernel (large)");
  ok(cooperative(kernel("app_coop"), 8, 1, 1, 256, 1, 1, 0, s, nullptr),
     "cuLaunchCooperativeKernel");
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ok(graph_create(&graph, 0), "cuGraphCreate");
  ok(graph_instantiate(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  ok(graph_launch(exec, s), "cuGraphLaunch");
  ok(dtoh(host, buffer, sizeof host, s), "cuMemcpyDtoHAsync");
  ok(stream_sync(s), "cuStreamSynchronize");
  ok(ctx_sync(), "cuCtxSynchronize");
  if (g_failures > 0) return 1;
  std::printf("ok\n");
  return 0;
}

// The entry points a program that loads a module and launches from it fetches, with cudart's
// versions.
using LaunchKernelFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, CUstream, void**, void**);
struct KernelCalls {
  CUresult (*stream_create)(CUstream*, unsigned) = nullptr;
  CUresult (*stream_sync)(CUstream) = nullptr;
  CUresult (*load)(CUlibrary*, const void*, CUjit_option*, void**, unsigned, CUlibraryOption*,
                   void**, unsigned) = nullptr;
  CUresult (*get_kernel)(CUkernel*, CUlibrary, const char*) = nullptr;
  LaunchKernelFn launch = nullptr;
};

KernelCalls kernel_calls() {
  KernelCalls k;
  k.stream_create = get<decltype(k.stream_create)>("cuStreamCreate", 2000);
  k.stream_sync = get<decltype(k.stream_sync)>("cuStreamSynchronize", 2000);
  k.load = get<decltype(k.load)>("cuLibraryLoadData", 12000);
  k.get_kernel = get<decltype(k.get_kernel)>("cuLibraryGetKernel", 12000);
  k.launch = get<LaunchKernelFn>("cuLaunchKernel", 4000);
  return k;
}

int threads() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 2;
  g_gpa = reinterpret_cast<GetProcAddressV2>(dlsym(lib, "cuGetProcAddress_v2"));
  if (g_gpa == nullptr) return 2;
  auto init = get<CUresult (*)(unsigned)>("cuInit", 2000);
  auto device_get = get<CUresult (*)(CUdevice*, int)>("cuDeviceGet", 2000);
  auto retain = get<CUresult (*)(CUcontext*, CUdevice)>("cuDevicePrimaryCtxRetain", 7000);
  auto set_current = get<CUresult (*)(CUcontext)>("cuCtxSetCurrent", 4000);
  const auto [stream_create, stream_sync, load, get_kernel, launch] = kernel_calls();
  if (g_failures > 0) return 2;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUlibrary library = nullptr;
  static const char kImage[] = "app_t0 app_t1 app_t2 app_t3";
  if (!ok(init(0), "cuInit") || !ok(device_get(&dev, 0), "cuDeviceGet") ||
      !ok(retain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      !ok(set_current(ctx), "cuCtxSetCurrent") ||
      !ok(load(&library, kImage, nullptr, nullptr, 0, nullptr, nullptr, 0), "cuLibraryLoadData")) {
    return 1;
  }
  constexpr int kThreads = 4;
  constexpr int kLaunches = 500;
  std::atomic<int> ready{0};
  std::vector<std::thread> workers;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      CUstream s = nullptr;
      CUkernel k = nullptr;
      const std::string name = "app_t" + std::to_string(t);
      if (set_current(ctx) != CUDA_SUCCESS || stream_create(&s, 0) != CUDA_SUCCESS ||
          get_kernel(&k, library, name.c_str()) != CUDA_SUCCESS) {
        ++failures[t];
        return;
      }
      // Start together, so the launches (and the first, which makes the partition) overlap.
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < kLaunches; ++i) {
        if (launch(reinterpret_cast<CUfunction>(k), 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr) !=
            CUDA_SUCCESS) {
          ++failures[t];
        }
      }
      if (stream_sync(s) != CUDA_SUCCESS) ++failures[t];
    });
  }
  for (auto& w : workers) w.join();
  for (int f : failures) {
    if (f != 0) return 1;
  }
  std::printf("ok\n");
  return 0;
}

// As cudart starts: dlopen libcuda.so.1, cuGetProcAddress_v2 by dlsym, cuInit, and device 0's
// primary context made current. False on any failure.
bool open_device(CUdevice* dev) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return false;
  g_gpa = reinterpret_cast<GetProcAddressV2>(dlsym(lib, "cuGetProcAddress_v2"));
  if (g_gpa == nullptr) return false;
  auto init = get<CUresult (*)(unsigned)>("cuInit", 2000);
  auto device_get = get<CUresult (*)(CUdevice*, int)>("cuDeviceGet", 2000);
  auto retain = get<CUresult (*)(CUcontext*, CUdevice)>("cuDevicePrimaryCtxRetain", 7000);
  auto set_current = get<CUresult (*)(CUcontext)>("cuCtxSetCurrent", 4000);
  if (g_failures > 0) return false;
  CUcontext ctx = nullptr;
  return ok(init(0), "cuInit") && ok(device_get(dev, 0), "cuDeviceGet") &&
         ok(retain(&ctx, *dev), "cuDevicePrimaryCtxRetain") &&
         ok(set_current(ctx), "cuCtxSetCurrent");
}

using MemGetInfoFn = CUresult (*)(size_t*, size_t*);

// Prints what cuMemGetInfo answers, as "WHEN free=F total=T".
void print_info(MemGetInfoFn info, const char* when) {
  size_t free_bytes = 0, total = 0;
  if (ok(info(&free_bytes, &total), "cuMemGetInfo")) {
    std::printf("%s free=%zu total=%zu\n", when, free_bytes, total);
  }
}

int memory() {
  CUdevice dev = 0;
  if (!open_device(&dev)) return 2;
  auto alloc = get<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020);
  auto release = get<CUresult (*)(CUdeviceptr)>("cuMemFree", 3020);
  auto info = get<MemGetInfoFn>("cuMemGetInfo", 3020);
  using AllocAsync = CUresult (*)(CUdeviceptr*, size_t, CUstream);
  using FreeAsync = CUresult (*)(CUdeviceptr, CUstream);
  auto alloc_async = get<AllocAsync>("cuMemAllocAsync", 11020);
  auto alloc_async_ptsz =
      get<AllocAsync>("cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  auto free_async = get<FreeAsync>("cuMemFreeAsync", 11020);
  auto create = get<CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                                 unsigned long long)>("cuMemCreate", 10020);
  auto release_handle = get<CUresult (*)(CUmemGenericAllocationHandle)>("cuMemRelease", 10020);
  if (g_failures > 0) return 2;
  constexpr size_t kBuffer = 256 * 1024;
  print_info(info, "start");
  // Four buffers, one through each way of allocating: cuMemAlloc, cuMemAllocAsync (plain and
  // per-thread stream) and a physical allocation of the virtual memory API.
  CUdeviceptr plain = 0, async = 0, async_ptsz = 0, fifth = 0;
  CUmemGenericAllocationHandle handle = 0;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  std::printf("alloc 0: %d\n", static_cast<int>(alloc(&plain, kBuffer)));
  std::printf("alloc 1: %d\n", static_cast<int>(alloc_async(&async, kBuffer, nullptr)));
  std::printf("alloc 2: %d\n", static_cast<int>(alloc_async_ptsz(&async_ptsz, kBuffer, nullptr)));
  std::printf("alloc 3: %d\n", static_cast<int>(create(&handle, kBuffer, &prop, 0)));
  print_info(info, "four");
  std::printf("alloc 4: %d\n", static_cast<int>(alloc(&fifth, kBuffer)));
  if (fifth != 0) ok(release(fifth), "cuMemFree");
  ok(free_async(async, nullptr), "cuMemFreeAsync");
  fifth = 0;
  std::printf("alloc 4 after a free: %d\n", static_cast<int>(alloc(&fifth, kBuffer)));
  for (CUdeviceptr b : {plain, fifth}) {
    if (b != 0) ok(release(b), "cuMemFree");
  }
  ok(free_async(async_ptsz, nullptr), "cuMemFreeAsync");
  ok(release_handle(handle), "cuMemRelease");
  print_info(info, "end");
  if (g_failures > 0) return 1;
  std::printf("ok\n");
  return 0;
}

// Under a 1 MiB limit: a pitched allocation of 256 rows of 1000 bytes (the fake pads rows to
// 1024: 256 KiB), 256 KiB of managed memory and two 256 KiB allocations from a pool (plain and
// _ptsz) fill it; one more byte is refused.
int memory_other() {
  CUdevice dev = 0;
  if (!open_device(&dev)) return 2;
  auto alloc = get<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020);
  auto release = get<CUresult (*)(CUdeviceptr)>("cuMemFree", 3020);
  auto pitched =
      get<CUresult (*)(CUdeviceptr*, size_t*, size_t, size_t, unsigned)>("cuMemAllocPitch", 3020);
  auto managed = get<CUresult (*)(CUdeviceptr*, size_t, unsigned)>("cuMemAllocManaged", 6000);
  using FromPool = CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
  auto from_pool = get<FromPool>("cuMemAllocFromPoolAsync", 11020);
  auto from_pool_ptsz = get<FromPool>("cuMemAllocFromPoolAsync", 11020,
                                      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  if (g_failures > 0) return 2;
  constexpr size_t kBuffer = 256 * 1024;
  auto* pool = reinterpret_cast<CUmemoryPool>(std::uintptr_t{1});  // the fake takes any
  CUdeviceptr p[5] = {};
  size_t pitch = 0;
  const CUresult pitched_result = pitched(&p[0], &pitch, 1000, 256, 4);
  std::printf("pitched: %d pitch=%zu\n", static_cast<int>(pitched_result), pitch);
  std::printf("managed: %d\n", static_cast<int>(managed(&p[1], kBuffer, CU_MEM_ATTACH_GLOBAL)));
  std::printf("pool: %d\n", static_cast<int>(from_pool(&p[2], kBuffer, pool, nullptr)));
  std::printf("pool ptsz: %d\n", static_cast<int>(from_pool_ptsz(&p[3], kBuffer, pool, nullptr)));
  std::printf("one byte more: %d\n", static_cast<int>(alloc(&p[4], 1)));
  for (CUdeviceptr b : p) {
    if (b != 0) ok(release(b), "cuMemFree");
  }
  if (g_failures > 0) return 1;
  std::printf("ok\n");
  return 0;
}

int phases(const char* plan) {
  CUdevice dev = 0;
  if (!open_device(&dev)) return 2;
  const auto [stream_create, stream_sync, load, get_kernel, launch] = kernel_calls();
  if (g_failures > 0) return 2;
  static const char kImage[] = "phase0 phase1 phase2 phase3 phase4 phase5 phase6 phase7";
  CUlibrary library = nullptr;
  CUstream s = nullptr;
  if (!ok(load(&library, kImage, nullptr, nullptr, 0, nullptr, nullptr, 0), "cuLibraryLoadData") ||
      !ok(stream_create(&s, 0), "cuStreamCreate")) {
    return 1;
  }
  std::string rest = plan;
  for (int i = 0; !rest.empty() && i < 8; ++i) {
    const std::size_t comma = rest.find(',');
    const std::string step = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const bool on = step.rfind("on", 0) == 0;
    const int ms = std::atoi(step.c_str() + (on ? 2 : 3));
    if ((!on && step.rfind("off", 0) != 0) || ms <= 0) {
      std::fprintf(stderr, "phase '%s': expected onMS or offMS\n", step.c_str());
      return 2;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    CUkernel k = nullptr;
    const std::string name = "phase" + std::to_string(i);
    if (!ok(get_kernel(&k, library, name.c_str()), "cuLibraryGetKernel")) return 1;
    while (std::chrono::steady_clock::now() < end) {
      if (on)
        ok(launch(reinterpret_cast<CUfunction>(k), 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr),
           "cuLaunchKernel");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ok(stream_sync(s), "cuStreamSynchronize");
  if (g_failures > 0) return 1;
  std::printf("ok\n");
  return 0;
}

// One launch (which registers with a daemon), then a child that outlives this process: it
// sleeps `ms` without touching the GPU, as a data-loader worker would. Prints the child's pid.
int fork_worker(int ms) {
  CUdevice dev = 0;
  if (!open_device(&dev)) return 2;
  const auto [stream_create, stream_sync, load, get_kernel, launch] = kernel_calls();
  if (g_failures > 0) return 2;
  static const char kImage[] = "phase0";
  CUlibrary library = nullptr;
  CUstream s = nullptr;
  CUkernel k = nullptr;
  if (!ok(load(&library, kImage, nullptr, nullptr, 0, nullptr, nullptr, 0), "cuLibraryLoadData") ||
      !ok(stream_create(&s, 0), "cuStreamCreate") ||
      !ok(get_kernel(&k, library, "phase0"), "cuLibraryGetKernel") ||
      !ok(launch(reinterpret_cast<CUfunction>(k), 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr),
          "cuLaunchKernel") ||
      !ok(stream_sync(s), "cuStreamSynchronize")) {
    return 1;
  }
  std::fflush(stdout);
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    _exit(0);
  }
  std::printf("child %d\nok\n", static_cast<int>(child));
  return 0;
}

int graphs(int ms) {
  CUdevice dev = 0;
  if (!open_device(&dev) || ms <= 0) return 2;
  auto stream_create = get<CUresult (*)(CUstream*, unsigned)>("cuStreamCreate", 2000);
  auto stream_sync = get<CUresult (*)(CUstream)>("cuStreamSynchronize", 2000);
  auto graph_create = get<CUresult (*)(CUgraph*, unsigned)>("cuGraphCreate", 10000);
  auto graph_instantiate = get<CUresult (*)(CUgraphExec*, CUgraph, unsigned long long)>(
      "cuGraphInstantiateWithFlags", 11040);
  auto graph_launch = get<CUresult (*)(CUgraphExec, CUstream)>("cuGraphLaunch", 10000);
  if (g_failures > 0) return 2;
  CUstream s = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  if (!ok(stream_create(&s, 0), "cuStreamCreate") ||
      !ok(graph_create(&graph, 0), "cuGraphCreate") ||
      !ok(graph_instantiate(&exec, graph, 0), "cuGraphInstantiateWithFlags")) {
    return 1;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    ok(graph_launch(exec, s), "cuGraphLaunch");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ok(stream_sync(s), "cuStreamSynchronize");
  if (g_failures > 0) return 1;
  std::printf("ok\n");
  return 0;
}

int memory_steps(const std::string& path) {
  CUdevice dev = 0;
  if (!open_device(&dev)) return 2;
  auto alloc = get<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020);
  auto release = get<CUresult (*)(CUdeviceptr)>("cuMemFree", 3020);
  auto info = get<MemGetInfoFn>("cuMemGetInfo", 3020);
  if (g_failures > 0) return 2;
  constexpr size_t kBuffer = 256 * 1024;
  std::vector<CUdeviceptr> buffers(1);
  std::printf("first: %d\n", static_cast<int>(alloc(&buffers[0], kBuffer)));
  print_info(info, "before");
  if (FILE* f = std::fopen((path + ".ready").c_str(), "w")) std::fclose(f);
  for (int i = 0; i < 10000 && access((path + ".go").c_str(), F_OK) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  print_info(info, "after");
  for (int i = 0; i < 8; ++i) {
    CUdeviceptr b = 0;
    const CUresult r = alloc(&b, kBuffer);
    std::printf("step %d: %d\n", i, static_cast<int>(r));
    if (r != CUDA_SUCCESS) break;
    buffers.push_back(b);
  }
  for (CUdeviceptr b : buffers) {
    if (b != 0) ok(release(b), "cuMemFree");
  }
  if (g_failures > 0) return 1;
  std::printf("ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "dlsym-next") == 0) return dlsym_next();
  if (argc == 2 && std::strcmp(argv[1], "launches") == 0) return launches();
  if (argc == 2 && std::strcmp(argv[1], "threads") == 0) return threads();
  if (argc == 2 && std::strcmp(argv[1], "memory") == 0) return memory();
  if (argc == 2 && std::strcmp(argv[1], "memory-other") == 0) return memory_other();
  if (argc == 2 && std::strncmp(argv[1], "memory-steps:", 13) == 0)
    return memory_steps(argv[1] + 13);
  if (argc == 2 && std::strncmp(argv[1], "phases:", 7) == 0) return phases(argv[1] + 7);
  if (argc == 2 && std::strncmp(argv[1], "graphs:", 7) == 0) return graphs(std::atoi(argv[1] + 7));
  if (argc == 2 && std::strncmp(argv[1], "fork:", 5) == 0)
    return fork_worker(std::atoi(argv[1] + 5));
  std::fprintf(
      stderr,
      "usage: %s launches|threads|dlsym-next|memory|memory-other|memory-steps:PATH|phases:PLAN|"
      "graphs:MS|fork:MS\n",
      argv[0]);
  return 2;
}
