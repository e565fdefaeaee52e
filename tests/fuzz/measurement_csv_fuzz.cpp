// libFuzzer target for the measurement schema tessera validate reads from a user
// (docs/validate.md): arbitrary bytes go to validation::parse_measurement_csv, and the first few
// rows that parse are rebuilt and timed by the predictor. Library code must return errors, never
// crash, throw or hang. A parse error starts with the source name; a parsed row names its line, a
// catalog GPU and a finite positive time; a simulated time is finite and >= 0.
//
// Build (clang 19+: clang 14 cannot compile libstdc++'s std::expected):
//   apt-get install clang-19 libclang-rt-19-dev libfccp-dev
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DTESSERA_BUILD_FUZZ=ON
//   cmake --build build-fuzz --target tessera_measurement_csv_fuzz
// Run for 60 s from the committed seeds, keeping what it learns in a scratch corpus:
//   mkdir -p /tmp/measurement-corpus
//   build-fuzz/tests/fuzz/tessera_measurement_csv_fuzz -max_total_time=60 -max_len=4096 \
//       /tmp/measurement-corpus tests/fuzz/corpus/measurement_csv tests/cli/validate
// A crash leaves crash-<hash> in the working directory; rerun it with the file as the argument.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/validation/measurement_csv.hpp"
#include "tessera/validation/predict.hpp"

namespace {

using tessera::fuzz::require;

const std::string kSource = "fuzz.csv";
// Rows timed per input: enough to reach every kind, few enough to keep the fuzzer fast.
constexpr std::size_t kTimedRows = 4;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace v = tessera::validation;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto set = v::parse_measurement_csv(text, kSource);
  if (!set) {
    require(set.error().message().starts_with(kSource));
    return 0;
  }
  require(set->skipped.empty());
  v::Predictor predictor;
  for (std::size_t i = 0; i < set->rows.size(); ++i) {
    const v::Measurement& m = set->rows[i];
    require(m.source.starts_with(kSource + ":"));
    require(std::isfinite(m.measured_ns) && m.measured_ns > 0);
    require(tessera::hw::find_gpu(m.gpu).has_value());
    if (i >= kTimedRows) continue;
    const auto ns = predictor.simulate_ns(m);
    if (ns) require(std::isfinite(*ns) && *ns >= 0);
  }
  return 0;
}
