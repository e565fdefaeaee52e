#pragma once
// The simulator's time for a measurement's configuration: the same work rebuilt with the
// workload builders and run on a sim::SimGpu of the measured GPU. A GEMM and a layer's kernels
// run one kernel at a time on the whole device (a profiler's per-kernel time); a step runs as
// one submission (its kernels back to back, as an engine launches them) plus the serving
// engine's CPU time around it (workload/serving/engine_costs.hpp); a collective runs as
// the all-reduce kernel workload/tensor_parallel.hpp builds, over the GPU's NVLink.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/backends/sim/gpu/sim_gpu_options.hpp"
#include "tessera/core/error.hpp"
#include "tessera/validation/harness_costs.hpp"
#include "tessera/validation/measurement.hpp"
#include "tessera/workload/kernels/kernel.hpp"
#include "tessera/workload/serving/engine_costs.hpp"

namespace tessera::validation {

// What a prediction is compared in: the report's rows group by it.
std::string category(const Measurement& m);

class Predictor {
 public:
  // Each GPU is simulated with its calibrated defaults (sim::default_options) and `overrides`
  // on top, as a scenario's `sim:` section would set them.
  // `per_gpu` replaces `overrides` for the GPUs it names (a fit's values, fit.hpp). With
  // `calibrated` false the overrides apply to the generic assumptions (sim::SimGpuOptions{})
  // instead of each GPU's calibration: what a fit starts from, so it does not depend on the
  // calibration it produces. Steps add the serving engine's costs: `engine` for the GPUs it
  // names (a fit's), else workload::default_engine_costs() (calibrated) or none (generic).
  // Rows timed from the host add their benchmark's cost of a call: `harness` for the GPUs it
  // names (a fit's), else default_harness_costs() (calibrated) or none (generic).
  explicit Predictor(sim::SimGpuOverrides overrides = {},
                     std::map<std::string, sim::SimGpuOverrides> per_gpu = {},
                     bool calibrated = true,
                     std::map<std::string, workload::EngineCosts> engine = {},
                     std::map<std::string, HarnessCosts> harness = {});
  ~Predictor();
  Predictor(const Predictor&) = delete;
  Predictor& operator=(const Predictor&) = delete;

  // Why the simulator cannot rebuild this row (an engine whose kernels the builders do not
  // build), or nullopt when it can.
  static std::optional<std::string> unsupported(const Measurement& m);
  // Why a row cannot be a measurement of its configuration (faster than the GPU's datasheet
  // peaks allow for the work the builders count), or nullopt when it is plausible.
  std::optional<std::string> implausible(const Measurement& m) const;
  // The same for the kernels kernels(m) built, when the caller has them already.
  std::optional<std::string> implausible(const Measurement& m,
                                         const workload::KernelSequence& seq) const;
  // Simulated nanoseconds; an error names the row's source.
  core::Result<double> simulate_ns(const Measurement& m);
  core::Result<double> simulate_ns(const Measurement& m, const workload::KernelSequence& seq);
  // The engine's CPU time a step row adds to its GPU time with `costs` (0 for other rows).
  static double engine_ns(const Measurement& m, const workload::EngineCosts& costs);
  // The engine costs steps on `gpu` are predicted with.
  const workload::EngineCosts& engine_costs(const std::string& gpu) const;
  // The benchmark's costs rows on `gpu` are predicted with.
  HarnessCosts harness_costs(const std::string& gpu) const;
  // The kernels a row runs (for `tessera kernel` to show), in launch order.
  core::Result<workload::KernelSequence> kernels(const Measurement& m) const;
  // One kernel or sequence alone on the whole GPU `gpu`: end of its last kernel - start of its
  // first. `gemm_stream_k`, when set, replaces the simulator's setting of that option.
  core::Result<double> time_sequence(const std::string& gpu, const workload::KernelSequence& seq,
                                     std::optional<bool> gemm_stream_k = std::nullopt);

 private:
  struct Device;
  core::Result<Device*> device(const std::string& gpu, std::optional<bool> gemm_stream_k);

  sim::SimGpuOverrides overrides_;
  std::map<std::string, sim::SimGpuOverrides> per_gpu_;
  bool calibrated_ = true;
  std::map<std::string, workload::EngineCosts> engine_;
  workload::EngineCosts default_engine_;
  std::map<std::string, HarnessCosts> harness_;
  // By GPU, and by the GEMM library a row says it was measured with.
  using DeviceKey = std::pair<std::string, std::optional<bool>>;
  std::map<DeviceKey, std::unique_ptr<Device>> devices_;
};

}  // namespace tessera::validation
