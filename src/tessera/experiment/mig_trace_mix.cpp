#include "tessera/experiment/mig_trace_mix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <string_view>
#include <vector>

#include "tessera/backends/sim/mig/slice_cost.hpp"
#include "tessera/core/random.hpp"
#include "tessera/core/try.hpp"
#include "tessera/experiment/data_dir.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/mig/runtime/jobs_file.hpp"

namespace tessera::experiment {
namespace {

constexpr std::string_view kPhilly = "cluster_traces/philly_derived/philly_runtime.csv";
constexpr std::string_view kOpenb =
    "cluster_traces/alibaba_gpu_v2023/csv/openb_pod_list_default.csv";
constexpr double kLongestSeconds = 2 * 3600.0;

core::Error malformed(const std::string& path, std::size_t line, std::string_view what) {
  return core::Error(core::Domain::kScenario, core::Code::kInvalidArgument,
                     fmt::format("{}:{}: {}", path, line, what));
}

// A line without the carriage return of a file written on Windows.
std::string_view trimmed(const std::string& line) {
  std::string_view v = line;
  if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
  return v;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  for (std::size_t at = 0;;) {
    const std::size_t comma = line.find(',', at);
    out.push_back(line.substr(at, comma == std::string_view::npos ? comma : comma - at));
    if (comma == std::string_view::npos) return out;
    at = comma + 1;
  }
}

core::Result<double> number(std::string_view text, const std::string& path, std::size_t line) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::unexpected(malformed(path, line, fmt::format("'{}' is not a number", text)));
  }
  return v;
}

// Philly runtimes above zero and at most kLongestSeconds, in seconds.
core::Result<std::vector<double>> philly_runtimes() {
  TESSERA_ASSIGN_OR_RETURN(const std::string path, data_file(kPhilly));
  std::ifstream in(path);
  std::string line;
  std::vector<double> out;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (n == 1) {
      if (trimmed(line) != "runtime")
        return std::unexpected(malformed(path, n, "expected the header 'runtime'"));
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(const double v, number(trimmed(line), path, n));
    if (v > 0 && v <= kLongestSeconds) out.push_back(v);
  }
  if (out.empty()) return std::unexpected(malformed(path, 1, "no runtime between 0 and 2 hours"));
  return out;
}

// Creation times (s) of the single-GPU pods, ascending.
core::Result<std::vector<double>> openb_arrivals() {
  TESSERA_ASSIGN_OR_RETURN(const std::string path, data_file(kOpenb));
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return std::unexpected(malformed(path, 1, "empty file"));
  const std::string header_line = line;
  const auto header = split(trimmed(header_line));
  auto column = [&](std::string_view name) -> core::Result<std::size_t> {
    const auto it = std::ranges::find(header, name);
    if (it == header.end()) {
      return std::unexpected(malformed(path, 1, fmt::format("no column '{}'", name)));
    }
    return static_cast<std::size_t>(it - header.begin());
  };
  TESSERA_ASSIGN_OR_RETURN(const std::size_t gpus, column("num_gpu"));
  TESSERA_ASSIGN_OR_RETURN(const std::size_t created, column("creation_time"));
  std::vector<double> out;
  for (std::size_t n = 2; std::getline(in, line); ++n) {
    const auto fields = split(trimmed(line));
    if (fields.size() != header.size()) {
      return std::unexpected(malformed(
          path, n, fmt::format("{} fields; the header has {}", fields.size(), header.size())));
    }
    if (fields[gpus] != "1") continue;
    TESSERA_ASSIGN_OR_RETURN(const double t, number(fields[created], path, n));
    out.push_back(t);
  }
  std::ranges::sort(out);
  return out;
}

struct Choice {
  std::string_view model;
  int batch;
};
constexpr std::array<Choice, 6> kJobs{{{"resnet-50", 32},
                                       {"resnet-50", 64},
                                       {"resnet-50", 128},
                                       {"bert-base", 8},
                                       {"bert-base", 16},
                                       {"bert-base", 32}}};

std::string job_line(int i, const Choice& c, std::int64_t iterations, double submit_s) {
  return fmt::format(
      "  - {{name: job-{:02}, kind: training, model: {}, batch: {}, iterations: {}, submit: "
      "{:.0f}s}}\n",
      i, c.model, c.batch, iterations, submit_s);
}

}  // namespace

core::Result<std::string> trace_mix_text(const TraceMixOptions& o) {
  TESSERA_ASSIGN_OR_RETURN(const std::vector<double> runtimes, philly_runtimes());
  TESSERA_ASSIGN_OR_RETURN(const std::vector<double> arrivals, openb_arrivals());
  if (o.jobs < 1 || static_cast<std::size_t>(o.jobs) > arrivals.size()) {
    return core::failf(core::Domain::kScenario, core::Code::kInvalidArgument,
                       "a trace mix needs 1 to {} jobs; asked for {}", arrivals.size(), o.jobs);
  }
  TESSERA_ASSIGN_OR_RETURN(const hw::GpuSpec spec, hw::find_gpu(o.gpu));
  core::RandomStream random(o.seed);
  const std::size_t first = random.below(arrivals.size() - static_cast<std::size_t>(o.jobs) + 1);
  std::vector<Choice> kinds;
  std::vector<double> durations;
  for (int i = 0; i < o.jobs; ++i) {
    kinds.push_back(kJobs[random.below(kJobs.size())]);
    durations.push_back(runtimes[random.below(runtimes.size())]);
  }

  // Each job's time per iteration on the whole GPU, from a one-iteration draft of the mix.
  std::string draft = fmt::format("gpu: {}\njobs:\n", o.gpu);
  for (int i = 0; i < o.jobs; ++i) draft += job_line(i, kinds[static_cast<std::size_t>(i)], 1, 0);
  TESSERA_ASSIGN_OR_RETURN(const mig::JobsFile parsed, mig::parse_jobs(draft, "trace mix"));
  sim::SliceCostModel whole(spec, sim::whole_gpu_geometry(spec));
  const hw::MigProfile full = sim::whole_gpu_geometry(spec).profiles.front();

  std::string out = fmt::format(
      "# A mix drawn from public traces (seed {}): durations from {} (at most 2 h), arrivals from\n"
      "# the single-GPU pods {} to {} of {}.\n"
      "gpu: {}\nscheme: time-fit\nseed: {}\njobs:\n",
      o.seed, kPhilly, first, first + static_cast<std::size_t>(o.jobs) - 1, kOpenb, o.gpu, o.seed);
  for (int i = 0; i < o.jobs; ++i) {
    const auto k = static_cast<std::size_t>(i);
    TESSERA_ASSIGN_OR_RETURN(const sim::IterationCost cost,
                             whole.iteration(*parsed.jobs[k], 0, full));
    const auto iterations = std::max<std::int64_t>(
        1, std::llround(durations[k] / core::to_seconds(std::max<core::Nanos>(1, cost.time))));
    out += job_line(i, kinds[k], iterations, arrivals[first + k] - arrivals[first]);
  }
  return out;
}

}  // namespace tessera::experiment
