// libFuzzer target for the scenario loader: arbitrary bytes go to scenario::parse_scenario.
// Library code must return errors, never crash, throw or hang. A scenario that parses must be one
// the runner can take: a GPU, at least one uniquely named tenant, a known set of sharing modes
// with no repeats, a positive duration, SM shares in [0, 1] that add up to at most 1, and
// arrival and mode options inside the ranges the loader documents. A scenario that does not
// parse must say so in a message that starts with the source name.
//
// Build (clang 19+: clang 14 cannot compile libstdc++'s std::expected):
//   apt-get install clang-19 libclang-rt-19-dev
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DTESSERA_BUILD_FUZZ=ON
//   cmake --build build-fuzz --target tessera_scenario_fuzz
// Run for 60 s from the example scenarios, keeping what it learns in a scratch corpus:
//   mkdir -p /tmp/scenario-corpus
//   build-fuzz/tests/fuzz/tessera_scenario_fuzz -max_total_time=60 -max_len=4096 \
//       /tmp/scenario-corpus examples
// A crash leaves crash-<hash> in the working directory; rerun it with the file as the argument.

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "tessera/gpu/modes/mps/mps_options.hpp"
#include "tessera/gpu/modes/time_slicing/time_slicing_options.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/scenario/scenario.hpp"

namespace {

using tessera::fuzz::require;

using tessera::scenario::ArrivalSpec;
using tessera::scenario::Scenario;
using tessera::scenario::TenantSpec;

const std::string kSource = "fuzz.yaml";

void check_range(const tessera::workload::LengthRange& r) {
  require(1 <= r.min && r.min <= r.max);
}

void check_tenant(const TenantSpec& t) {
  require(!t.name.empty());
  require(t.sm_share >= 0 && t.sm_share <= 1);
  if (t.kind == TenantSpec::Kind::kTraining) {
    require(t.training.name == t.name && t.training.batch >= 1);
    return;
  }
  require(t.inference.name == t.name);
  require(t.inference.max_num_seqs >= 1 && t.inference.max_batched_tokens >= 1);
  const ArrivalSpec& a = t.arrivals;
  if (a.kind == ArrivalSpec::Kind::kTrace) {
    require(!a.trace_path.empty() && a.trace.time_scale > 0);
    return;
  }
  require(a.synthetic.rate_per_s > 0 && a.synthetic.cv > 0);
  check_range(a.synthetic.input_tokens);
  check_range(a.synthetic.output_tokens);
}

void check_scenario(const Scenario& s) {
  require(s.source == kSource);
  require(s.duration > 0);
  require(!s.modes.empty());
  std::set<std::string> modes;
  for (const std::string& m : s.modes) {
    require(tessera::gpu::is_sharing_mode(m));
    require(modes.insert(m).second);
  }
  require(s.mode_options.of<tessera::gpu::TimeSlicingOptions>("time-slicing").time_slice > 0);
  const double pct = s.mode_options.of<tessera::gpu::MpsOptions>("mps").active_thread_percentage;
  require(pct > 0 && pct <= 100);
  require(!s.tenants.empty());
  std::set<std::string> names;
  double share = 0;
  for (const TenantSpec& t : s.tenants) {
    check_tenant(t);
    require(names.insert(t.name).second);
    share += t.sm_share;
  }
  require(share <= 1.0 + 1e-9);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto s = tessera::scenario::parse_scenario(text, kSource, "/fuzz/scenarios");
  if (!s) {
    require(s.error().message().starts_with(kSource));
    return 0;
  }
  check_scenario(*s);
  return 0;
}
