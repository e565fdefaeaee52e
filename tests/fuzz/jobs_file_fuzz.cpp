// libFuzzer target for the JOBS.yaml loader: arbitrary bytes go to mig::parse_jobs. Library code
// must return errors, never crash, throw or hang. A file that parses must be one the manager can
// take: a GPU with a MIG geometry, a known scheme, at least one uniquely named job, every job with
// at least one iteration, a non-negative submit time, something to time (kernels or a positive
// time per iteration), memory steps in ascending order inside the job, reuse ratios in (0, 1],
// and trajectories whose bytes are never negative. A file that does not parse must say so in a
// message that starts with the source name.
//
// Build (clang 19+: clang 14 cannot compile libstdc++'s std::expected):
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DTESSERA_BUILD_FUZZ=ON
//   cmake --build build-fuzz --target tessera_jobs_file_fuzz
// Run for 60 s from the example job files, keeping what it learns in a scratch corpus:
//   mkdir -p /tmp/jobs-corpus
//   build-fuzz/tests/fuzz/tessera_jobs_file_fuzz -max_total_time=60 -max_len=4096 \
//       /tmp/jobs-corpus examples/mig
// A crash leaves crash-<hash> in the working directory; rerun it with the file as the argument.

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "tessera/hw/mig_profiles.hpp"
#include "tessera/mig/registry.hpp"
#include "tessera/mig/runtime/jobs_file.hpp"
#include "tessera/mig/runtime/manager.hpp"

namespace {

using tessera::fuzz::require;
using tessera::workload::BatchJob;

const std::string kSource = "fuzz.yaml";

void check_job(const BatchJob& j) {
  require(!j.name.empty());
  require(j.iterations >= 1);
  require(j.submit_time >= 0);
  require(j.estimated_peak_bytes >= 0);
  require(static_cast<bool>(j.work.build) || j.iteration_time_full > 0);
  require(j.serial_fraction >= 0 && j.serial_fraction <= 1);
  const auto& m = j.memory;
  require(m.base_bytes >= 0 && m.granule_bytes >= 0);
  require(m.reuse_start > 0 && m.reuse_start <= 1 && m.reuse_end > 0 && m.reuse_end <= 1);
  std::int64_t last = -1;
  for (const auto& s : m.steps) {
    require(s.iteration >= last && s.iteration < j.iterations && s.bytes >= 0);
    last = s.iteration;
  }
  for (std::int64_t i : {std::int64_t{0}, j.iterations / 2, j.iterations - 1}) {
    require(m.requested_at(i, j.iterations) >= 0);
    require(m.reserved_at(i, j.iterations) >= m.requested_at(i, j.iterations));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto f = tessera::mig::parse_jobs(text, kSource);
  if (!f) {
    require(f.error().message().starts_with(kSource));
    return 0;
  }
  require(tessera::hw::find_mig_geometry(f->gpu).has_value());
  require(tessera::mig::parse_scheme(f->scheme).has_value());
  require(!f->jobs.empty());
  std::set<std::string> names;
  for (const auto& j : f->jobs) {
    require(j != nullptr);
    check_job(*j);
    require(names.insert(j->name).second);
  }
  return 0;
}
