// JOBS.yaml (docs/mig.md, "The simulated MIG GPU and job files"): the file's jobs turned into
// workload::BatchJobs with their work, their true memory trajectory and what the scheduler is told
// in advance.
//
// The simulated truth of a DNN job is the static estimate's parts as PyTorch's caching allocator
// would hold them, which the estimate does not know:
// - Allocator slack: ASSUMPTION, in training live tensors use 85% of the reserved bytes at the
//   first iteration and 90% at the last (reuse ratio 0.85 -> 0.9, as the cache settles: the
//   activations are freed and reallocated every iteration). In inference the weights, allocated
//   once, dominate, and only the KV cache and activations churn: 0.95 -> 0.97. PyTorch
//   documents fragmentation without a figure; both are middling guesses, not measurements.
// - Segment rounding: large allocations are rounded up to 2 MiB (PyTorch
//   c10/cuda/CUDACachingAllocator.cpp: `constexpr size_t kRoundLarge = 2097152; // round up
//   large allocs to 2 MiB`), so reserved bytes are a multiple of 2 MiB.
// - Warm-up (training): optimizer state is allocated by the first optimizer.step(), at the end
//   of iteration 0 (torch.optim creates its state lazily), so it is held from iteration 1 on; a
//   one-iteration job's only step still allocates it, so it holds the state in iteration 0.

#include "tessera/mig/runtime/jobs_file.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "tessera/core/config.hpp"
#include "tessera/core/try.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/policy/memory_estimate.hpp"
#include "tessera/mig/registry.hpp"
#include "tessera/mig/runtime/manager.hpp"
#include "tessera/workload/models/rodinia.hpp"
#include "tessera/workload/models/training.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::mig {

namespace {

using core::ConfigNode;
using workload::BatchJob;
using workload::JobKind;
using workload::MemoryStep;

// ASSUMPTION reuse ratios, see the top of the file.
constexpr double kTrainingReuseStart = 0.85;
constexpr double kTrainingReuseEnd = 0.90;
constexpr double kInferenceReuseStart = 0.95;
constexpr double kInferenceReuseEnd = 0.97;
constexpr std::int64_t kAllocatorGranule = 2 * 1024 * 1024;  // PyTorch kRoundLarge, see above

// The simulator plays every iteration as an event and the trajectory is scanned per iteration:
// ten million iterations bound both (a decode of ten million tokens is far past any model here).
constexpr std::int64_t kMaxIterations = 10'000'000;
// Memory steps a chunked KV cache or a context schedule may add.
constexpr std::size_t kMaxSteps = 10'000;
// No GPU holds more than this; larger sizes are typos.
constexpr double kMaxBytes = 1024.0 * 1024 * 1024 * 1024 * 1024;  // 1 PiB

// The CUDA context and framework runtime on the device, the static estimator's constant (an
// empty training estimate holds only it and the cuBLAS workspace).
std::int64_t context_bytes() {
  return estimate_training(TrainingMemoryInput{.parameters = 0, .batch = 0}).framework_context;
}

core::Result<std::int64_t> parse_size(const ConfigNode& n) {
  const auto bad = [&](std::string_view got) {
    return std::unexpected(n.error(fmt::format(
        "expected a size like '512MiB' or '1.5GiB' (units B, KiB, MiB, GiB, TiB), got '{}'", got)));
  };
  if (!n.is_scalar()) return bad("a non-scalar");
  TESSERA_ASSIGN_OR_RETURN(const std::string text, n.as_string());
  std::size_t unit_at = 0;
  while (unit_at < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[unit_at])) || text[unit_at] == '.')) {
    ++unit_at;
  }
  if (unit_at == 0) return bad(text);
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + unit_at, value);
  if (ec != std::errc() || ptr != text.data() + unit_at) return bad(text);
  const std::string_view unit = std::string_view(text).substr(unit_at);
  double scale = 0;
  if (unit == "B") scale = 1;
  if (unit == "KiB") scale = 1024.0;
  if (unit == "MiB") scale = 1024.0 * 1024;
  if (unit == "GiB") scale = 1024.0 * 1024 * 1024;
  if (unit == "TiB") scale = 1024.0 * 1024 * 1024 * 1024;
  if (scale == 0) return bad(text);
  const double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes > kMaxBytes) {
    return std::unexpected(n.error(fmt::format("size '{}' is larger than 1 PiB", text)));
  }
  return static_cast<std::int64_t>(std::ceil(bytes));
}

core::Result<std::int64_t> positive_int(const ConfigNode& job, std::string_view key,
                                        std::int64_t max) {
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode n, job.at(key));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t v, n.as_int());
  if (v < 1 || v > max) {
    return std::unexpected(n.error(fmt::format("must be between 1 and {}, got {}", max, v)));
  }
  return v;
}

core::Result<std::int64_t> positive_int_or(const ConfigNode& job, std::string_view key,
                                           std::int64_t fallback, std::int64_t max) {
  if (!job.has(key)) return fallback;
  return positive_int(job, key, max);
}

core::Result<std::int64_t> iterations(const ConfigNode& job) {
  return positive_int(job, "iterations", kMaxIterations);
}

// The PyTorch caching allocator's view of `requested` bytes (see the top of the file).
void allocator_slack(workload::MemoryTrajectory& m, double reuse_start, double reuse_end) {
  m.reuse_start = reuse_start;
  m.reuse_end = reuse_end;
  m.granule_bytes = kAllocatorGranule;
}

core::Result<BatchJob> scientific_job(const ConfigNode& n, BatchJob job) {
  TESSERA_TRY(n.check_keys({"name", "kind", "kernel", "size", "iterations", "submit", "command"}));
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode kernel_node, n.at("kernel"));
  TESSERA_ASSIGN_OR_RETURN(const std::string kernel_name, kernel_node.as_string());
  auto kernel = workload::find_rodinia(kernel_name);
  if (!kernel) return std::unexpected(kernel_node.error(kernel.error().message()));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t size,
                           positive_int_or(n, "size", kernel->default_size, kernel->max_size));
  TESSERA_ASSIGN_OR_RETURN(job.iterations, iterations(n));
  // Static arrays: the compiler analysis's estimate is the footprint itself, and the truth adds
  // nothing to it.
  const std::int64_t bytes = kernel->footprint_bytes(size) + context_bytes();
  job.memory.base_bytes = bytes;
  job.estimated_peak_bytes = bytes;
  job.description =
      fmt::format("{} {} = {}: {}", kernel->name, kernel->size_meaning, size, kernel->description);
  job.work.key = fmt::format("rodinia/{}/{}", kernel->name, size);
  job.work.build = [build = kernel->iteration, size](std::int64_t) { return build(size); };
  return job;
}

core::Result<Optimizer> parse_optimizer(const ConfigNode& n) {
  TESSERA_ASSIGN_OR_RETURN(const std::string text, n.as_string());
  if (text == "sgd") return Optimizer::kSgd;
  if (text == "momentum") return Optimizer::kSgdMomentum;
  if (text == "adam") return Optimizer::kAdam;
  return std::unexpected(
      n.error(fmt::format("unknown optimizer '{}'; known: sgd, momentum, adam", text)));
}

core::Result<BatchJob> training_job(const ConfigNode& n, BatchJob job, MemoryBreakdown& breakdown) {
  TESSERA_TRY(n.check_keys(
      {"name", "kind", "model", "batch", "optimizer", "iterations", "submit", "command"}));
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode model_node, n.at("model"));
  TESSERA_ASSIGN_OR_RETURN(const std::string model_name, model_node.as_string());
  auto model = workload::find_training_model(model_name);
  if (!model) return std::unexpected(model_node.error(model.error().message()));
  Optimizer optimizer = default_optimizer(*model);
  if (auto o = n.find("optimizer")) {
    TESSERA_ASSIGN_OR_RETURN(optimizer, parse_optimizer(*o));
  }
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t batch,
                           positive_int_or(n, "batch", model->default_batch, 65536));
  TESSERA_ASSIGN_OR_RETURN(job.iterations, iterations(n));
  const MemoryBreakdown est = estimate_training(*model, static_cast<int>(batch), optimizer);
  job.estimated_peak_bytes = est.total();
  breakdown = est;
  // The truth: everything but the optimizer state from iteration 0, the state from iteration 1
  // (lazy creation), or from iteration 0 when that is the job's only one, all through the
  // allocator.
  job.memory.base_bytes = est.total() - est.optimizer_state;
  if (est.optimizer_state > 0) {
    const std::int64_t first_held = std::min<std::int64_t>(1, job.iterations - 1);
    job.memory.steps = {{.iteration = first_held, .bytes = est.optimizer_state}};
  }
  allocator_slack(job.memory, kTrainingReuseStart, kTrainingReuseEnd);
  job.description = fmt::format("{} training, batch {}", model->name, batch);
  // Timing uses the model's own iteration (its optimizer kernels); the optimizer field changes
  // the memory only.
  job.work.key = fmt::format("train/{}/{}", model->name, batch);
  job.work.build = [build = model->iteration, b = static_cast<int>(batch)](std::int64_t) {
    return build(b, workload::Precision::kBf16);  // MIGM's jobs train in mixed precision
  };
  return job;
}

struct ContextStep {
  std::int64_t at = 0;
  std::int64_t tokens = 0;
};

core::Result<std::vector<ContextStep>> context_schedule(const ConfigNode& n,
                                                        std::int64_t iterations) {
  std::vector<ContextStep> out;
  auto list = n.find("context_schedule");
  if (!list) return out;
  TESSERA_ASSIGN_OR_RETURN(const auto items, list->items());
  if (items.size() > kMaxSteps) {
    return std::unexpected(list->error(fmt::format("at most {} entries", kMaxSteps)));
  }
  for (const ConfigNode& item : items) {
    TESSERA_TRY(item.check_keys({"at", "tokens"}));
    TESSERA_ASSIGN_OR_RETURN(const ConfigNode at_node, item.at("at"));
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t at, at_node.as_int());
    if (at < 0 || at >= iterations) {
      return std::unexpected(at_node.error(
          fmt::format("must be an iteration in [0, {}) of the job, got {}", iterations, at)));
    }
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t tokens, positive_int(item, "tokens", 1 << 24));
    if (!out.empty() && at < out.back().at) {
      return std::unexpected(at_node.error("entries must be in ascending order of 'at'"));
    }
    out.push_back({at, tokens});
  }
  return out;
}

core::Result<BatchJob> inference_job(const ConfigNode& n, BatchJob job,
                                     MemoryBreakdown& breakdown) {
  TESSERA_TRY(n.check_keys({"name", "kind", "model", "batch", "prompt", "output", "iterations",
                            "kv_growth", "kv_chunk", "context_schedule", "submit", "command"}));
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode model_node, n.at("model"));
  TESSERA_ASSIGN_OR_RETURN(const std::string model_name, model_node.as_string());
  auto found = workload::find_model(model_name);
  if (!found) return std::unexpected(model_node.error(found.error().message()));
  const workload::ModelConfig model = *found;
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t batch, positive_int_or(n, "batch", 1, 4096));
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t prompt, positive_int(n, "prompt", 1 << 24));
  // Decode steps: `output`, or `iterations`; both must agree when both are given.
  if (!n.has("output") && !n.has("iterations")) {
    return std::unexpected(
        n.error("an inference job needs 'output' (decode steps) or 'iterations'"));
  }
  std::int64_t steps = 0;
  if (n.has("output")) {
    TESSERA_ASSIGN_OR_RETURN(steps, positive_int(n, "output", kMaxIterations));
  }
  if (n.has("iterations")) {
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t it, iterations(n));
    if (steps != 0 && it != steps) {
      return std::unexpected(
          n.at("iterations")
              ->error(fmt::format(
                  "is {} but output is {}; decode steps are the iterations, give one of them", it,
                  steps)));
    }
    steps = it;
  }
  job.iterations = steps;
  TESSERA_ASSIGN_OR_RETURN(const std::string growth, n.string_or("kv_growth", "linear"));
  if (growth != "linear" && growth != "chunked") {
    return std::unexpected(
        n.at("kv_growth")
            ->error(fmt::format("unknown kv_growth '{}'; known: linear, chunked", growth)));
  }
  const bool chunked = growth == "chunked";
  if (!chunked && n.has("kv_chunk")) {
    return std::unexpected(n.at("kv_chunk")->error("kv_chunk needs kv_growth: chunked"));
  }
  TESSERA_ASSIGN_OR_RETURN(const std::int64_t chunk, positive_int_or(n, "kv_chunk", 1024, 1 << 24));
  TESSERA_ASSIGN_OR_RETURN(const std::vector<ContextStep> schedule, context_schedule(n, steps));

  // Requested bytes: the static estimate's fixed parts plus the KV cache of the tokens held at
  // iteration i (prompt + i, plus the scheduled extra context from its step on).
  const MemoryBreakdown at_prompt = estimate_inference(model, static_cast<int>(batch), prompt);
  const double per_token = model.kv_bytes_per_token() * static_cast<double>(batch);
  const std::int64_t fixed = at_prompt.total() - at_prompt.kv_cache;
  const auto kv_bytes = [&](std::int64_t tokens) {
    return static_cast<std::int64_t>(std::ceil(per_token * static_cast<double>(tokens)));
  };
  workload::MemoryTrajectory& m = job.memory;
  if (!chunked) {
    m.base_bytes = fixed + kv_bytes(prompt);
    m.per_iteration = per_token;
    for (const ContextStep& s : schedule) {
      m.steps.push_back({.iteration = s.at, .bytes = kv_bytes(s.tokens)});
    }
  } else {
    // A staircase: the cache holds whole chunks of kv_chunk tokens.
    std::size_t next_entry = 0;
    std::int64_t extra = 0;
    const auto held = [&](std::int64_t i) {  // called for i = 0, 1, 2, ... in order
      while (next_entry < schedule.size() && schedule[next_entry].at <= i) {
        extra += schedule[next_entry++].tokens;
      }
      const std::int64_t tokens = prompt + i + extra;
      return (tokens + chunk - 1) / chunk * chunk;
    };
    std::int64_t prev = held(0);
    m.base_bytes = fixed + kv_bytes(prev);
    for (std::int64_t i = 1; i < steps; ++i) {
      const std::int64_t now = held(i);
      if (now == prev) continue;
      if (m.steps.size() == kMaxSteps) {
        return std::unexpected(
            n.at("kv_chunk")
                ->error(
                    fmt::format("the cache would grow in more than {} steps; use a larger kv_chunk",
                                kMaxSteps)));
      }
      m.steps.push_back({.iteration = i, .bytes = kv_bytes(now) - kv_bytes(prev)});
      prev = now;
    }
  }
  allocator_slack(m, kInferenceReuseStart, kInferenceReuseEnd);
  // The scheduled growth is known in advance: the same steps, declared.
  if (!schedule.empty()) {
    for (const ContextStep& s : schedule) {
      const std::int64_t tokens = chunked ? (s.tokens + chunk - 1) / chunk * chunk : s.tokens;
      job.declared_steps.push_back({.iteration = s.at, .bytes = kv_bytes(tokens)});
    }
  }
  // What a scheduler knows up front without the predictor: the estimate at the prompt length.
  job.estimated_peak_bytes = at_prompt.total();
  breakdown = at_prompt;
  job.description = fmt::format("{} decoding {} tokens after a {}-token prompt, batch {}{}",
                                model.name, steps, prompt, batch,
                                chunked ? fmt::format(", KV cache in {}-token chunks", chunk) : "");
  // Timing: one decode step per iteration over contexts prompt + i (+ scheduled context). The
  // prefill at iteration 0 is not timed apart (one prompt pass is worth a few decode steps).
  std::string key = fmt::format("decode/{}/{}/{}", model.name, batch, prompt);
  for (const ContextStep& s : schedule) key += fmt::format("/+{}@{}", s.tokens, s.at);
  job.work.key = std::move(key);
  job.work.varies = true;
  job.work.build = [model, batch, prompt, schedule](std::int64_t i) {
    std::int64_t tokens = prompt + i;
    for (const ContextStep& s : schedule) {
      if (s.at <= i) tokens += s.tokens;
    }
    const auto ctx =
        static_cast<int>(std::min<std::int64_t>(tokens, std::numeric_limits<int>::max()));
    const std::vector<int> contexts(static_cast<std::size_t>(batch), ctx);
    return workload::decode_step(model, contexts);
  };
  return job;
}

core::Result<std::vector<MemoryStep>> memory_steps(const ConfigNode& list,
                                                   std::int64_t iterations) {
  std::vector<MemoryStep> out;
  TESSERA_ASSIGN_OR_RETURN(const auto items, list.items());
  if (items.size() > kMaxSteps) {
    return std::unexpected(list.error(fmt::format("at most {} steps", kMaxSteps)));
  }
  for (const ConfigNode& item : items) {
    TESSERA_TRY(item.check_keys({"at", "add"}));
    TESSERA_ASSIGN_OR_RETURN(const ConfigNode at_node, item.at("at"));
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t at, at_node.as_int());
    if (at < 0 || at >= iterations) {
      return std::unexpected(at_node.error(
          fmt::format("must be an iteration in [0, {}) of the job, got {}", iterations, at)));
    }
    if (!out.empty() && at < out.back().iteration) {
      return std::unexpected(at_node.error("steps must be in ascending order of 'at'"));
    }
    TESSERA_ASSIGN_OR_RETURN(const ConfigNode add_node, item.at("add"));
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t add, parse_size(add_node));
    out.push_back({.iteration = at, .bytes = add});
  }
  return out;
}

core::Result<double> fraction(const ConfigNode& n, bool zero_ok) {
  TESSERA_ASSIGN_OR_RETURN(const double v, n.as_double());
  if (!(zero_ok ? v >= 0 : v > 0) || !(v <= 1)) {
    return std::unexpected(
        n.error(fmt::format("must be in {}0, 1], got {}", zero_ok ? "[" : "(", v)));
  }
  return v;
}

core::Result<BatchJob> custom_job(const ConfigNode& n, BatchJob job) {
  TESSERA_TRY(n.check_keys({"name", "kind", "iterations", "iteration_time", "serial_fraction",
                            "memory", "estimate", "submit", "command"}));
  TESSERA_ASSIGN_OR_RETURN(job.iterations, iterations(n));
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode time_node, n.at("iteration_time"));
  TESSERA_ASSIGN_OR_RETURN(job.iteration_time_full, time_node.as_duration());
  if (job.iteration_time_full <= 0) {
    return std::unexpected(time_node.error("must be a positive duration"));
  }
  if (auto s = n.find("serial_fraction")) {
    TESSERA_ASSIGN_OR_RETURN(job.serial_fraction, fraction(*s, /*zero_ok=*/true));
  }
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode mem, n.at("memory"));
  TESSERA_TRY(mem.check_keys(
      {"base", "per_iteration", "per_iteration_squared", "steps", "declared", "granule", "reuse"}));
  workload::MemoryTrajectory& m = job.memory;
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode base, mem.at("base"));
  TESSERA_ASSIGN_OR_RETURN(m.base_bytes, parse_size(base));
  if (auto p = mem.find("per_iteration")) {
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t v, parse_size(*p));
    m.per_iteration = static_cast<double>(v);
  }
  if (auto p = mem.find("per_iteration_squared")) {
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t v, parse_size(*p));
    m.per_iteration_squared = static_cast<double>(v);
  }
  if (auto s = mem.find("steps")) {
    TESSERA_ASSIGN_OR_RETURN(m.steps, memory_steps(*s, job.iterations));
  }
  TESSERA_ASSIGN_OR_RETURN(const bool declared, mem.bool_or("declared", false));
  if (declared) job.declared_steps = m.steps;
  if (auto g = mem.find("granule")) {
    TESSERA_ASSIGN_OR_RETURN(m.granule_bytes, parse_size(*g));
  }
  if (auto r = mem.find("reuse")) {
    TESSERA_ASSIGN_OR_RETURN(const auto pair, r->items());
    if (pair.size() != 2) {
      return std::unexpected(r->error("expected [first, last]: two reuse ratios in (0, 1]"));
    }
    TESSERA_ASSIGN_OR_RETURN(m.reuse_start, fraction(pair[0], /*zero_ok=*/false));
    TESSERA_ASSIGN_OR_RETURN(m.reuse_end, fraction(pair[1], /*zero_ok=*/false));
  }
  if (auto e = n.find("estimate")) {
    TESSERA_ASSIGN_OR_RETURN(job.estimated_peak_bytes, parse_size(*e));
  }
  job.description = fmt::format("custom, {} per iteration on the whole GPU",
                                fmt::format("{:.3g} ms", core::to_millis(job.iteration_time_full)));
  return job;
}

// `breakdown` is set for the jobs whose estimate comes from a model (training, inference).
core::Result<workload::BatchJobPtr> parse_job(const ConfigNode& n,
                                              std::optional<MemoryBreakdown>& breakdown) {
  if (!n.is_map()) return std::unexpected(n.error("expected a job (a mapping with name and kind)"));
  BatchJob job;
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode name_node, n.at("name"));
  TESSERA_ASSIGN_OR_RETURN(job.name, name_node.as_string());
  if (job.name.empty()) return std::unexpected(name_node.error("a job needs a non-empty name"));
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode kind_node, n.at("kind"));
  TESSERA_ASSIGN_OR_RETURN(const std::string kind, kind_node.as_string());
  TESSERA_ASSIGN_OR_RETURN(job.submit_time, n.duration_or("submit", 0));
  if (job.submit_time < 0) {
    return std::unexpected(n.at("submit")->error("must not be negative"));
  }
  if (auto c = n.find("command")) {
    TESSERA_ASSIGN_OR_RETURN(const auto args, c->items());
    for (const ConfigNode& a : args) {
      TESSERA_ASSIGN_OR_RETURN(std::string arg, a.as_string());
      job.command.push_back(std::move(arg));
    }
    if (job.command.empty()) return std::unexpected(c->error("a command needs a program"));
  }
  core::Result<BatchJob> built = std::unexpected(kind_node.error(
      fmt::format("unknown job kind '{}'; known: scientific, training, inference, custom", kind)));
  if (kind == "scientific") {
    job.kind = JobKind::kScientific;
    built = scientific_job(n, std::move(job));
  } else if (kind == "training") {
    job.kind = JobKind::kTraining;
    built = training_job(n, std::move(job), breakdown.emplace());
  } else if (kind == "inference") {
    job.kind = JobKind::kInference;
    built = inference_job(n, std::move(job), breakdown.emplace());
  } else if (kind == "custom") {
    job.kind = JobKind::kCustom;
    built = custom_job(n, std::move(job));
  }
  if (!built) return std::unexpected(built.error());
  return std::make_shared<const BatchJob>(std::move(*built));
}

core::Result<JobsFile> parse_document(const ConfigNode& root) {
  if (!root.is_map()) return std::unexpected(root.error("expected a mapping with gpu and jobs"));
  TESSERA_TRY(root.check_keys({"gpu", "scheme", "seed", "jobs"}));
  JobsFile out;
  TESSERA_ASSIGN_OR_RETURN(out.gpu, root.string_or("gpu", out.gpu));
  if (auto g = hw::find_mig_geometry(out.gpu); !g) {
    return std::unexpected(root.at("gpu")->error(g.error().message()));
  }
  TESSERA_ASSIGN_OR_RETURN(out.scheme, root.string_or("scheme", out.scheme));
  if (auto s = parse_scheme(out.scheme); !s) {
    return std::unexpected(root.at("scheme")->error(s.error().message()));
  }
  if (auto s = root.find("seed")) {
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t seed, s->as_int());
    if (seed < 0) return std::unexpected(s->error("must be >= 0"));
    out.seed = static_cast<std::uint64_t>(seed);
  }
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode jobs, root.at("jobs"));
  TESSERA_ASSIGN_OR_RETURN(const auto items, jobs.items());
  if (items.empty()) return std::unexpected(jobs.error("a job file needs at least one job"));
  std::set<std::string> names;
  for (const ConfigNode& item : items) {
    std::optional<MemoryBreakdown> breakdown;
    TESSERA_ASSIGN_OR_RETURN(workload::BatchJobPtr job, parse_job(item, breakdown));
    if (!names.insert(job->name).second) {
      return std::unexpected(
          item.at("name")->error(fmt::format("duplicate job name '{}'", job->name)));
    }
    if (breakdown) out.breakdowns.emplace(job->name, *breakdown);
    out.jobs.push_back(std::move(job));
  }
  return out;
}

}  // namespace

core::Result<JobsFile> load_jobs_file(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode root, ConfigNode::load_file(path, "job file"));
  return parse_document(root);
}

core::Result<JobsFile> parse_jobs(std::string_view text, std::string source_name) {
  TESSERA_ASSIGN_OR_RETURN(const ConfigNode root, ConfigNode::parse(text, std::move(source_name)));
  return parse_document(root);
}

}  // namespace tessera::mig
