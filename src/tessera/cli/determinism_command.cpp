#include "tessera/cli/determinism_command.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstdio>
#include <limits>
#include <string_view>
#include <vector>

#include "tessera/cli/backend_choice.hpp"
#include "tessera/cli/output.hpp"
#include "tessera/cli/progress.hpp"
#include "tessera/core/text.hpp"
#include "tessera/core/try.hpp"
#include "tessera/experiment/determinism_harness.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/workload/models/compute_steps.hpp"

#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda/cublaslt_library.hpp"
#include "tessera/backends/cuda/cuda_gpu.hpp"
#include "tessera/backends/cuda/decode_step.hpp"
#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/device/wall_clock_executor.hpp"
#endif

namespace tessera::cli {
namespace {

using core::Code;
using core::Domain;

constexpr int kUsageOrBackendError = 2;
constexpr int kNotDeterministic = 1;

core::Error usage(std::string message) {
  return core::Error(Domain::kConfig, Code::kInvalidArgument, std::move(message));
}

core::Result<std::int64_t> parse_int(std::string_view flag, std::string_view text, std::int64_t min,
                                     std::int64_t max) {
  std::int64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    return std::unexpected(
        usage(fmt::format("{} '{}': expected a whole number from {} to {}", flag, text, min, max)));
  }
  return value;
}

core::Result<experiment::HarnessOptions> parse_options(const DeterminismFlags& f) {
  experiment::HarnessOptions o;
  TESSERA_ASSIGN_OR_RETURN(const auto tokens, parse_int("--tokens", f.tokens, 1, 1'000'000));
  o.tokens = static_cast<int>(tokens);
  TESSERA_ASSIGN_OR_RETURN(
      const auto seed, parse_int("--seed", f.seed, 0, std::numeric_limits<std::int64_t>::max()));
  o.seed = static_cast<std::uint64_t>(seed);
  if (!f.modes.empty()) {
    o.modes.clear();
    for (auto m : core::split(f.modes, ',')) {
      if (!gpu::is_sharing_mode(m)) {
        return std::unexpected(usage(fmt::format("--modes: unknown sharing mode '{}'; known: {}", m,
                                                 gpu::sharing_mode_names())));
      }
      o.modes.emplace_back(m);
    }
  }
  o.lc_partition_sms.clear();
  for (auto s : core::split(f.sizes, ',')) {
    TESSERA_ASSIGN_OR_RETURN(const auto sms, parse_int("--sizes", s, 1, 100'000));
    o.lc_partition_sms.push_back(static_cast<int>(sms));
  }
  if (f.variant == "fixed") {
    o.variants = {experiment::GemmVariant::kFixed};
  } else if (f.variant == "drift") {
    o.variants = {experiment::GemmVariant::kDrift};
  } else if (f.variant != "both") {
    return std::unexpected(
        usage(fmt::format("--variant '{}': expected fixed, drift or both", f.variant)));
  }
  return o;
}

#ifdef TESSERA_HAVE_CUDA
// A fresh CudaGpu per run; each model kernel runs as a payload in the partition the mode chose.
class CudaBackend final : public experiment::HarnessBackend {
 public:
  static core::Result<std::unique_ptr<experiment::HarnessBackend>> create(
      const cuda::DriverLibrary& driver) {
    auto backend = std::unique_ptr<CudaBackend>(new CudaBackend());
    TESSERA_ASSIGN_OR_RETURN(backend->gpu_, cuda::CudaGpu::create(driver, backend->executor_));
    return std::unique_ptr<experiment::HarnessBackend>(std::move(backend));
  }
  device::GpuDevice& device() override { return *gpu_; }
  void bind(std::string_view kernel, workload::ComputeModel& model) override {
    gpu_->bind_payload(std::string(kernel),
                       [&model, name = std::string(kernel)](const cuda::PayloadLaunch& launch) {
                         return model.run_kernel(name, {.partition_sms = launch.partition_sms,
                                                        .stream = launch.stream,
                                                        .block_begin = launch.blocks.begin,
                                                        .block_end = launch.blocks.end});
                       });
  }
  core::Status drive(const std::function<bool()>& finished) override {
    const core::Nanos give_up = executor_.now() + kRunLimit;
    while (!finished()) {
      if (executor_.now() > give_up) {
        return core::failf(Domain::kCuda, Code::kInternal,
                           "a determinism run on {} did not finish within {} s; the GPU or a "
                           "sharing mode stopped making progress",
                           gpu_->spec().name, core::to_seconds(kRunLimit));
      }
      TESSERA_TRY(gpu_->run_until(executor_.now() + core::millis(1), /*stop_when_idle=*/false));
    }
    return {};
  }

 private:
  // ASSUMPTION: 120 s; a run of the default 64 decode steps beside training takes well under a
  // second of GPU time, so this only catches a hang.
  static constexpr core::Nanos kRunLimit = core::seconds(120);
  CudaBackend() = default;
  device::WallClockExecutor executor_;  // before gpu_: the device uses it until destroyed
  std::unique_ptr<cuda::CudaGpu> gpu_;
};

struct CudaLibraries {
  const cuda::DriverLibrary* driver = nullptr;
  std::unique_ptr<cuda::CublasLt> lt;
};

experiment::HarnessSetup cuda_setup(const CudaLibraries& libs) {
  experiment::HarnessSetup setup;
  setup.backend_name = "cuda";
  setup.note =
      "real GPU: each model kernel ran as a CudaGpu payload in the green context the mode chose; "
      "the fixed variant pins cuBLASLt's algorithm and SM target, the drift variant re-chooses "
      "the algorithm for each partition size";
  const cuda::DriverLibrary& driver = *libs.driver;
  const cuda::CublasLt& lt = *libs.lt;
  setup.make_backend = [&driver] { return CudaBackend::create(driver); };
  setup.make_decode =
      [&driver,
       &lt](experiment::GemmVariant v) -> core::Result<std::unique_ptr<workload::ComputeModel>> {
    cuda::DecodeModelOptions options;
    options.gemm.variant = v == experiment::GemmVariant::kFixed ? cuda::GemmVariant::kFixed
                                                                : cuda::GemmVariant::kDrift;
    TESSERA_ASSIGN_OR_RETURN(auto model, cuda::CudaDecodeModel::create(driver, lt, options));
    return std::unique_ptr<workload::ComputeModel>(std::move(model));
  };
  setup.make_train = [&driver, &lt]() -> core::Result<std::unique_ptr<workload::ComputeModel>> {
    TESSERA_ASSIGN_OR_RETURN(auto model, cuda::CudaTrainingModel::create(driver, lt, {}));
    return std::unique_ptr<workload::ComputeModel>(std::move(model));
  };
  setup.train_sequence = workload::compute_steps::train_step_sequence({});
  setup.describe_decode = [](const workload::ComputeModel& model) {
    std::vector<std::string> lines;
    const auto* decode = dynamic_cast<const cuda::CudaDecodeModel*>(&model);
    if (decode == nullptr) return lines;
    for (const auto& seen : decode->algorithms_seen()) {
      for (const auto& a : seen.algorithms) {
        lines.push_back(fmt::format("lm_head on {} SMs ({} launches): {}", seen.partition_sms,
                                    seen.launches, cuda::to_string(a)));
      }
    }
    return lines;
  };
  return setup;
}
#endif

core::Result<experiment::HarnessReport> run(const DeterminismFlags& f,
                                            const experiment::HarnessOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(const Backend backend, Backend::choose(f.backend, f.quiet));
  if (backend.real()) {
#ifdef TESSERA_HAVE_CUDA
    CudaLibraries libs;
    libs.driver = &backend.driver();
    TESSERA_ASSIGN_OR_RETURN(libs.lt, cuda::CublasLt::open());
    return experiment::run_determinism(cuda_setup(libs), options);
#endif
  }
  TESSERA_ASSIGN_OR_RETURN(
      const auto spec, core::with_context(hw::find_gpu(f.gpu.empty() ? "h100" : f.gpu), "--gpu"));
  return experiment::run_determinism(experiment::sim_setup(spec, {}), options);
}

}  // namespace

void add_determinism_options(CLI::App& command, DeterminismFlags& f) {
  CLI::App* c = &command;
  // Unknown arguments are this command's usage error (exit status 2), not CLI11's own status.
  c->allow_extras();
  c->add_option("--backend", f.backend, std::string(kBackendHelp))->capture_default_str();
  c->add_option("--gpu", f.gpu, "Catalog GPU for the simulator (default h100)");
  c->add_option("--tokens", f.tokens, "Decode steps compared per run")->capture_default_str();
  c->add_option("--modes", f.modes,
                "Sharing modes to co-locate under, comma-separated (default: all but exclusive)");
  c->add_option("--sizes", f.sizes,
                "static-partitions: the decode tenant's SMs, comma-separated, rounded to the "
                "green-context grid")
      ->capture_default_str();
  c->add_option("--variant", f.variant,
                "fixed (GEMM algorithm fixed), drift (algorithm follows the partition) or both")
      ->capture_default_str();
  c->add_option("--seed", f.seed, "Seed of the model's data")->capture_default_str();
  c->add_option("--json", f.json_path, "Write the report as JSON to this file ('-' for stdout)");
  c->add_flag("-q,--quiet", f.quiet, "No progress line");
}

Outcome run_determinism_command(const DeterminismFlags& f) {
  auto fail = [](core::Error e) { return Outcome::failure(std::move(e), kUsageOrBackendError); };
  if (const auto extra = f.command->remaining(); !extra.empty()) {
    return fail(usage(
        fmt::format("determinism: unknown argument(s) {}; see --help", fmt::join(extra, " "))));
  }
  auto options = parse_options(f);
  if (!options) return fail(options.error());
  ProgressLine progress(!f.quiet);
  options->progress = [&progress](std::int64_t done, std::int64_t total, std::string_view what) {
    progress.update(what, done, total);
  };
  auto report = run(f, *options);
  progress.finish();
  if (!report) return fail(report.error());
  if (f.json_path != "-") fmt::print("{}", experiment::format_report(*report));
  if (!f.json_path.empty()) {
    if (auto st = write_text(f.json_path, experiment::to_json(*report).dump(2)); !st) {
      return fail(st.error());
    }
  }
  return Outcome::exit(report->fixed_identical() ? 0 : kNotDeterministic);
}

}  // namespace tessera::cli
