#pragma once
// The determinism harness: does co-location change what a latency-critical decode
// produces? CoGPU claims zero token mismatch under sharing because a kernel's reduction order
// never depends on the partition it runs in; a GEMM whose algorithm follows the SM count breaks
// that. The harness runs the decode model ALONE (mode "exclusive", the whole GPU) for N steps,
// then CO-LOCATED with a best-effort tenant that runs the training-like step back to back, under
// every sharing mode that attaches to the device (static partitions once per latency-critical
// partition size), and compares every step's tokens and per-kernel checksums bit for bit with the
// alone run.
//
// It is pure orchestration over device::GpuDevice: what runs the kernels' real work is a
// HarnessBackend the caller supplies, one per run. On the simulated GPU (sim_backend below) an
// observer calls the model's run_kernel when a kernel completes, with the SMs it held; on a real
// GPU (the CLI's CUDA path) the backend binds each model kernel as a CudaGpu payload, so the work
// runs in the partition the mode chose. Everything else is shared.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/experiment/determinism_reference.hpp"
#include "tessera/gpu/mode_settings.hpp"
#include "tessera/gpu/sharing_mode.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/models/compute_model.hpp"

namespace tessera::experiment {

// One device for one run, and the strategy that makes model kernels compute on it.
class HarnessBackend {
 public:
  virtual ~HarnessBackend() = default;
  virtual device::GpuDevice& device() = 0;
  // From now on every launch of the kernel named `kernel` calls model.run_kernel with where it
  // ran. `model` outlives the backend.
  virtual void bind(std::string_view kernel, workload::ComputeModel& model) = 0;
  // Advances the device's time until `finished()` holds. Fails on a device or payload error, or
  // when the device can make no more progress before `finished()`.
  virtual core::Status drive(const std::function<bool()>& finished) = 0;
};

// What the harness runs on: a fresh backend per run and the models.
struct HarnessSetup {
  std::string backend_name;  // "simulator", "cuda"
  // What the report must say about where the results come from (the simulator's drift is a
  // model, a GPU's is measured).
  std::string note;
  workload::compute_data::DecodeShape shape{};
  std::function<core::Result<std::unique_ptr<HarnessBackend>>()> make_backend;
  // The decode model for a variant; the harness resets it before every run.
  std::function<core::Result<std::unique_ptr<workload::ComputeModel>>(GemmVariant)> make_decode;
  // The best-effort model whose kernels compute on the device; null: the best-effort tenant
  // submits `train_sequence` with no payload (its outputs are never compared: on the simulator
  // its kernels only occupy SMs and bandwidth).
  std::function<core::Result<std::unique_ptr<workload::ComputeModel>>()> make_train;
  workload::KernelSequencePtr train_sequence;
  // Lines about the decode model after a variant's runs, for the report (the CUDA model: the
  // cuBLASLt algorithms its LM head used per partition size); may be null.
  std::function<std::vector<std::string>(const workload::ComputeModel&)> describe_decode;
};

// The simulated GPU `spec` as a backend: each run gets a fresh engine and SimGpu, and a
// DeviceObserver that runs the bound model's kernel when it completes, with KernelEvent::sms (the
// SMs the kernel held when it started) as the partition size.
HarnessSetup sim_setup(const hw::GpuSpec& spec, const workload::compute_data::DecodeShape& shape);

struct HarnessOptions {
  int tokens = 64;  // decode steps compared per run
  // Sharing modes to co-locate under; empty: every registered mode but "exclusive" (which runs
  // one tenant per GPU and is the alone reference).
  std::vector<std::string> modes;
  // static-partitions: the latency-critical tenant's SMs (the best-effort tenant gets the rest),
  // each rounded to the nearest multiple of the GPU's green-context granule (hw::GpuSpec::
  // green_ctx_min_sms).
  std::vector<int> lc_partition_sms = {16, 32, 64};
  std::vector<GemmVariant> variants = {GemmVariant::kFixed, GemmVariant::kDrift};
  std::uint64_t seed = 1;
  gpu::ModeSettings mode_options{};
  // The decode tenant's TPOT target, which SLO-aware modes (cogpu, tpot-first) size its partition
  // by. ASSUMPTION: 1 ms; the small decode step needs far less, so those modes give it a partition
  // smaller than the GPU, the case that matters for determinism.
  core::Nanos tpot_slo = core::millis(1);
  // Called before each run: runs done, runs in all, what starts now.
  std::function<void(std::int64_t, std::int64_t, std::string_view)> progress;
};

// The first difference from the alone run: the step, the first kernel whose checksum differs, and
// both sides' tokens of that step.
struct Mismatch {
  std::int64_t step = 0;
  std::string kernel;
  std::uint64_t alone_checksum = 0;
  std::uint64_t colocated_checksum = 0;
  std::vector<std::int32_t> alone_tokens;
  std::vector<std::int32_t> colocated_tokens;
};

struct RunReport {
  std::string mode;                  // "exclusive" for the alone run
  int lc_partition_sms = 0;          // static-partitions: the rounded size; 0 otherwise
  int requested_sms = 0;             // static-partitions: the size asked for
  bool supported = true;             // false: the mode cannot run on this backend (see reason)
  std::string reason;                // why not supported
  std::int64_t steps = 0;            // decode steps run
  std::int64_t tokens_compared = 0;  // steps x batch
  std::int64_t tokens_differing = 0;
  bool identical = true;  // every token and kernel checksum equals the alone run's
  std::optional<Mismatch> first_mismatch;
  // Per decode kernel, the partition sizes (SMs) its launches ran in, and how many launches each.
  std::map<std::string, std::map<int, std::int64_t>> kernel_sms;
  // Decode kernel launches on a different SM count than the same kernel's previous launch (the
  // decode tenant's partition changed between steps: remaps, or SMs another tenant held).
  std::int64_t partition_changes = 0;
  std::vector<gpu::ModeCounter> counters;  // the mode's own (cogpu: remaps)
  std::int64_t best_effort_steps = 0;      // training steps that completed alongside
  std::string scheduler_check = "ok";      // CheckedMode's verdict: launch configurations kept
};

struct VariantReport {
  GemmVariant variant;
  RunReport alone;
  std::vector<RunReport> colocated;
  std::vector<std::string> model_details;  // HarnessSetup::describe_decode's lines
  bool identical() const;                  // every supported co-located run identical to alone
};

struct HarnessReport {
  std::string backend;
  std::string gpu;
  std::string note;
  workload::compute_data::DecodeShape shape{};
  std::uint64_t seed = 0;
  int tokens = 0;
  std::vector<VariantReport> variants;
  // True when the "fixed" variant (if run) is identical everywhere: the determinism claim holds.
  bool fixed_identical() const;
};

// The runs in order: per variant, alone, then each mode (static partitions once per size). Same
// setup, options and seed on the simulator: the same report.
core::Result<HarnessReport> run_determinism(const HarnessSetup& setup,
                                            const HarnessOptions& options);

// The static-partitions sizes `requested` becomes on `spec`: nearest multiple of the granule, at
// least one granule, at most all the GPU's whole granules but one (left to the best-effort tenant).
int round_to_granule(const hw::GpuSpec& spec, int requested);

std::string format_report(const HarnessReport& report);
nlohmann::json to_json(const HarnessReport& report);

}  // namespace tessera::experiment
