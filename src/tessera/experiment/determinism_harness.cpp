#include "tessera/experiment/determinism_harness.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "tessera/backends/sim/engine.hpp"
#include "tessera/backends/sim/gpu/sim_gpu.hpp"
#include "tessera/core/try.hpp"
#include "tessera/gpu/check/determinism_checker.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/workload/models/compute_steps.hpp"

namespace tessera::experiment {

using core::Code;
using core::Domain;

namespace {

constexpr std::string_view kAloneMode = "exclusive";
constexpr std::string_view kStaticMode = "static-partitions";
constexpr gpu::TenantId kDecodeTenant = 0;
constexpr gpu::TenantId kTrainTenant = 1;

// --- the simulated GPU as a backend ---

class SimBackend final : public HarnessBackend, public device::DeviceObserver {
 public:
  static core::Result<std::unique_ptr<SimBackend>> create(const hw::GpuSpec& spec) {
    auto backend = std::unique_ptr<SimBackend>(new SimBackend());
    TESSERA_ASSIGN_OR_RETURN(
        backend->gpu_, sim::SimGpu::create(backend->engine_, spec, sim::default_options(spec)));
    backend->gpu_->add_observer(backend.get());
    return backend;
  }

  device::GpuDevice& device() override { return *gpu_; }
  void bind(std::string_view kernel, workload::ComputeModel& model) override {
    bindings_[std::string(kernel)] = &model;
  }
  core::Status drive(const std::function<bool()>& finished) override {
    while (!finished()) {
      if (error_) return std::unexpected(*error_);
      if (!engine_.step()) {
        return core::fail(Domain::kSim, Code::kInternal,
                          "the simulated GPU ran out of events before the determinism run "
                          "finished (a submission was never completed)");
      }
    }
    if (error_) return std::unexpected(*error_);
    return {};
  }

  // The kernel's work runs when it completes; the SMs it held stand for its partition.
  void on_kernel_complete(const device::KernelEvent& event) override {
    if (event.yielded || error_) return;
    const auto it = bindings_.find(event.kernel->name);
    if (it == bindings_.end()) return;
    const workload::ComputeSite site{.partition_sms = event.sms,
                                     .stream = nullptr,
                                     .block_begin = event.blocks.begin,
                                     .block_end = event.blocks.end};
    if (auto st = it->second->run_kernel(it->first, site); !st) error_ = st.error();
  }

 private:
  SimBackend() = default;
  sim::Engine engine_;  // before gpu_: the device schedules on it until it is destroyed
  std::unique_ptr<sim::SimGpu> gpu_;
  std::map<std::string, workload::ComputeModel*, std::less<>> bindings_;
  std::optional<core::Error> error_;
};

// --- one run ---

// Forwards to the decode model, recording where each kernel ran and counting the step's kernels.
class RecordingModel final : public workload::ComputeModel {
 public:
  RecordingModel(workload::ComputeModel& inner, RunReport& report)
      : inner_(inner), report_(report) {}
  void on_kernel(std::function<void()> after) { after_ = std::move(after); }

  std::string_view name() const override { return inner_.name(); }
  core::Status reset(std::uint64_t seed) override { return inner_.reset(seed); }
  workload::KernelSequencePtr step_sequence() const override { return inner_.step_sequence(); }
  core::Status run_kernel(std::string_view kernel, const workload::ComputeSite& site) override {
    ++report_.kernel_sms[std::string(kernel)][site.partition_sms];
    const auto [last, first] = last_sms_.try_emplace(std::string(kernel), site.partition_sms);
    if (!first && last->second != site.partition_sms) ++report_.partition_changes;
    last->second = site.partition_sms;
    TESSERA_TRY(inner_.run_kernel(kernel, site));
    ++kernels_run_;
    if (after_) after_();
    return {};
  }
  core::Result<workload::StepOutput> finish_step() override {
    kernels_run_ = 0;
    return inner_.finish_step();
  }
  std::int64_t kernels_run() const { return kernels_run_; }

 private:
  workload::ComputeModel& inner_;
  RunReport& report_;
  std::function<void()> after_;
  std::int64_t kernels_run_ = 0;
  std::map<std::string, int, std::less<>> last_sms_;  // per kernel, the SMs of its last launch
};

// The tenants' submissions: the decode tenant one step at a time (its tokens feed the next), the
// best-effort tenant back to back until the decode run ends.
class RunDriver {
 public:
  RunDriver(gpu::SharingMode& mode, RecordingModel& decode, workload::ComputeModel* train,
            workload::KernelSequencePtr train_sequence, int steps, bool with_train)
      : mode_(mode),
        decode_(decode),
        train_(train),
        train_sequence_(std::move(train_sequence)),
        steps_(steps),
        with_train_(with_train),
        kernels_per_step_(decode.step_sequence()->kernel_count()) {
    decode_.on_kernel([this] { advance(); });
  }

  void start() {
    submit_decode();
    if (with_train_) submit_train();
  }
  bool finished() const { return error_.has_value() || (decode_finished_ && !train_in_flight_); }
  const std::optional<core::Error>& error() const { return error_; }
  std::vector<workload::StepOutput>& outputs() { return outputs_; }
  std::int64_t train_steps() const { return train_steps_; }

 private:
  void submit_decode() {
    const auto tag = static_cast<std::uint64_t>(outputs_.size());
    auto st = mode_.submit(kDecodeTenant, decode_.step_sequence(), tag,
                           [this](const device::SubmissionDone&) {
                             decode_done_ = true;
                             advance();
                           });
    if (!st) keep(st.error());
  }

  // A step is over when the device reported it done and every kernel's work ran (on the
  // simulator the work runs from kernel events, which may come after the done callback).
  void advance() {
    if (error_ || !decode_done_ || decode_.kernels_run() < kernels_per_step_) return;
    decode_done_ = false;
    auto out = decode_.finish_step();
    if (!out) return keep(out.error());
    outputs_.push_back(std::move(*out));
    if (std::cmp_less(outputs_.size(), steps_)) {
      submit_decode();
    } else {
      decode_finished_ = true;
    }
  }

  void submit_train() {
    train_in_flight_ = true;
    auto sequence = train_ != nullptr ? train_->step_sequence() : train_sequence_;
    auto st =
        mode_.submit(kTrainTenant, std::move(sequence), static_cast<std::uint64_t>(train_steps_),
                     [this](const device::SubmissionDone&) {
                       train_in_flight_ = false;
                       ++train_steps_;
                       if (train_ != nullptr) {
                         if (auto out = train_->finish_step(); !out) return keep(out.error());
                       }
                       if (!decode_finished_ && !error_) submit_train();
                     });
    if (!st) {
      train_in_flight_ = false;
      keep(st.error());
    }
  }

  void keep(const core::Error& e) {
    if (!error_) error_ = e;
  }

  gpu::SharingMode& mode_;
  RecordingModel& decode_;
  workload::ComputeModel* train_;
  workload::KernelSequencePtr train_sequence_;
  int steps_;
  bool with_train_;
  std::int64_t kernels_per_step_;
  bool decode_done_ = false;
  bool decode_finished_ = false;
  bool train_in_flight_ = false;
  std::int64_t train_steps_ = 0;
  std::vector<workload::StepOutput> outputs_;
  std::optional<core::Error> error_;
};

struct RunSpec {
  std::string mode;
  int requested_sms = 0;  // static partitions
  int lc_sms = 0;
};

struct RunResult {
  RunReport report;
  std::vector<workload::StepOutput> outputs;
};

core::Result<RunResult> run_one(const HarnessSetup& setup, const HarnessOptions& options,
                                const RunSpec& spec, workload::ComputeModel& decode,
                                workload::ComputeModel* train) {
  RunResult result;
  RunReport& report = result.report;
  report.mode = spec.mode;
  report.requested_sms = spec.requested_sms;
  report.lc_partition_sms = spec.lc_sms;

  TESSERA_ASSIGN_OR_RETURN(auto backend, setup.make_backend());
  device::GpuDevice& device = backend->device();
  TESSERA_ASSIGN_OR_RETURN(auto inner, gpu::make_sharing_mode(spec.mode, options.mode_options));
  gpu::CheckedMode mode(std::move(inner));

  const bool alone = spec.mode == kAloneMode;
  std::vector<gpu::TenantInfo> tenants;
  tenants.push_back(gpu::TenantInfo{
      .id = kDecodeTenant,
      .name = "decode",
      .latency_critical = true,
      .priority = 1,
      .sm_share = spec.lc_sms > 0
                      ? static_cast<double>(spec.lc_sms) / static_cast<double>(device.spec().sms)
                      : 0,
      .tpot_slo = options.tpot_slo});
  // The best-effort tenant's share 0: static partitions give it what the decode tenant leaves.
  if (!alone) tenants.push_back(gpu::TenantInfo{.id = kTrainTenant, .name = "train"});
  if (auto st = mode.attach(device, tenants); !st) {
    if (st.error().code() != Code::kUnsupported) return std::unexpected(st.error());
    report.supported = false;
    report.reason = st.error().message();
    return result;
  }

  RecordingModel recorder(decode, report);
  for (const auto& group : decode.step_sequence()->groups) {
    for (const auto& k : group.kernels) backend->bind(k.name, recorder);
  }
  TESSERA_TRY(decode.reset(options.seed));
  if (train != nullptr) {
    for (const auto& group : train->step_sequence()->groups) {
      for (const auto& k : group.kernels) backend->bind(k.name, *train);
    }
    TESSERA_TRY(train->reset(options.seed));
  }

  RunDriver driver(mode, recorder, train, setup.train_sequence, options.tokens, !alone);
  driver.start();
  TESSERA_TRY(backend->drive([&driver] { return driver.finished(); }));
  if (driver.error()) return std::unexpected(*driver.error());
  if (auto verdict = mode.verdict(); !verdict) report.scheduler_check = verdict.error().message();
  report.counters = mode.counters();
  report.best_effort_steps = driver.train_steps();
  report.steps = static_cast<std::int64_t>(driver.outputs().size());
  result.outputs = std::move(driver.outputs());
  return result;
}

// Fills `run`'s comparison with the alone run's outputs.
void compare(const std::vector<workload::StepOutput>& alone,
             const std::vector<workload::StepOutput>& colocated, RunReport& run) {
  const std::size_t steps = std::min(alone.size(), colocated.size());
  run.identical = alone.size() == colocated.size();
  for (std::size_t s = 0; s < steps; ++s) {
    const auto& a = alone[s];
    const auto& c = colocated[s];
    run.tokens_compared += static_cast<std::int64_t>(a.tokens.size());
    for (std::size_t b = 0; b < std::min(a.tokens.size(), c.tokens.size()); ++b) {
      if (a.tokens[b] != c.tokens[b]) ++run.tokens_differing;
    }
    if (run.first_mismatch) continue;
    for (std::size_t k = 0; k < a.kernel_checksums.size(); ++k) {
      const bool same =
          k < c.kernel_checksums.size() && a.kernel_checksums[k] == c.kernel_checksums[k];
      if (same) continue;
      run.first_mismatch = Mismatch{
          .step = static_cast<std::int64_t>(s),
          .kernel = a.kernel_checksums[k].first,
          .alone_checksum = a.kernel_checksums[k].second,
          .colocated_checksum = k < c.kernel_checksums.size() ? c.kernel_checksums[k].second : 0,
          .alone_tokens = a.tokens,
          .colocated_tokens = c.tokens};
      break;
    }
    if (!run.first_mismatch && a.tokens != c.tokens) {
      run.first_mismatch = Mismatch{.step = static_cast<std::int64_t>(s),
                                    .kernel = "tokens",
                                    .alone_tokens = a.tokens,
                                    .colocated_tokens = c.tokens};
    }
  }
  if (run.first_mismatch) run.identical = false;
}

core::Result<std::vector<RunSpec>> plan_runs(const hw::GpuSpec& spec,
                                             const HarnessOptions& options) {
  std::vector<std::string> modes = options.modes;
  if (modes.empty()) {
    for (const auto& entry : gpu::sharing_modes()) {
      if (entry.name != kAloneMode) modes.emplace_back(entry.name);
    }
  }
  std::vector<RunSpec> runs;
  for (const auto& m : modes) {
    if (!gpu::is_sharing_mode(m)) {
      return core::failf(Domain::kGpu, Code::kInvalidArgument,
                         "unknown sharing mode '{}'; known modes: {}", m,
                         gpu::sharing_mode_names());
    }
    if (m != kStaticMode) {
      runs.push_back(RunSpec{.mode = m});
      continue;
    }
    for (int size : options.lc_partition_sms) {
      runs.push_back(
          RunSpec{.mode = m, .requested_sms = size, .lc_sms = round_to_granule(spec, size)});
    }
  }
  return runs;
}

std::string hex(std::uint64_t v) {
  return fmt::format("{:016x}", v);
}

std::string describe_sms(const std::map<int, std::int64_t>& seen) {
  std::vector<std::string> parts;
  for (const auto& [sms, launches] : seen) parts.push_back(fmt::format("{}x{}", sms, launches));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, " "));
}

std::string run_label(std::string_view mode, int lc_sms, int requested) {
  if (requested == 0) return std::string(mode);
  return requested == lc_sms ? fmt::format("{} {}", mode, lc_sms)
                             : fmt::format("{} {} (asked {})", mode, lc_sms, requested);
}

std::string run_label(const RunReport& r) {
  return run_label(r.mode, r.lc_partition_sms, r.requested_sms);
}

double counter(const RunReport& r, std::string_view name) {
  for (const auto& c : r.counters) {
    if (c.name == name) return c.value;
  }
  return 0;
}

}  // namespace

HarnessSetup sim_setup(const hw::GpuSpec& spec, const workload::compute_data::DecodeShape& shape) {
  HarnessSetup setup;
  setup.backend_name = "simulator";
  setup.note =
      "simulated GPU: kernel work runs in the host reference when the simulator completes the "
      "kernel, with the SMs it held as its partition; the drift variant models an "
      "SM-count-dependent GEMM (K cut into max(1, SMs / 16) partial sums), so a mismatch here "
      "shows how drift surfaces, not what a GPU does";
  setup.shape = shape;
  setup.make_backend = [spec]() -> core::Result<std::unique_ptr<HarnessBackend>> {
    TESSERA_ASSIGN_OR_RETURN(auto backend, SimBackend::create(spec));
    return std::unique_ptr<HarnessBackend>(std::move(backend));
  };
  setup.make_decode =
      [shape](GemmVariant v) -> core::Result<std::unique_ptr<workload::ComputeModel>> {
    TESSERA_ASSIGN_OR_RETURN(auto model, HostDecodeModel::create({.shape = shape, .variant = v}));
    return std::unique_ptr<workload::ComputeModel>(std::move(model));
  };
  setup.train_sequence = workload::compute_steps::train_step_sequence({});
  return setup;
}

int round_to_granule(const hw::GpuSpec& spec, int requested) {
  const int granule = std::max(1, spec.green_ctx_min_sms);
  const int nearest = static_cast<int>(
      std::lround(static_cast<double>(requested) / static_cast<double>(granule)) * granule);
  const int most = std::max(granule, (spec.sms / granule - 1) * granule);
  return std::clamp(nearest, granule, most);
}

bool VariantReport::identical() const {
  return std::ranges::all_of(colocated,
                             [](const RunReport& r) { return !r.supported || r.identical; });
}

bool HarnessReport::fixed_identical() const {
  return std::ranges::all_of(variants, [](const VariantReport& v) {
    return v.variant != GemmVariant::kFixed || v.identical();
  });
}

core::Result<HarnessReport> run_determinism(const HarnessSetup& setup,
                                            const HarnessOptions& options) {
  if (options.tokens <= 0) {
    return core::failf(Domain::kConfig, Code::kInvalidArgument, "tokens {} must be > 0",
                       options.tokens);
  }
  if (options.variants.empty()) {
    return core::fail(Domain::kConfig, Code::kInvalidArgument, "no variant to run");
  }
  for (int size : options.lc_partition_sms) {
    if (size <= 0) {
      return core::failf(Domain::kConfig, Code::kInvalidArgument,
                         "partition size {} SMs must be > 0", size);
    }
  }
  HarnessReport report;
  report.backend = setup.backend_name;
  report.note = setup.note;
  report.shape = setup.shape;
  report.seed = options.seed;
  report.tokens = options.tokens;

  // The GPU's spec (for the partition grid) from a first backend.
  hw::GpuSpec spec;
  {
    TESSERA_ASSIGN_OR_RETURN(auto probe, setup.make_backend());
    spec = probe->device().spec();
  }
  report.gpu = spec.name;
  TESSERA_ASSIGN_OR_RETURN(const auto runs, plan_runs(spec, options));
  const auto total = static_cast<std::int64_t>(options.variants.size() * (runs.size() + 1));
  std::int64_t done = 0;
  auto progress = [&](GemmVariant v, const RunSpec& run) {
    if (options.progress) {
      options.progress(
          done, total,
          fmt::format("{} {}", to_string(v), run_label(run.mode, run.lc_sms, run.requested_sms)));
    }
    ++done;
  };

  for (const GemmVariant variant : options.variants) {
    TESSERA_ASSIGN_OR_RETURN(auto decode, setup.make_decode(variant));
    std::unique_ptr<workload::ComputeModel> train;
    if (setup.make_train) {
      TESSERA_ASSIGN_OR_RETURN(train, setup.make_train());
    }

    VariantReport vr{.variant = variant, .alone = {}, .colocated = {}, .model_details = {}};
    progress(variant, RunSpec{.mode = std::string(kAloneMode)});
    TESSERA_ASSIGN_OR_RETURN(
        auto alone,
        run_one(setup, options, RunSpec{.mode = std::string(kAloneMode)}, *decode, train.get()));
    if (!alone.report.supported) {
      return core::failf(Domain::kGpu, Code::kUnsupported,
                         "the alone run (mode exclusive) cannot run on {}: {}", spec.name,
                         alone.report.reason);
    }
    alone.report.tokens_compared =
        alone.report.steps * static_cast<std::int64_t>(setup.shape.batch);
    vr.alone = std::move(alone.report);

    for (const auto& run : runs) {
      progress(variant, run);
      TESSERA_ASSIGN_OR_RETURN(auto colocated, run_one(setup, options, run, *decode, train.get()));
      if (colocated.report.supported) compare(alone.outputs, colocated.outputs, colocated.report);
      vr.colocated.push_back(std::move(colocated.report));
    }
    if (setup.describe_decode) vr.model_details = setup.describe_decode(*decode);
    report.variants.push_back(std::move(vr));
  }
  return report;
}

std::string format_report(const HarnessReport& report) {
  std::string out = fmt::format(
      "Determinism: decode (batch {}, hidden {}, vocab {}) alone vs co-located with training, "
      "{} steps, seed {}\nBackend: {}, GPU: {}\n",
      report.shape.batch, report.shape.hidden, report.shape.vocab, report.tokens, report.seed,
      report.backend, report.gpu);
  for (const auto& v : report.variants) {
    out += fmt::format("\nvariant {} ({})\n", to_string(v.variant),
                       v.variant == GemmVariant::kFixed
                           ? "GEMM algorithm and SM target fixed: expected identical"
                           : "GEMM algorithm follows the partition's SM count: may drift");
    out += fmt::format("  {:<34} {:>7} {:>6}  {:<34} {:<22} {:>7} {:>8}\n", "run", "tokens",
                       "differ", "result", "lm_head SMs x launches", "changes", "BE steps");
    auto row = [&out](std::string label, const RunReport& r, std::string result) {
      const auto it = r.kernel_sms.find(std::string(workload::compute_steps::kDecodeLmHead));
      out += fmt::format("  {:<34} {:>7} {:>6}  {:<34} {:<22} {:>7} {:>8}\n", label,
                         r.tokens_compared, r.tokens_differing, result,
                         it == r.kernel_sms.end() ? "-" : describe_sms(it->second),
                         r.partition_changes, r.best_effort_steps);
    };
    row("exclusive (alone, the reference)", v.alone, "reference");
    for (const auto& r : v.colocated) {
      if (!r.supported) {
        out += fmt::format("  {:<34} not supported on this backend: {}\n", run_label(r), r.reason);
        continue;
      }
      std::string result = r.identical ? "identical" : "DIFFERS";
      if (r.first_mismatch) {
        result =
            fmt::format("differs: step {}, {}", r.first_mismatch->step, r.first_mismatch->kernel);
      }
      row(run_label(r), r, result);
    }
    for (const auto& line : v.model_details) out += fmt::format("  {}\n", line);
    for (const auto& r : v.colocated) {
      if (r.supported && r.scheduler_check != "ok") {
        out += fmt::format("  {}: scheduler check: {}\n", run_label(r), r.scheduler_check);
      }
      if (const double remaps = counter(r, "remaps"); remaps > 0) {
        out += fmt::format("  {}: {} remaps by the mode\n", run_label(r), remaps);
      }
      if (!r.first_mismatch) continue;
      const auto& m = *r.first_mismatch;
      out += fmt::format(
          "  {}: first mismatch at step {} in {}: checksum {} alone, {} co-located; tokens "
          "[{}] alone, [{}] co-located\n",
          run_label(r), m.step, m.kernel, hex(m.alone_checksum), hex(m.colocated_checksum),
          fmt::join(m.alone_tokens, ", "), fmt::join(m.colocated_tokens, ", "));
    }
  }
  out += fmt::format("\nfixed variant: {}\n", report.fixed_identical()
                                                  ? "identical everywhere"
                                                  : "NOT identical: a determinism failure");
  if (!report.note.empty()) out += fmt::format("Note: {}\n", report.note);
  return out;
}

namespace {

nlohmann::json run_json(const RunReport& r) {
  nlohmann::json j = {{"mode", r.mode}, {"supported", r.supported}};
  if (r.requested_sms > 0) {
    j["lc_partition_sms"] = r.lc_partition_sms;
    j["requested_sms"] = r.requested_sms;
  }
  if (!r.supported) {
    j["reason"] = r.reason;
    return j;
  }
  j["steps"] = r.steps;
  j["tokens_compared"] = r.tokens_compared;
  j["tokens_differing"] = r.tokens_differing;
  j["identical"] = r.identical;
  if (r.first_mismatch) {
    const auto& m = *r.first_mismatch;
    j["first_mismatch"] = {{"step", m.step},
                           {"kernel", m.kernel},
                           {"alone_checksum", hex(m.alone_checksum)},
                           {"colocated_checksum", hex(m.colocated_checksum)},
                           {"alone_tokens", m.alone_tokens},
                           {"colocated_tokens", m.colocated_tokens}};
  }
  nlohmann::json sms = nlohmann::json::object();
  for (const auto& [kernel, seen] : r.kernel_sms) {
    nlohmann::json per = nlohmann::json::object();
    for (const auto& [n, launches] : seen) per[std::to_string(n)] = launches;
    sms[kernel] = per;
  }
  j["kernel_sms"] = sms;
  j["partition_changes"] = r.partition_changes;
  nlohmann::json counters = nlohmann::json::object();
  for (const auto& c : r.counters) counters[c.name] = c.value;
  j["mode_counters"] = counters;
  j["best_effort_steps"] = r.best_effort_steps;
  j["scheduler_check"] = r.scheduler_check;
  return j;
}

}  // namespace

nlohmann::json to_json(const HarnessReport& report) {
  nlohmann::json variants = nlohmann::json::array();
  for (const auto& v : report.variants) {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& r : v.colocated) runs.push_back(run_json(r));
    variants.push_back({{"variant", to_string(v.variant)},
                        {"identical", v.identical()},
                        {"alone", run_json(v.alone)},
                        {"colocated", runs},
                        {"model_details", v.model_details}});
  }
  return {{"backend", report.backend},
          {"gpu", report.gpu},
          {"note", report.note},
          {"model",
           {{"batch", report.shape.batch},
            {"hidden", report.shape.hidden},
            {"vocab", report.shape.vocab}}},
          {"seed", report.seed},
          {"tokens", report.tokens},
          {"fixed_identical", report.fixed_identical()},
          {"variants", variants}};
}

}  // namespace tessera::experiment
