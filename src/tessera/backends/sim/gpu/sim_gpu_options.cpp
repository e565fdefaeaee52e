#include "tessera/backends/sim/gpu/sim_gpu_options.hpp"

#include <cmath>
#include <utility>

#include "tessera/device/sm_mask.hpp"

namespace tessera::sim {

using core::Code;
using core::Domain;

namespace {

bool positive(double x) {
  return std::isfinite(x) && x > 0;
}

}  // namespace

core::Status validate_model(const hw::GpuSpec& spec, const SimGpuOptions& o) {
  const auto bad_spec = [&](std::string what) {
    return core::failf(Domain::kSim, Code::kInvalidArgument,
                       "GPU spec '{}' cannot be simulated: {}; fix the spec", spec.name, what);
  };
  if (spec.sms < 1 || spec.sms > device::kMaxSms) {
    return bad_spec(
        fmt::format("it has {} SMs, and the simulator handles 1 to {}", spec.sms, device::kMaxSms));
  }
  const auto& sm = spec.sm;
  if (sm.max_threads < 1 || sm.max_blocks < 1 || sm.registers < 1 ||
      sm.max_registers_per_thread < 1 || sm.shared_memory_bytes < 0 ||
      sm.max_shared_memory_per_block_bytes < 0 || sm.max_threads_per_block < 1) {
    return bad_spec(
        "its per-SM limits (threads, blocks, registers, shared memory) must be "
        "positive");
  }
  if (!positive(spec.memory_bandwidth_bytes_per_s)) {
    return bad_spec(fmt::format("its memory bandwidth is {} bytes/s; it must be positive",
                                spec.memory_bandwidth_bytes_per_s));
  }
  for (const double peak : {spec.peak_fp16_tensor_flops, spec.peak_fp32_flops,
                            spec.peak_tf32_tensor_flops, spec.peak_fp8_tensor_flops}) {
    if (!(peak >= 0) || !std::isfinite(peak)) {
      return bad_spec("its peak FLOP/s figures must be finite and >= 0");
    }
  }
  if (!positive(spec.boost_clock_mhz) || !positive(spec.min_clock_mhz) ||
      spec.min_clock_mhz > spec.boost_clock_mhz) {
    return bad_spec(fmt::format("its clock range [{}, {}] MHz must be positive and ordered",
                                spec.min_clock_mhz, spec.boost_clock_mhz));
  }
  if (!(spec.idle_watts >= 0) || !(spec.tdp_watts >= spec.idle_watts) ||
      !std::isfinite(spec.tdp_watts)) {
    return bad_spec(
        fmt::format("its power range (idle {} W, TDP {} W) must satisfy 0 <= idle <= "
                    "TDP",
                    spec.idle_watts, spec.tdp_watts));
  }
  const auto bad_option = [](std::string what) {
    return core::failf(Domain::kSim, Code::kInvalidArgument, "simulator option {}", what);
  };
  if (!positive(o.achievable_compute_fraction) || o.achievable_compute_fraction > 1) {
    return bad_option(fmt::format("achievable_compute_fraction is {}; use a value in (0, 1]",
                                  o.achievable_compute_fraction));
  }
  if (!positive(o.achievable_bandwidth_fraction) || o.achievable_bandwidth_fraction > 1) {
    return bad_option(fmt::format("achievable_bandwidth_fraction is {}; use a value in (0, 1]",
                                  o.achievable_bandwidth_fraction));
  }
  if (!(o.elementwise_bandwidth_fraction >= 0 && o.elementwise_bandwidth_fraction <= 1)) {
    return bad_option(
        fmt::format("elementwise_bandwidth_fraction is {}; use a value in (0, 1], or 0 for "
                    "achievable_bandwidth_fraction",
                    o.elementwise_bandwidth_fraction));
  }
  for (const auto& [name, value] :
       {std::pair{"pointwise_bandwidth_fraction", o.pointwise_bandwidth_fraction},
        std::pair{"gather_bandwidth_fraction", o.gather_bandwidth_fraction},
        std::pair{"norm_bandwidth_fraction", o.norm_bandwidth_fraction}}) {
    if (!(value >= 0 && value <= 1)) {
      return bad_option(fmt::format(
          "{} is {}; use a value in (0, 1], or 0 for elementwise_bandwidth_fraction", name, value));
    }
  }
  if (!positive(o.sm_bandwidth_multiple)) {
    return bad_option(
        fmt::format("sm_bandwidth_multiple is {}; use a positive value", o.sm_bandwidth_multiple));
  }
  if (o.launch_overhead < 0) {
    return bad_option(
        fmt::format("launch_overhead is {} ns; it cannot be negative", o.launch_overhead));
  }
  if (o.host_launch < 0) {
    return bad_option(fmt::format("host_launch is {} ns; it cannot be negative", o.host_launch));
  }
  if (o.graph_launch < 0) {
    return bad_option(fmt::format("graph_launch is {} ns; it cannot be negative", o.graph_launch));
  }
  if (o.atom_launch_overhead < 0) {
    return bad_option(fmt::format("atom_launch_overhead is {} ns; it cannot be negative",
                                  o.atom_launch_overhead));
  }
  if (o.yield_save_cost < 0) {
    return bad_option(
        fmt::format("yield_save_cost is {} ns; it cannot be negative", o.yield_save_cost));
  }
  if (!(o.compute_power_weight >= 0 && o.compute_power_weight <= 1)) {
    return bad_option(
        fmt::format("compute_power_weight is {}; use a value in [0, 1]", o.compute_power_weight));
  }
  if (!positive(o.gemm_compute_fraction) || o.gemm_compute_fraction > 1) {
    return bad_option(
        fmt::format("gemm_compute_fraction is {}; use a value in (0, 1]", o.gemm_compute_fraction));
  }
  if (!(o.gemm_tile_knee >= 0) || !std::isfinite(o.gemm_tile_knee)) {
    return bad_option(
        fmt::format("gemm_tile_knee is {}; use a finite value >= 0", o.gemm_tile_knee));
  }
  if (o.gemm_fixed < 0) {
    return bad_option(fmt::format("gemm_fixed is {} ns; it cannot be negative", o.gemm_fixed));
  }
  if (!positive(o.stream_k_compute_fraction) || o.stream_k_compute_fraction > 1) {
    return bad_option(fmt::format("stream_k_compute_fraction is {}; use a value in (0, 1]",
                                  o.stream_k_compute_fraction));
  }
  if (!(o.stream_k_tile_knee >= 0) || !std::isfinite(o.stream_k_tile_knee)) {
    return bad_option(
        fmt::format("stream_k_tile_knee is {}; use a finite value >= 0", o.stream_k_tile_knee));
  }
  if (o.stream_k_fixed < 0) {
    return bad_option(
        fmt::format("stream_k_fixed is {} ns; it cannot be negative", o.stream_k_fixed));
  }
  if (!(o.attention_compute_fraction >= 0 && o.attention_compute_fraction <= 1)) {
    return bad_option(
        fmt::format("attention_compute_fraction is {}; use a value in (0, 1], or 0 for "
                    "achievable_compute_fraction",
                    o.attention_compute_fraction));
  }
  if (!(o.attention_bandwidth_fraction >= 0 && o.attention_bandwidth_fraction <= 1)) {
    return bad_option(
        fmt::format("attention_bandwidth_fraction is {}; use a value in (0, 1], or 0 for "
                    "achievable_bandwidth_fraction",
                    o.attention_bandwidth_fraction));
  }
  if (o.collective_latency < 0) {
    return bad_option(
        fmt::format("collective_latency is {} ns; it cannot be negative", o.collective_latency));
  }
  if (!positive(o.link_bandwidth_fraction) || o.link_bandwidth_fraction > 1) {
    return bad_option(fmt::format("link_bandwidth_fraction is {}; use a value in (0, 1]",
                                  o.link_bandwidth_fraction));
  }
  if (o.max_batch_kernels < 1) {
    return bad_option(fmt::format("max_batch_kernels is {}; use at least 1", o.max_batch_kernels));
  }
  return {};
}

SimGpuOptions options_for(const hw::GpuSpec& spec, const SimGpuOverrides& o) {
  return apply(default_options(spec), o);
}

SimGpuOptions apply(SimGpuOptions out, const SimGpuOverrides& o) {
  const auto set = [](auto& field, const auto& value) {
    if (value) field = *value;
  };
  set(out.achievable_compute_fraction, o.achievable_compute_fraction);
  set(out.achievable_bandwidth_fraction, o.achievable_bandwidth_fraction);
  set(out.elementwise_bandwidth_fraction, o.elementwise_bandwidth_fraction);
  set(out.pointwise_bandwidth_fraction, o.pointwise_bandwidth_fraction);
  set(out.gather_bandwidth_fraction, o.gather_bandwidth_fraction);
  set(out.norm_bandwidth_fraction, o.norm_bandwidth_fraction);
  set(out.sm_bandwidth_multiple, o.sm_bandwidth_multiple);
  set(out.launch_overhead, o.launch_overhead);
  set(out.host_launch, o.host_launch);
  set(out.graph_launch, o.graph_launch);
  set(out.atom_launch_overhead, o.atom_launch_overhead);
  set(out.yield_save_cost, o.yield_save_cost);
  set(out.compute_power_weight, o.compute_power_weight);
  set(out.gemm_tile_selection, o.gemm_tile_selection);
  set(out.gemm_stream_k, o.gemm_stream_k);
  set(out.gemm_compute_fraction, o.gemm_compute_fraction);
  set(out.gemm_tile_knee, o.gemm_tile_knee);
  set(out.gemm_fixed, o.gemm_fixed);
  set(out.stream_k_compute_fraction, o.stream_k_compute_fraction);
  set(out.stream_k_tile_knee, o.stream_k_tile_knee);
  set(out.stream_k_fixed, o.stream_k_fixed);
  set(out.attention_compute_fraction, o.attention_compute_fraction);
  set(out.attention_bandwidth_fraction, o.attention_bandwidth_fraction);
  set(out.collective_latency, o.collective_latency);
  set(out.link_bandwidth_fraction, o.link_bandwidth_fraction);
  set(out.co_residency, o.co_residency);
  set(out.batch_isolated_kernels, o.batch_isolated_kernels);
  return out;
}

}  // namespace tessera::sim
