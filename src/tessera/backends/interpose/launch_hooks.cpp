// The wrappers handed out in place of libcuda's launch entry points. Each forwards to exactly the
// real variant it replaced (d->entry), with identical arguments except the stream.

#include <cuda.h>

#include <ctime>

#include "real_driver.hpp"
#include "route.hpp"

namespace tessera::interpose {

bool cooperative_fits(const RealDriver& d, const Partition& p, CUfunction f, unsigned gx,
                      unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      unsigned shared_bytes) {
  int per_sm = 0;
  const unsigned long long block = 1ULL * bx * by * bz;
  if (d.occupancy_max_active_blocks == nullptr || block > 0x7fffffffULL ||
      d.occupancy_max_active_blocks(&per_sm, f, static_cast<int>(block), shared_bytes) !=
          CUDA_SUCCESS) {
    return false;
  }
  return 1ULL * gx * gy * gz <= 1ULL * static_cast<unsigned>(per_sm) * p.sms;
}

daemon_abi::Assignment follow_daemon(daemon_abi::AssignmentPage& page, long long hold_limit_ns) {
  const unsigned long long now = monotonic_ns();
  page.launches.fetch_add(1, std::memory_order_relaxed);
  page.last_launch_ns.store(now, std::memory_order_relaxed);
  daemon_abi::Assignment a = daemon_abi::unpack(page.assignment.load(std::memory_order_acquire));
  if (a.sms != daemon_abi::kHoldSms) return a;
  page.held_launches.fetch_add(1, std::memory_order_relaxed);
  const unsigned long long until = now + static_cast<unsigned long long>(hold_limit_ns);
  unsigned long long t = now;
  // ASSUMPTION: polling every 20 us costs a held best-effort thread little CPU and adds at most
  // that to the wait; the daemon's round is 1 ms by default.
  const timespec pause{0, 20'000};
  while (a.sms == daemon_abi::kHoldSms && t < until) {
    nanosleep(&pause, nullptr);
    t = monotonic_ns();
    page.last_launch_ns.store(t, std::memory_order_relaxed);  // still waiting: still has work
    a = daemon_abi::unpack(page.assignment.load(std::memory_order_acquire));
  }
  page.held_ns.fetch_add(t - now, std::memory_order_relaxed);
  if (a.sms == daemon_abi::kHoldSms) page.hold_timeouts.fetch_add(1, std::memory_order_relaxed);
  return a;
}

namespace {

using LaunchKernelFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, CUstream, void**, void**);
using LaunchKernelExFn = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
using LaunchCooperativeFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                         unsigned, unsigned, unsigned, CUstream, void**);
using GraphLaunchFn = CUresult (*)(CUgraphExec, CUstream);

template <class F>
F real(Entry e) {
  return reinterpret_cast<F>(real_driver(false)->entry[static_cast<int>(e)]);
}

template <Entry E>
CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shared, CUstream stream, void** params,
                       void** extra) {
  const auto fn = real<LaunchKernelFn>(E);
  return route(E, stream, always_fits,
               [&](CUstream s) { return fn(f, gx, gy, gz, bx, by, bz, shared, s, params, extra); });
}

// A cooperative Ex launch (CU_LAUNCH_ATTRIBUTE_COOPERATIVE, cuda.h:2349) gets the same fit check
// as cuLaunchCooperativeKernel.
bool is_cooperative(const CUlaunchConfig* config) {
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE &&
        config->attrs[i].value.cooperative != 0) {
      return true;
    }
  }
  return false;
}

template <Entry E>
CUresult launch_kernel_ex(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  const auto fn = real<LaunchKernelExFn>(E);
  if (config == nullptr) {  // invalid: the driver says so, untouched
    count_passed(E, Why::kInvalidArguments);
    return fn(config, f, params, extra);
  }
  auto fits = [&](const RealDriver& d, const Partition& p) {
    return !is_cooperative(config) ||
           cooperative_fits(d, p, f, config->gridDimX, config->gridDimY, config->gridDimZ,
                            config->blockDimX, config->blockDimY, config->blockDimZ,
                            config->sharedMemBytes);
  };
  return route(E, config->hStream, fits, [&](CUstream s) {
    if (s == config->hStream) return fn(config, f, params, extra);
    CUlaunchConfig copy = *config;
    copy.hStream = s;
    return fn(&copy, f, params, extra);
  });
}

template <Entry E>
CUresult launch_cooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shared, CUstream stream,
                            void** params) {
  const auto fn = real<LaunchCooperativeFn>(E);
  auto fits = [&](const RealDriver& d, const Partition& p) {
    return cooperative_fits(d, p, f, gx, gy, gz, bx, by, bz, shared);
  };
  return route(E, stream, fits,
               [&](CUstream s) { return fn(f, gx, gy, gz, bx, by, bz, shared, s, params); });
}

// The whole graph runs on the partition stream.
template <Entry E>
CUresult graph_launch(CUgraphExec exec, CUstream stream) {
  const auto fn = real<GraphLaunchFn>(E);
  return route(E, stream, always_fits, [&](CUstream s) { return fn(exec, s); });
}

}  // namespace

void* launch_wrapper_of(Entry e) {
  switch (e) {
    case Entry::kLaunchKernel: return reinterpret_cast<void*>(&launch_kernel<Entry::kLaunchKernel>);
    case Entry::kLaunchKernelPtsz:
      return reinterpret_cast<void*>(&launch_kernel<Entry::kLaunchKernelPtsz>);
    case Entry::kLaunchKernelEx:
      return reinterpret_cast<void*>(&launch_kernel_ex<Entry::kLaunchKernelEx>);
    case Entry::kLaunchKernelExPtsz:
      return reinterpret_cast<void*>(&launch_kernel_ex<Entry::kLaunchKernelExPtsz>);
    case Entry::kLaunchCooperativeKernel:
      return reinterpret_cast<void*>(&launch_cooperative<Entry::kLaunchCooperativeKernel>);
    case Entry::kLaunchCooperativeKernelPtsz:
      return reinterpret_cast<void*>(&launch_cooperative<Entry::kLaunchCooperativeKernelPtsz>);
    case Entry::kGraphLaunch: return reinterpret_cast<void*>(&graph_launch<Entry::kGraphLaunch>);
    case Entry::kGraphLaunchPtsz:
      return reinterpret_cast<void*>(&graph_launch<Entry::kGraphLaunchPtsz>);
    default: return nullptr;
  }
}

}  // namespace tessera::interpose
