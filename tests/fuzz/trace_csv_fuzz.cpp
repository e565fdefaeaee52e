// libFuzzer target for the Azure-format trace reader: arbitrary bytes go to
// workload::parse_trace_csv under several TraceOptions, checked as trace_checks.hpp says.
//
// Build (clang 19+: clang 14 cannot compile libstdc++'s std::expected):
//   apt-get install clang-19 libclang-rt-19-dev
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DTESSERA_BUILD_FUZZ=ON
//   cmake --build build-fuzz --target tessera_trace_csv_fuzz
// Run for 60 s, seeded from the head of a real trace (copied to /tmp: data files from
// ../shared are never committed), keeping what it learns in a scratch corpus:
//   mkdir -p /tmp/trace-seed /tmp/trace-corpus
//   head -n 20 ../shared/data/llm_traces/azure_llm_2023/AzureLLMInferenceTrace_code.csv \
//       > /tmp/trace-seed/azure_code_head.csv
//   build-fuzz/tests/fuzz/tessera_trace_csv_fuzz -max_total_time=60 -max_len=4096 \
//       /tmp/trace-corpus /tmp/trace-seed
// A crash leaves crash-<hash> in the working directory; rerun it with the file as the argument.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "trace_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  return tessera::fuzz::check_trace_reader(text, "fuzz.csv", tessera::workload::parse_trace_csv);
}
