#pragma once
// A synthetic hw::GpuSpec for simulator tests, with round numbers so expected times can be worked
// out by hand, independent of the real catalog (src/tessera/hw/gpu_catalog.cpp). Not a real GPU:
// every figure here is chosen for arithmetic, none is a fact.
//
// Defaults: 16 SMs at a 1000 MHz boost clock (500 MHz minimum); FP32 peak 16e12 FLOP/s, i.e.
// 1000 FLOP per SM per cycle, 1000 FLOP/ns per SM at boost; FP16 tensor peak 4x that; 1.6e12
// bytes/s of DRAM bandwidth (1600 bytes/ns, 100 bytes/ns per SM's even share); 100 W idle,
// 500 W TDP; CC 9.0-like per-SM limits.
//
//   auto spec = test::TestGpu().sms(8).bandwidth(0.8e12).build();

#include <cstdint>
#include <string>

#include "tessera/hw/gpu_spec.hpp"

namespace tessera::test {

class TestGpu {
 public:
  TestGpu() {
    s_.name = "test-gpu";
    s_.architecture = "Synthetic";
    s_.compute_capability_major = 9;
    s_.compute_capability_minor = 0;
    s_.sm = hw::SmLimits{.max_threads = 2048,
                         .max_blocks = 32,
                         .registers = 65536,
                         .max_registers_per_thread = 255,
                         .shared_memory_bytes = 100 * 1024,
                         .max_shared_memory_per_block_bytes = 96 * 1024,
                         .max_threads_per_block = 1024};
    s_.memory_bytes = std::int64_t{16} << 30;
    s_.min_clock_mhz = 500;
    s_.base_clock_mhz = 800;
    s_.boost_clock_mhz = 1000;
    s_.tdp_watts = 500;
    s_.idle_watts = 100;
    s_.green_ctx_sm_granularity = 2;
    s_.green_ctx_min_sms = 2;
    s_.mig_capable = false;
    s_.mig_max_instances = 0;
    sms(16);
    bandwidth(1.6e12);
  }

  // Also scales the peaks so one SM keeps 1000 FP32 FLOP per cycle.
  TestGpu& sms(int n) {
    s_.sms = n;
    s_.sms_per_tpc = 2;
    s_.tpcs = n / 2;
    s_.gpcs = 1;
    fp32_per_sm_per_cycle(1000);
    return *this;
  }
  TestGpu& sms_per_tpc(int n) {
    s_.sms_per_tpc = n;
    s_.tpcs = s_.sms / n;
    return *this;
  }
  TestGpu& fp32_per_sm_per_cycle(double flops) {
    s_.peak_fp32_flops = flops * s_.sms * s_.boost_clock_mhz * 1e6;
    s_.peak_fp16_tensor_flops = 4 * s_.peak_fp32_flops;
    s_.peak_tf32_tensor_flops = 2 * s_.peak_fp32_flops;
    s_.peak_fp8_tensor_flops = 8 * s_.peak_fp32_flops;
    return *this;
  }
  TestGpu& bandwidth(double bytes_per_s) {
    s_.memory_bandwidth_bytes_per_s = bytes_per_s;
    return *this;
  }
  TestGpu& clocks(double min_mhz, double boost_mhz) {
    const double per_cycle = s_.peak_fp32_flops / (s_.sms * s_.boost_clock_mhz * 1e6);
    s_.min_clock_mhz = min_mhz;
    s_.boost_clock_mhz = boost_mhz;
    return fp32_per_sm_per_cycle(per_cycle);
  }
  TestGpu& power(double idle_watts, double tdp_watts) {
    s_.idle_watts = idle_watts;
    s_.tdp_watts = tdp_watts;
    return *this;
  }
  TestGpu& limits(const hw::SmLimits& limits) {
    s_.sm = limits;
    return *this;
  }
  TestGpu& name(std::string n) {
    s_.name = std::move(n);
    return *this;
  }

  hw::GpuSpec build() const { return s_; }

 private:
  hw::GpuSpec s_{};
};

}  // namespace tessera::test
