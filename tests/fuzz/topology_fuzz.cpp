// libFuzzer target for the topology readers: the first byte picks one (NCCL topology XML, tessera's
// topology JSON, hwloc XML through libhwloc), the rest is its input. Readers must return errors,
// never crash, throw or hang; an error names the input; whatever loads must survive a JSON round
// trip unchanged (to_json, topology_from_json, compare).
//
// Build (clang 19+, see config_fuzz.cpp):
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DTESSERA_BUILD_FUZZ=ON
//   cmake --build build-fuzz --target tessera_topology_fuzz
// Seed a corpus with the real files (prefix byte 0 NCCL, 1 JSON, 2 hwloc) and run for 60 s:
//   mkdir -p /tmp/topo-corpus
//   for f in ../shared/data/topology/nccl_azure/*.xml; do
//     (printf '\0'; cat $f) > /tmp/topo-corpus/nccl-$(basename $f); done
//   for f in ../shared/data/topology/hwloc/*.xml; do
//     (printf '\2'; cat $f) > /tmp/topo-corpus/hwloc-$(basename $f); done
//   build-fuzz/tests/fuzz/tessera_topology_fuzz -max_total_time=60 -max_len=65536 /tmp/topo-corpus
// hwloc's XML import may print libxml2's parse errors on stderr; that is not a failure.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "tessera/hw/topology/json.hpp"
#include "tessera/hw/topology/sources.hpp"

namespace {

using tessera::fuzz::require;
namespace hw = tessera::hw;

const std::string kOrigin = "fuzz-input";

void check(const tessera::core::Result<hw::HostTopology>& t) {
  if (!t) {
    require(t.error().message().starts_with(kOrigin));
    return;
  }
  auto back = hw::topology_from_json(hw::to_json(*t), kOrigin);
  require(back.has_value());
  require(*back == *t);
}

}  // namespace

// libhwloc 2.9 leaks the objects it had built when its XML import fails part way (reproduced in
// plain C against Debian's libhwloc.so.15: an <info> with a misspelt attribute deep in the tree
// leaks hwloc_alloc_setup_object's allocation). That is hwloc's, not tessera's; leaks whose stack
// is inside libhwloc are suppressed so the fuzzer keeps looking at the rest.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libhwloc.so\n";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  hw::TopologyOptions options;
  options.cores_per_group = 1 + data[0] / 3 % 8;  // the cut size is part of the input too
  options.nccl_numa_per_socket = data[0] / 24 % 3;
  switch (data[0] % 3) {
    case 0: check(hw::parse_nccl_xml(text, kOrigin, options)); break;
    case 1: {
      const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!j.is_discarded()) check(hw::topology_from_json(j, kOrigin));
      break;
    }
    default: check(hw::parse_hwloc_xml(text, kOrigin, options)); break;
  }
  return 0;
}
