#include "tessera/scenario/scenario.hpp"

#include <filesystem>
#include <set>

#include "tessera/core/config.hpp"
#include "tessera/core/file_read.hpp"
#include "tessera/core/try.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/workload/models/tensor_parallel.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::scenario {

namespace {

using core::ConfigNode;
using core::Result;
using core::Status;

Result<workload::LengthRange> parse_range(const ConfigNode& n) {
  TESSERA_TRY(n.check_keys({"min", "max"}));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t lo, n.get_int("min"));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t hi, n.get_int("max"));
  if (lo < 1 || hi < lo || hi > 1'000'000) {
    return std::unexpected(n.error(fmt::format(
        "token range must satisfy 1 <= min <= max <= 1000000, got min {} max {}", lo, hi)));
  }
  return workload::LengthRange{static_cast<int>(lo), static_cast<int>(hi)};
}

// Relocates an error from a lookup (a model or GPU name) to the field that named it.
auto at_field(const ConfigNode& n, std::string_view key) {
  return [&n, key](const core::Error& e) { return n.at(key)->error(e.message()); };
}

// A field that must be absent for the chosen variant, so a misplaced key is not silently ignored.
Status reject_field(const ConfigNode& n, std::string_view key, std::string_view why) {
  if (auto c = n.find(key)) {
    return std::unexpected(c->error(fmt::format("'{}' {}", key, why)));
  }
  return {};
}

Result<ArrivalSpec> parse_arrivals(const ConfigNode& n, const std::string& base_dir) {
  TESSERA_TRY(n.check_keys({"process", "rate", "cv", "input_tokens", "output_tokens", "trace",
                            "time_scale", "max_requests"}));
  ArrivalSpec spec;
  TESSERA_ASSIGN_OR_RETURN(const std::string process,
                           n.string_or("process", n.has("trace") ? "trace" : "poisson"));
  if (process == "trace") {
    spec.kind = ArrivalSpec::Kind::kTrace;
    TESSERA_ASSIGN_OR_RETURN(const std::string path, n.get_string("trace"));
    const std::filesystem::path p(path);
    spec.trace_path = p.is_absolute() ? path : (std::filesystem::path(base_dir) / p).string();
    TESSERA_ASSIGN_OR_RETURN(spec.trace.time_scale, n.double_or("time_scale", 1.0));
    if (spec.trace.time_scale <= 0) {
      return std::unexpected(n.at("time_scale")->error("time_scale must be > 0"));
    }
    TESSERA_ASSIGN_OR_RETURN(spec.trace.max_requests, n.int_or("max_requests", -1));
    if (spec.trace.max_requests < -1 || spec.trace.max_requests == 0) {
      return std::unexpected(n.at("max_requests")
                                 ->error("max_requests must be a positive count (leave it out to "
                                         "replay the whole trace)"));
    }
    for (auto key : {"rate", "cv", "input_tokens", "output_tokens"}) {
      TESSERA_TRY(reject_field(n, key,
                               "does not apply to a trace: the trace gives the times and "
                               "token counts"));
    }
    return spec;
  }
  if (process != "poisson" && process != "gamma") {
    return std::unexpected(n.at("process")->error(
        fmt::format("unknown arrival process '{}'; use poisson, gamma or trace", process)));
  }
  for (auto key : {"trace", "time_scale", "max_requests"}) {
    TESSERA_TRY(reject_field(n, key, "applies only to process: trace"));
  }
  TESSERA_ASSIGN_OR_RETURN(spec.synthetic.rate_per_s, n.get_double("rate"));
  if (spec.synthetic.rate_per_s <= 0) {
    return std::unexpected(n.at("rate")->error("rate (requests per second) must be > 0"));
  }
  TESSERA_ASSIGN_OR_RETURN(spec.synthetic.cv, n.double_or("cv", process == "gamma" ? 2.0 : 1.0));
  if (process == "poisson" && spec.synthetic.cv != 1.0) {
    return std::unexpected(
        n.at("cv")->error("a Poisson process has cv 1; use process: gamma for bursty arrivals"));
  }
  if (spec.synthetic.cv <= 0) return std::unexpected(n.at("cv")->error("cv must be > 0"));
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode input, n.at("input_tokens"));
  TESSERA_ASSIGN_OR_RETURN(spec.synthetic.input_tokens, parse_range(input));
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode output, n.at("output_tokens"));
  TESSERA_ASSIGN_OR_RETURN(spec.synthetic.output_tokens, parse_range(output));
  return spec;
}

Result<metrics::Slo> parse_slo(const ConfigNode& n) {
  TESSERA_TRY(n.check_keys({"ttft", "tpot"}));
  metrics::Slo slo;
  TESSERA_ASSIGN_OR_RETURN(slo.ttft, n.duration_or("ttft", 0));
  TESSERA_ASSIGN_OR_RETURN(slo.tpot, n.duration_or("tpot", 0));
  return slo;
}

Result<int> positive_int(const ConfigNode& n, std::string_view key, int fallback, int max) {
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t v, n.int_or(key, fallback));
  if (v < 1 || v > max) {
    return std::unexpected(
        n.at(key)->error(fmt::format("must be an integer in [1, {}], got {}", max, v)));
  }
  return static_cast<int>(v);
}

// `persistent_gemms:` of a training tenant: its GEMM and convolution kernels as persistent
// kernels with grids sized for `sms` SMs (default: all of the GPU's), polling at most
// `max_checkpoints` times each (see tenant::PersistentGemms).
Result<tenant::PersistentGemms> parse_persistent(const ConfigNode& n, const hw::GpuSpec& gpu) {
  TESSERA_TRY(n.check_keys({"sms", "max_checkpoints"}));
  tenant::PersistentGemms p;
  p.sm = gpu.sm;
  TESSERA_ASSIGN_OR_RETURN(p.sms, positive_int(n, "sms", gpu.sms, gpu.sms));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t cap, n.int_or("max_checkpoints", p.max_checkpoints));
  if (cap < 0 || cap > 1024) {
    return std::unexpected(n.at("max_checkpoints")
                               ->error(fmt::format("max_checkpoints is the most polls per kernel, "
                                                   "an integer in [0, 1024], got {}",
                                                   cap)));
  }
  p.max_checkpoints = static_cast<int>(cap);
  return p;
}

// A training tenant's `precision` (workload::check_training_precision). Every catalog GPU has
// the tensor and FP32 pipes these run on.
Result<workload::Precision> parse_training_precision(const ConfigNode& n) {
  TESSERA_ASSIGN_OR_RETURN(const std::string text, n.as_string());
  const auto p = workload::parse_precision(text);
  if (!p) {
    return std::unexpected(n.error(
        fmt::format("precision '{}': a training tenant trains in bf16, fp16, tf32 or fp32", text)));
  }
  if (auto ok = workload::check_training_precision(*p); !ok) {
    return std::unexpected(n.error(ok.error().message()));
  }
  return *p;
}

// An inference tenant's `precision`: the formats a serving engine runs, on a GPU that has the
// pipe for it.
Result<workload::Precision> parse_serving_precision(const ConfigNode& n, const hw::GpuSpec& gpu) {
  TESSERA_ASSIGN_OR_RETURN(const std::string text, n.as_string());
  const auto p = workload::parse_precision(text);
  if (!p || (*p != workload::Precision::kFp8 && *p != workload::Precision::kBf16 &&
             *p != workload::Precision::kFp16)) {
    return std::unexpected(
        n.error(fmt::format("precision '{}': a serving tenant runs fp8, bf16 or fp16", text)));
  }
  if (*p == workload::Precision::kFp8 && !(gpu.peak_fp8_tensor_flops > 0)) {
    return std::unexpected(n.error(
        fmt::format("precision fp8 needs FP8 tensor cores (Ada, Hopper); {} has none", gpu.name)));
  }
  return *p;
}

// The serving engine's CPU costs (workload/serving/engine_costs.hpp): `fitted` (the costs fitted
// on the public step profiles), `none`, or a mapping of the costs, where a cost not given is 0.
Result<workload::EngineCosts> parse_engine(const ConfigNode& n) {
  if (n.is_scalar()) {
    TESSERA_ASSIGN_OR_RETURN(const std::string text, n.as_string());
    if (text == "fitted") return workload::default_engine_costs();
    if (text == "none") return workload::kNoEngineCosts;
    return std::unexpected(n.error(fmt::format(
        "engine '{}': use fitted, none or a mapping of step, prefill, per_worker, per_sequence",
        text)));
  }
  TESSERA_TRY(n.check_keys({"step", "prefill", "per_worker", "per_sequence"}));
  workload::EngineCosts c;
  TESSERA_ASSIGN_OR_RETURN(c.step, n.duration_or("step", 0));
  TESSERA_ASSIGN_OR_RETURN(c.prefill, n.duration_or("prefill", 0));
  TESSERA_ASSIGN_OR_RETURN(c.per_worker, n.duration_or("per_worker", 0));
  TESSERA_ASSIGN_OR_RETURN(c.per_sequence, n.duration_or("per_sequence", 0));
  if (auto ok = workload::validate(c); !ok) return std::unexpected(n.error(ok.error().message()));
  return c;
}

// An inference tenant's `kv_cache`: `vllm` (vLLM's defaults) or a mapping of
// gpu_memory_utilization, block_size and watermark, sized on this GPU for its model and batch
// limits (workload/serving/kv_cache.hpp).
Result<workload::ServingMemory> parse_kv_cache(const ConfigNode& n, const hw::GpuSpec& gpu,
                                               const tenant::InferenceConfig& server) {
  workload::KvCacheSizing sizing;
  if (n.is_scalar()) {
    TESSERA_ASSIGN_OR_RETURN(const std::string text, n.as_string());
    if (text != "vllm") {
      return std::unexpected(n.error(fmt::format(
          "kv_cache '{}': use vllm or a mapping of gpu_memory_utilization, block_size, watermark",
          text)));
    }
  } else {
    TESSERA_TRY(n.check_keys({"gpu_memory_utilization", "block_size", "watermark"}));
    TESSERA_ASSIGN_OR_RETURN(sizing.gpu_memory_utilization,
                             n.double_or("gpu_memory_utilization", sizing.gpu_memory_utilization));
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t block, n.int_or("block_size", sizing.block_size));
    if (block < 1 || block > 1024) {
      return std::unexpected(n.at("block_size")
                                 ->error(fmt::format("block_size {} is out of range: use 1 to 1024 "
                                                     "tokens (vLLM: 16)",
                                                     block)));
    }
    sizing.block_size = static_cast<int>(block);
    TESSERA_ASSIGN_OR_RETURN(sizing.watermark, n.double_or("watermark", sizing.watermark));
  }
  auto sized = workload::size_kv_cache(server.model, server.tensor_parallel, gpu.memory_bytes,
                                       sizing, server.max_batched_tokens, server.max_num_seqs);
  if (!sized) {
    return std::unexpected(
        n.error(fmt::format("{} (a {} of {:.0f} GiB)", sized.error().message(), gpu.name,
                            static_cast<double>(gpu.memory_bytes) / (1 << 30))));
  }
  return *sized;
}

// The model sharded over N GPUs like the scenario's, of one server: their collectives run over
// the GPU's NVLink (an NVSwitch server, as a DGX), or through host memory where it has none.
Result<workload::TensorParallel> parse_tensor_parallel(const ConfigNode& n, const hw::GpuSpec& gpu,
                                                       const workload::ModelConfig& model) {
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t degree, n.as_int());
  if (degree < 1 || degree > 8) {
    return std::unexpected(n.error(fmt::format(
        "tensor_parallel is the number of GPUs the model is sharded over, 1 to 8, got {}",
        degree)));
  }
  workload::TensorParallel tp;
  tp.degree = static_cast<int>(degree);
  if (gpu.nvlink_bytes_per_s > 0) tp.link_bytes_per_s = gpu.nvlink_bytes_per_s;
  TESSERA_TRY(core::map_error(workload::validate(model, tp),
                              [&](const core::Error& e) { return n.error(e.message()); }));
  return tp;
}

Result<TenantSpec> parse_tenant(const ConfigNode& n, const std::string& base_dir,
                                const hw::GpuSpec& gpu) {
  TenantSpec t;
  TESSERA_ASSIGN_OR_RETURN(t.name, n.get_string("name"));
  if (t.name.empty()) return std::unexpected(n.at("name")->error("name must not be empty"));
  TESSERA_ASSIGN_OR_RETURN(const std::string kind, n.get_string("kind"));
  TESSERA_ASSIGN_OR_RETURN(const std::string model, n.get_string("model"));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t priority, n.int_or("priority", 0));
  if (priority < -1000 || priority > 1000) {
    return std::unexpected(
        n.at("priority")
            ->error(fmt::format("priority must be an integer in [-1000, 1000], got {}", priority)));
  }
  t.priority = static_cast<int>(priority);
  TESSERA_ASSIGN_OR_RETURN(t.sm_share, n.double_or("sm_share", 0.0));
  if (t.sm_share < 0 || t.sm_share > 1) {
    return std::unexpected(
        n.at("sm_share")
            ->error(fmt::format("sm_share is a fraction of the GPU's SMs in [0, 1], got {}",
                                t.sm_share)));
  }
  if (kind == "inference") {
    TESSERA_TRY(n.check_keys({"name", "kind", "model", "precision", "priority", "sm_share", "slo",
                              "arrivals", "max_num_seqs", "max_batched_tokens", "engine",
                              "kv_cache", "cuda_graphs", "tensor_parallel"}));
    t.kind = TenantSpec::Kind::kInference;
    t.inference.name = t.name;
    TESSERA_ASSIGN_OR_RETURN(t.inference.model,
                             core::map_error(workload::find_model(model), at_field(n, "model")));
    if (auto p = n.find("precision")) {
      TESSERA_ASSIGN_OR_RETURN(t.inference.model.precision, parse_serving_precision(*p, gpu));
    }
    TESSERA_ASSIGN_OR_RETURN(t.inference.max_num_seqs, positive_int(n, "max_num_seqs", 256, 65536));
    TESSERA_ASSIGN_OR_RETURN(t.inference.max_batched_tokens,
                             positive_int(n, "max_batched_tokens", 8192, 1 << 22));
    if (auto slo = n.find("slo")) {
      TESSERA_ASSIGN_OR_RETURN(t.inference.slo, parse_slo(*slo));
    }
    if (auto engine = n.find("engine")) {
      TESSERA_ASSIGN_OR_RETURN(t.inference.engine, parse_engine(*engine));
    }
    TESSERA_ASSIGN_OR_RETURN(t.inference.cuda_graphs, n.bool_or("cuda_graphs", true));
    if (auto tp = n.find("tensor_parallel")) {
      TESSERA_ASSIGN_OR_RETURN(t.inference.tensor_parallel,
                               parse_tensor_parallel(*tp, gpu, t.inference.model));
    }
    if (auto kv = n.find("kv_cache")) {
      TESSERA_ASSIGN_OR_RETURN(t.memory, parse_kv_cache(*kv, gpu, t.inference));
      t.inference.kv_cache = t.memory->cache;
    }
    TESSERA_ASSIGN_OR_RETURN(const ConfigNode arrivals, n.at("arrivals"));
    TESSERA_ASSIGN_OR_RETURN(t.arrivals, parse_arrivals(arrivals, base_dir));
    return t;
  }
  if (kind == "training") {
    TESSERA_TRY(n.check_keys({"name", "kind", "model", "precision", "priority", "sm_share", "batch",
                              "persistent_gemms"}));
    t.kind = TenantSpec::Kind::kTraining;
    t.training.name = t.name;
    TESSERA_ASSIGN_OR_RETURN(t.training.model, core::map_error(workload::find_training_model(model),
                                                               at_field(n, "model")));
    TESSERA_ASSIGN_OR_RETURN(t.training.batch,
                             positive_int(n, "batch", t.training.model.default_batch, 65536));
    if (auto p = n.find("precision")) {
      TESSERA_ASSIGN_OR_RETURN(t.training.precision, parse_training_precision(*p));
    }
    if (auto persistent = n.find("persistent_gemms")) {
      TESSERA_ASSIGN_OR_RETURN(t.training.persistent, parse_persistent(*persistent, gpu));
    }
    return t;
  }
  return std::unexpected(n.at("kind")->error(
      fmt::format("unknown tenant kind '{}'; use inference or training", kind)));
}

// Overrides of the simulator's model assumptions, for sensitivity studies; see
// src/tessera/backends/sim/gpu/sim_gpu_options.hpp for what each one means and its default.
Result<sim::SimGpuOverrides> parse_sim_options(const ConfigNode& n, const hw::GpuSpec& gpu) {
  TESSERA_TRY(n.check_keys({"achievable_compute_fraction",
                            "achievable_bandwidth_fraction",
                            "sm_bandwidth_multiple",
                            "elementwise_bandwidth_fraction",
                            "pointwise_bandwidth_fraction",
                            "gather_bandwidth_fraction",
                            "norm_bandwidth_fraction",
                            "launch_overhead",
                            "host_launch",
                            "graph_launch",
                            "compute_power_weight",
                            "batch_isolated_kernels",
                            "atom_launch_overhead",
                            "yield_save_cost",
                            "gemm_tile_selection",
                            "gemm_stream_k",
                            "gemm_compute_fraction",
                            "gemm_tile_knee",
                            "gemm_fixed",
                            "stream_k_compute_fraction",
                            "stream_k_tile_knee",
                            "stream_k_fixed",
                            "attention_compute_fraction",
                            "attention_bandwidth_fraction",
                            "collective_latency",
                            "link_bandwidth_fraction",
                            "co_residency"}));
  sim::SimGpuOverrides o;
  const auto number = [&](std::string_view key, std::optional<double>& out) -> core::Status {
    if (!n.has(key)) return {};
    TESSERA_ASSIGN_OR_RETURN(out, n.double_or(key, 0));
    return {};
  };
  const auto duration = [&](std::string_view key, std::optional<core::Nanos>& out) -> core::Status {
    if (!n.has(key)) return {};
    TESSERA_ASSIGN_OR_RETURN(out, n.duration_or(key, 0));
    return {};
  };
  const auto flag = [&](std::string_view key, std::optional<bool>& out) -> core::Status {
    if (!n.has(key)) return {};
    TESSERA_ASSIGN_OR_RETURN(out, n.bool_or(key, false));
    return {};
  };
  TESSERA_TRY(number("achievable_compute_fraction", o.achievable_compute_fraction));
  TESSERA_TRY(number("achievable_bandwidth_fraction", o.achievable_bandwidth_fraction));
  TESSERA_TRY(number("elementwise_bandwidth_fraction", o.elementwise_bandwidth_fraction));
  TESSERA_TRY(number("pointwise_bandwidth_fraction", o.pointwise_bandwidth_fraction));
  TESSERA_TRY(number("gather_bandwidth_fraction", o.gather_bandwidth_fraction));
  TESSERA_TRY(number("norm_bandwidth_fraction", o.norm_bandwidth_fraction));
  TESSERA_TRY(number("sm_bandwidth_multiple", o.sm_bandwidth_multiple));
  TESSERA_TRY(duration("launch_overhead", o.launch_overhead));
  TESSERA_TRY(duration("host_launch", o.host_launch));
  TESSERA_TRY(duration("graph_launch", o.graph_launch));
  TESSERA_TRY(number("compute_power_weight", o.compute_power_weight));
  TESSERA_TRY(duration("atom_launch_overhead", o.atom_launch_overhead));
  TESSERA_TRY(duration("yield_save_cost", o.yield_save_cost));
  TESSERA_TRY(flag("batch_isolated_kernels", o.batch_isolated_kernels));
  TESSERA_TRY(flag("co_residency", o.co_residency));
  TESSERA_TRY(flag("gemm_tile_selection", o.gemm_tile_selection));
  TESSERA_TRY(flag("gemm_stream_k", o.gemm_stream_k));
  TESSERA_TRY(number("gemm_compute_fraction", o.gemm_compute_fraction));
  TESSERA_TRY(number("gemm_tile_knee", o.gemm_tile_knee));
  TESSERA_TRY(duration("gemm_fixed", o.gemm_fixed));
  TESSERA_TRY(number("stream_k_compute_fraction", o.stream_k_compute_fraction));
  TESSERA_TRY(number("stream_k_tile_knee", o.stream_k_tile_knee));
  TESSERA_TRY(duration("stream_k_fixed", o.stream_k_fixed));
  TESSERA_TRY(number("attention_compute_fraction", o.attention_compute_fraction));
  TESSERA_TRY(number("attention_bandwidth_fraction", o.attention_bandwidth_fraction));
  TESSERA_TRY(duration("collective_latency", o.collective_latency));
  TESSERA_TRY(number("link_bandwidth_fraction", o.link_bandwidth_fraction));
  if (auto valid = sim::validate_model(gpu, sim::options_for(gpu, o)); !valid) {
    return std::unexpected(n.error(valid.error().message()));
  }
  return o;
}

Result<std::vector<std::string>> parse_modes(const ConfigNode& root) {
  std::vector<std::string> modes;
  if (root.has("mode") && root.has("modes")) {
    return std::unexpected(root.at("modes")->error("give either 'mode' or 'modes', not both"));
  }
  if (auto one = root.find("mode")) {
    TESSERA_ASSIGN_OR_RETURN(std::string m, one->as_string());
    modes.push_back(std::move(m));
  } else if (auto many = root.find("modes")) {
    TESSERA_ASSIGN_OR_RETURN(const auto items, many->items());
    for (const auto& item : items) {
      TESSERA_ASSIGN_OR_RETURN(std::string m, item.as_string());
      modes.push_back(std::move(m));
    }
  } else {
    return std::unexpected(root.error("missing 'mode' (one sharing mode) or 'modes' (a list)"));
  }
  std::set<std::string> seen;
  const ConfigNode where = root.has("mode") ? *root.find("mode") : *root.find("modes");
  for (const auto& m : modes) {
    if (!gpu::is_sharing_mode(m)) {
      return std::unexpected(where.error(
          fmt::format("unknown sharing mode '{}'; known: {}", m, gpu::sharing_mode_names())));
    }
    if (!seen.insert(m).second) {
      return std::unexpected(where.error(fmt::format("mode '{}' is listed twice", m)));
    }
  }
  if (modes.empty()) return std::unexpected(where.error("the list of modes is empty"));
  return modes;
}

}  // namespace

Result<Scenario> parse_scenario(std::string_view text, const std::string& source_name,
                                const std::string& base_dir) {
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode root, ConfigNode::parse(text, source_name));
  TESSERA_TRY(root.check_keys(
      {"name", "gpu", "seed", "duration", "mode", "modes", "mode_options", "sim", "tenants"}));
  Scenario s;
  s.source = source_name;
  TESSERA_ASSIGN_OR_RETURN(s.name, root.string_or("name", "unnamed"));
  TESSERA_ASSIGN_OR_RETURN(const std::string gpu_name, root.get_string("gpu"));
  TESSERA_ASSIGN_OR_RETURN(s.gpu, core::map_error(hw::find_gpu(gpu_name), at_field(root, "gpu")));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t seed, root.int_or("seed", 1));
  if (seed < 0) return std::unexpected(root.at("seed")->error("seed must be >= 0"));
  s.seed = static_cast<std::uint64_t>(seed);
  TESSERA_ASSIGN_OR_RETURN(s.duration, root.get_duration("duration"));
  if (s.duration <= 0) return std::unexpected(root.at("duration")->error("must be > 0"));
  TESSERA_ASSIGN_OR_RETURN(s.modes, parse_modes(root));
  if (auto opts = root.find("mode_options")) {
    TESSERA_ASSIGN_OR_RETURN(s.mode_options, gpu::ModeSettings::decode(*opts));
  }
  if (auto sim = root.find("sim")) {
    TESSERA_ASSIGN_OR_RETURN(s.sim_overrides, parse_sim_options(*sim, s.gpu));
  }
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode tenants, root.at("tenants"));
  TESSERA_ASSIGN_OR_RETURN(const auto items, tenants.items());
  if (items.empty()) return std::unexpected(tenants.error("a scenario needs at least one tenant"));
  std::set<std::string> names;
  double explicit_share = 0;
  for (const auto& item : items) {
    TESSERA_ASSIGN_OR_RETURN(TenantSpec t, parse_tenant(item, base_dir, s.gpu));
    if (!names.insert(t.name).second) {
      return std::unexpected(item.at("name")->error(
          fmt::format("tenant name '{}' is used twice; names must be unique", t.name)));
    }
    explicit_share += t.sm_share;
    s.tenants.push_back(std::move(t));
  }
  if (explicit_share > 1.0 + 1e-9) {
    return std::unexpected(tenants.error(fmt::format(
        "the tenants' sm_share values add up to {:.3g}; they must not exceed 1", explicit_share)));
  }
  return s;
}

Result<Scenario> load_scenario(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(const std::string text,
                           core::read_file(path, {.what = "scenario",
                                                  .domain = core::Domain::kScenario,
                                                  .max_bytes = core::kMaxDocumentBytes}));
  const auto dir = std::filesystem::path(path).parent_path().string();
  return parse_scenario(text, path, dir.empty() ? "." : dir);
}

}  // namespace tessera::scenario
