// CPU cost per kernel launch, and per device allocation and free, through the interposer
// (src/tessera/backends/interpose) against a direct call into the driver: the interposer's own
// overhead. With a GPU the driver is the real
// one; without, the fake libcuda (tests/support/native/fake_cuda), whose per-call bookkeeping is
// part of both numbers, so there the difference is the routing's four extra driver calls plus the
// interposer's work.
//
// The interposer is dlopen-ed (not preloaded) and its exported cuGetProcAddress_v2 hands out the
// wrapper, so one process measures both paths. Without a GPU the program re-executes itself
// once with the fake first on LD_LIBRARY_PATH: the interposer finds the driver by
// dlopen("libcuda.so.1", RTLD_NOLOAD), which must resolve to the file already loaded.
// The library and the fake are found next to this executable in the build tree
// (../src/interpose, ../tests/support/fake_cuda/as_libcuda) unless TESSERA_INTERPOSE_LIB /
// TESSERA_FAKE_CUDA_DIR say otherwise.
//
// --daemon: the interposer follows a tesserad (run in this process on a socket of its own, cogpu,
// the process its only tenant) instead of TESSERA_PARTITION_SMS: each launch also tells the daemon
// about itself and reads its assignment from the shared page.

#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "tessera/daemon/control_server.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace {

using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, CUstream, void**, void**);
using MemAlloc = CUresult (*)(CUdeviceptr*, size_t);
using MemFree = CUresult (*)(CUdeviceptr);
using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);

// An empty kernel as PTX text: the real driver JIT-compiles it, the fake finds its name in it.
constexpr char kPtx[] =
    ".version 7.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry tessera_bench_empty()\n{\n\tret;\n}\n";
// ASSUMPTION: synchronising every 256 launches keeps the queues short (the fake runs its queue
// only at synchronisation points) without the synchronisation dominating; it is not timed.
constexpr int kSyncEvery = 256;

struct Setup {
  std::string error;   // empty: ready
  std::string driver;  // "real" or "fake"
  LaunchKernel direct = nullptr;
  LaunchKernel hooked = nullptr;
  MemAlloc alloc_direct = nullptr;
  MemFree free_direct = nullptr;
  MemAlloc alloc_hooked = nullptr;
  MemFree free_hooked = nullptr;
  CUresult (*synchronize)(CUstream) = nullptr;
  CUfunction kernel = nullptr;
  CUstream stream = nullptr;
};

std::filesystem::path build_dir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path();
}

std::string env_or(const char* name, const std::filesystem::path& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback.string();
}

template <class F>
F sym(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

Setup make_setup() {
  Setup s;
  s.driver = std::getenv("TESSERA_INTERPOSE_BENCH_FAKE") != nullptr ? "fake" : "real";
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (cuda == nullptr) {
    s.error = std::string("no libcuda.so.1: ") + dlerror();
    return s;
  }
  const std::string lib =
      env_or("TESSERA_INTERPOSE_LIB",
             build_dir() / "src/tessera/backends/interpose/libtessera_interpose.so");
  void* interpose = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (interpose == nullptr) {
    s.error = "cannot load the interposer (ninja tessera_interpose): " + std::string(dlerror());
    return s;
  }
  auto gpa = sym<GetProcAddressV2>(interpose, "cuGetProcAddress_v2");
  auto init = sym<CUresult (*)(unsigned)>(cuda, "cuInit");
  auto device_get = sym<CUresult (*)(CUdevice*, int)>(cuda, "cuDeviceGet");
  auto retain = sym<CUresult (*)(CUcontext*, CUdevice)>(cuda, "cuDevicePrimaryCtxRetain");
  auto set_current = sym<CUresult (*)(CUcontext)>(cuda, "cuCtxSetCurrent");
  auto load = sym<CUresult (*)(CUlibrary*, const void*, CUjit_option*, void**, unsigned,
                               CUlibraryOption*, void**, unsigned)>(cuda, "cuLibraryLoadData");
  auto get_kernel =
      sym<CUresult (*)(CUkernel*, CUlibrary, const char*)>(cuda, "cuLibraryGetKernel");
  auto stream_create = sym<CUresult (*)(CUstream*, unsigned)>(cuda, "cuStreamCreate");
  s.synchronize = sym<CUresult (*)(CUstream)>(cuda, "cuStreamSynchronize");
  s.direct = sym<LaunchKernel>(cuda, "cuLaunchKernel");
  if (gpa == nullptr || init == nullptr || device_get == nullptr || retain == nullptr ||
      set_current == nullptr || load == nullptr || get_kernel == nullptr ||
      stream_create == nullptr || s.synchronize == nullptr || s.direct == nullptr) {
    s.error = "libcuda.so.1 lacks an entry point the benchmark uses";
    return s;
  }
  void* hooked = nullptr;
  if (gpa("cuLaunchKernel", &hooked, 4000, CU_GET_PROC_ADDRESS_DEFAULT, nullptr) != CUDA_SUCCESS ||
      hooked == nullptr || hooked == reinterpret_cast<void*>(s.direct)) {
    s.error = "the interposer did not hand out its cuLaunchKernel wrapper";
    return s;
  }
  s.hooked = reinterpret_cast<LaunchKernel>(hooked);
  s.alloc_direct = sym<MemAlloc>(cuda, "cuMemAlloc_v2");
  s.free_direct = sym<MemFree>(cuda, "cuMemFree_v2");
  void* alloc_hooked = nullptr;
  void* free_hooked = nullptr;
  if (s.alloc_direct == nullptr || s.free_direct == nullptr ||
      gpa("cuMemAlloc", &alloc_hooked, 3020, CU_GET_PROC_ADDRESS_DEFAULT, nullptr) !=
          CUDA_SUCCESS ||
      gpa("cuMemFree", &free_hooked, 3020, CU_GET_PROC_ADDRESS_DEFAULT, nullptr) != CUDA_SUCCESS ||
      alloc_hooked == reinterpret_cast<void*>(s.alloc_direct)) {
    s.error = "the interposer did not hand out its cuMemAlloc / cuMemFree wrappers";
    return s;
  }
  s.alloc_hooked = reinterpret_cast<MemAlloc>(alloc_hooked);
  s.free_hooked = reinterpret_cast<MemFree>(free_hooked);
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUlibrary library = nullptr;
  CUkernel kernel = nullptr;
  if (init(0) != CUDA_SUCCESS || device_get(&dev, 0) != CUDA_SUCCESS) {
    s.error = "needs a GPU: cuInit or cuDeviceGet failed; scripts/device-check.sh runs this on one";
    return s;
  }
  if (retain(&ctx, dev) != CUDA_SUCCESS || set_current(ctx) != CUDA_SUCCESS ||
      load(&library, kPtx, nullptr, nullptr, 0, nullptr, nullptr, 0) != CUDA_SUCCESS ||
      get_kernel(&kernel, library, "tessera_bench_empty") != CUDA_SUCCESS ||
      stream_create(&s.stream, 0) != CUDA_SUCCESS) {
    s.error = "context, library or stream setup failed";
    return s;
  }
  s.kernel = reinterpret_cast<CUfunction>(kernel);
  return s;
}

const Setup& setup() {
  static const Setup s = make_setup();
  return s;
}

void run_launches(benchmark::State& state, bool hooked) {
  const Setup& s = setup();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  const LaunchKernel launch = hooked ? s.hooked : s.direct;
  int since_sync = 0;
  for (auto _ : state) {
    if (launch(s.kernel, 1, 1, 1, 32, 1, 1, 0, s.stream, nullptr, nullptr) != CUDA_SUCCESS) {
      state.SkipWithError("cuLaunchKernel failed");
      return;
    }
    if (++since_sync == kSyncEvery) {
      state.PauseTiming();
      s.synchronize(s.stream);
      since_sync = 0;
      state.ResumeTiming();
    }
  }
  s.synchronize(s.stream);
  state.SetLabel("driver=" + s.driver +
                 (hooked && std::getenv("TESSERA_DAEMON_SOCKET") != nullptr ? ", daemon" : ""));
  state.SetItemsProcessed(state.iterations());
}

// ASSUMPTION: 20000 launches per run; the fake keeps a log entry per call and per operation, so
// its memory grows with the count.
void BM_LaunchDirect(benchmark::State& state) {
  run_launches(state, false);
}
BENCHMARK(BM_LaunchDirect)->Iterations(20000);

// Routed into a 16-SM green context: record, wait, launch, record, wait.
void BM_LaunchThroughInterposer(benchmark::State& state) {
  run_launches(state, true);
}
BENCHMARK(BM_LaunchThroughInterposer)->Iterations(20000);

void run_allocations(benchmark::State& state, bool hooked) {
  const Setup& s = setup();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  const MemAlloc alloc = hooked ? s.alloc_hooked : s.alloc_direct;
  const MemFree release = hooked ? s.free_hooked : s.free_direct;
  for (auto _ : state) {
    CUdeviceptr p = 0;
    if (alloc(&p, 4096) != CUDA_SUCCESS || release(p) != CUDA_SUCCESS) {
      state.SkipWithError("cuMemAlloc or cuMemFree failed");
      return;
    }
  }
  state.SetLabel("driver=" + s.driver);
  state.SetItemsProcessed(state.iterations());
}

// One 4 KiB cuMemAlloc and its cuMemFree.
void BM_AllocFreeDirect(benchmark::State& state) {
  run_allocations(state, false);
}
BENCHMARK(BM_AllocFreeDirect)->Iterations(20000);

// The same held in the ledger against TESSERA_MEMORY_LIMIT: a mutex and a hash-map entry each.
void BM_AllocFreeThroughInterposer(benchmark::State& state) {
  run_allocations(state, true);
}
BENCHMARK(BM_AllocFreeThroughInterposer)->Iterations(20000);

// Without a loadable driver, runs again with the fake as libcuda.so.1.
void reexec_with_fake_if_needed(char** argv) {
  if (std::getenv("TESSERA_INTERPOSE_BENCH_FAKE") != nullptr) return;
  void* real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (real != nullptr) {
    dlclose(real);
    return;
  }
  const std::string fake =
      env_or("TESSERA_FAKE_CUDA_DIR", build_dir() / "tests/support/native/fake_cuda/as_libcuda");
  const char* old = std::getenv("LD_LIBRARY_PATH");
  const std::string path = old != nullptr && *old != '\0' ? fake + ":" + old : fake;
  setenv("LD_LIBRARY_PATH", path.c_str(), 1);
  setenv("TESSERA_INTERPOSE_BENCH_FAKE", "1", 1);
  unsetenv("FAKE_CUDA_LOG");
  execv("/proc/self/exe", argv);
  // execv failed: run here; setup() reports the missing driver.
}

// tesserad in this process for the benchmark's length.
class Daemon {
 public:
  Daemon() {
    using namespace tessera;
    path_ = "/tmp/tessera_interpose_bench_" + std::to_string(getpid()) + ".sock";
    daemon::TenantTable table({*gpu::PartitionGrid::of(*hw::find_gpu("h100"))},
                              *daemon::make_node_policy("cogpu"));
    daemon::ServerOptions options;
    options.socket_path = path_;
    auto server = daemon::ControlServer::start(options, std::move(table));
    if (!server) {
      std::fprintf(stderr, "interpose_bench: %s\n", server.error().message().c_str());
      std::exit(1);
    }
    server_ = std::move(*server);
    thread_ = std::thread([this] { (void)server_->run([this] { return stop_.load(); }); });
    setenv("TESSERA_DAEMON_SOCKET", path_.c_str(), 1);
  }
  ~Daemon() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::string path_;
  std::unique_ptr<tessera::daemon::ControlServer> server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--daemon") == 0) {
      setenv("TESSERA_INTERPOSE_BENCH_DAEMON", "1", 1);  // survives the re-execution
      for (int j = i; j < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      break;
    }
  }
  // The interposer reads its configuration once, when first used.
  if (std::getenv("TESSERA_PARTITION_SMS") == nullptr) setenv("TESSERA_PARTITION_SMS", "16", 1);
  if (std::getenv("TESSERA_MEMORY_LIMIT") == nullptr) setenv("TESSERA_MEMORY_LIMIT", "64GiB", 1);
  reexec_with_fake_if_needed(argv);
  std::unique_ptr<Daemon> daemon;
  if (std::getenv("TESSERA_INTERPOSE_BENCH_DAEMON") != nullptr) daemon = std::make_unique<Daemon>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
