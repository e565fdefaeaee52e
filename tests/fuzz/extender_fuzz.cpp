// libFuzzer target for the extender's request parsing, all four verbs: arbitrary bytes go to
// ExtenderService's filter, prioritize, preempt and bind handlers (the JSON parse, the extender/v1
// types, the v1.Pod translation with its quantities) on a two-node cluster, as the server would
// pass a request body. The handlers must answer, never crash, throw or hang: 200 with a JSON
// body, or 400 with a JSON {"error": reason} that is not empty. Bodies that parse are also
// re-serialised and parsed again, which must give the same value. The same bytes are also a pod
// event from the API server (observe_pod, forget_pod, resync on a cluster of their own) and a
// tessera.io/placement annotation, which must parse or be refused, and round-trip when they
// parse.
//
// Build (clang 19+: clang 14 cannot compile libstdc++'s std::expected):
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DTESSERA_BUILD_FUZZ=ON
//   cmake --build build-fuzz --target tessera_extender_fuzz
// Run for 60 s from the golden bodies and kube-scheduler's wire examples:
//   mkdir -p /tmp/extender-corpus
//   build-fuzz/tests/fuzz/tessera_extender_fuzz -max_total_time=60 -max_len=8192 \
//       /tmp/extender-corpus tests/k8s/golden ../shared/data/k8s/extender/wire_examples

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "fuzz_check.hpp"
#include "tessera/core/log.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/k8s/extender_service.hpp"
#include "tessera/k8s/placement_annotation.hpp"

namespace {

using tessera::fuzz::require;
using namespace tessera;

k8s::ExtenderService* make_service() {
  (void)core::set_log_level("off");
  auto* svc =
      new k8s::ExtenderService(k8s::ExtenderConfig{}, std::make_shared<k8s::RecordOnlyBinder>());
  for (const char* n : {"node1", "node2"}) {
    auto t = hw::preset("rtx4090-2s2n", n);
    require(t.has_value());
    require(
        svc->put_topology(n, std::make_shared<const hw::HostTopology>(std::move(*t))).has_value());
  }
  return svc;
}

// The pod events' cluster, apart: what they bind must not change what the verbs see.
k8s::ExtenderService& events_service() {
  static k8s::ExtenderService* s = make_service();
  return *s;
}

k8s::ExtenderService& service() {
  static k8s::ExtenderService* s = make_service();
  return *s;
}

void check(const k8s::HttpResponse& r) {
  const auto j = nlohmann::json::parse(r.body, nullptr, false);
  require(!j.is_discarded());
  if (r.status == 200) return;
  require(r.status == 400);
  require(j.is_object() && j.contains("error") && j["error"].is_string() &&
          !j["error"].get<std::string>().empty());
}

template <typename Parse>
void round_trip(const nlohmann::json& j, Parse parse) {
  auto a = parse(j);
  if (!a) return;
  const auto once = k8s::to_json(*a);
  auto b = parse(once);
  require(b.has_value());
  require(k8s::to_json(*b) == once);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto& s = service();
  check(s.handle_filter(body));
  check(s.handle_prioritize(body));
  check(s.handle_preempt(body));
  check(s.handle_bind(body));
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded()) {
    round_trip(j, k8s::parse_extender_args);
    round_trip(j, k8s::parse_preemption_args);
    round_trip(j, k8s::parse_binding_args);
    round_trip(j, k8s::parse_filter_result);
    round_trip(j, k8s::parse_host_priority_list);
    auto& events = events_service();
    events.observe_pod(j);
    events.forget_pod(j);
    events.resync(nlohmann::json::array({j}), events.list_mark());
  }
  if (auto a = k8s::parse_placement_annotation(body)) {
    const std::string once = k8s::placement_annotation(*a);
    auto b = k8s::parse_placement_annotation(once);
    require(b.has_value());
    require(k8s::placement_annotation(*b) == once);
  }
  return 0;
}
