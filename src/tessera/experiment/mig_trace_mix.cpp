#include "tessera/experiment/mig_trace_mix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <string_view>
#include <vector>

#include "tessera/backends/sim/mig/slice_cost.hpp"
#include "tessera/core/internal/fccp.hpp"
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

core::Result<double> number(const char* cell, const std::string& path, std::size_t line) {
  const std::string_view text = cell == nullptr ? "" : cell;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::unexpected(malformed(path, line, fmt::format("'{}' is not a number", text)));
  }
  return v;
}

// Reads `path` with `read`, fccp's exceptions (a missing column, a short row) as errors.
template <typename Read>
auto read_csv(const std::string& path, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const std::exception& e) {
    return core::failf(core::Domain::kScenario, core::Code::kInvalidArgument, "{}: {}", path,
                       e.what());
  }
}

template <unsigned N>
using Reader = io::CSVReader<N, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>,
                             io::throw_on_overflow, io::empty_line_comment>;

// Philly runtimes above zero and at most kLongestSeconds, in seconds.
core::Result<std::vector<double>> philly_runtimes() {
  TESSERA_ASSIGN_OR_RETURN(const std::string path, data_file(kPhilly));
  return read_csv(path, [&]() -> core::Result<std::vector<double>> {
    Reader<1> in(path);
    in.read_header(io::ignore_extra_column, "runtime");
    std::vector<double> out;
    char* runtime = nullptr;
    while (in.read_row(runtime)) {
      TESSERA_ASSIGN_OR_RETURN(const double v, number(runtime, path, in.get_file_line()));
      if (v > 0 && v <= kLongestSeconds) out.push_back(v);
    }
    if (out.empty()) return std::unexpected(malformed(path, 1, "no runtime between 0 and 2 hours"));
    return out;
  });
}

// Creation times (s) of the single-GPU pods, ascending.
core::Result<std::vector<double>> openb_arrivals() {
  TESSERA_ASSIGN_OR_RETURN(const std::string path, data_file(kOpenb));
  return read_csv(path, [&]() -> core::Result<std::vector<double>> {
    Reader<2> in(path);
    in.read_header(io::ignore_extra_column, "num_gpu", "creation_time");
    std::vector<double> out;
    char* gpus = nullptr;
    char* created = nullptr;
    while (in.read_row(gpus, created)) {
      if (std::string_view(gpus) != "1") continue;
      TESSERA_ASSIGN_OR_RETURN(const double t, number(created, path, in.get_file_line()));
      out.push_back(t);
    }
    std::ranges::sort(out);
    return out;
  });
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
