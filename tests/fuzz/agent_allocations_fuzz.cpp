// libFuzzer target for the node agent's POST /allocations body: arbitrary bytes are parsed as
// JSON, then as an allocation set (parse_allocations), and applied to an agent on an
// rtx4090-2s2n node. Nothing may crash or throw. A set that parses re-serialises to JSON that
// parses to the same set; a set the agent takes is what it reports back, and the
// NodeResourceTopology it then exports never shows more available than allocatable; a set it
// refuses changes nothing.
//
// Build (clang 19+: clang 14 cannot compile libstdc++'s std::expected):
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DTESSERA_BUILD_FUZZ=ON
//   cmake --build build-fuzz --target tessera_agent_allocations_fuzz
// Run for 60 s:
//   mkdir -p /tmp/allocations-corpus
//   build-fuzz/tests/fuzz/tessera_agent_allocations_fuzz -max_total_time=60 -max_len=4096 \
//       /tmp/allocations-corpus

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "fuzz_check.hpp"
#include "tessera/core/clock.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/k8s/node_agent.hpp"

namespace {

using tessera::fuzz::require;
using namespace tessera;

k8s::NodeAgent& agent() {
  static core::ManualClock clock;
  static k8s::NodeAgent* a = [] {
    k8s::AgentOptions o;
    o.node_name = "fuzz-node";
    auto created = k8s::NodeAgent::create(
        o, [] { return hw::preset("rtx4090-2s2n", "fuzz-host"); }, clock);
    require(created.has_value());
    return created->release();
  }();
  return *a;
}

std::int64_t quantity_value(const nlohmann::json& q) {
  // The export writes plain integers or binary suffixes Ki..Ei.
  const std::string s = q.get<std::string>();
  std::size_t end = 0;
  const long long n = std::stoll(s, &end);
  const std::string_view suffix(s.data() + end, s.size() - end);
  int shift = 0;
  for (const char* sfx : {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}) {
    shift += 10;
    if (suffix == sfx) return static_cast<std::int64_t>(n) << shift;
  }
  require(suffix.empty());
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const auto json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_discarded()) return 0;
  auto pods = k8s::parse_allocations(json);
  if (!pods) {
    require(!pods.error().message().empty());
    return 0;
  }
  const nlohmann::json again = k8s::allocations_json(*pods);
  auto reparsed = k8s::parse_allocations(nlohmann::json::parse(again.dump()));
  require(reparsed.has_value());
  require(k8s::allocations_json(*reparsed) == again);

  k8s::NodeAgent& a = agent();
  const nlohmann::json before = a.topology_json();
  auto outcome = a.set_allocations(std::move(*pods));
  if (!outcome) {
    require(a.topology_json() == before);
    return 0;
  }
  auto nrt = a.node_resource_topology();
  require(nrt.has_value());
  for (const auto& zone : nrt->at("zones")) {
    for (const auto& r : zone.at("resources")) {
      const std::int64_t available = quantity_value(r.at("available"));
      require(available >= 0 && available <= quantity_value(r.at("allocatable")));
    }
  }
  return 0;
}
