// libFuzzer target for what the DRA driver reads: arbitrary bytes, when they are JSON, are read as
// a ResourceClaim the API server returned (read_allocation, for the claim named in its own
// metadata and a fixed one, on pool node-a) and as a CDI spec (cdi_spec_from_json). Nothing may
// crash or throw; a claim read has at least one share, each on a GPU index >= 0 with an SM share in
// (0, 1] and a priority in [-1000, 1000]; a spec read validates and reads back to itself.
//
// Build (clang 19+):
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DTESSERA_BUILD_FUZZ=ON
//   cmake --build build-fuzz --target tessera_dra_claim_fuzz
// Run for 60 s:
//   mkdir -p /tmp/dra-corpus
//   build-fuzz/tests/fuzz/tessera_dra_claim_fuzz -max_total_time=60 -max_len=8192 \
//       /tmp/dra-corpus tests/fuzz/corpus/dra_claim

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz_check.hpp"
#include "tessera/dra/cdi_spec.hpp"
#include "tessera/dra/claim_allocation.hpp"

namespace {

using tessera::fuzz::require;
using namespace tessera;

void check_claim(const nlohmann::json& j, const dra::ClaimRef& ref) {
  const auto a = dra::read_allocation(j, ref, "gpu.tessera.io", "node-a");
  if (!a) return;
  require(!a->shares.empty());
  for (const auto& s : a->shares) {
    require(s.gpu >= 0);
    require(s.settings.sm_share > 0 && s.settings.sm_share <= 1);
    require(s.settings.priority >= -1000 && s.settings.priority <= 1000);
    require(s.settings.tpot_slo >= 0 && s.settings.ttft_slo >= 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return 0;
  dra::ClaimRef ref{
      .ns = "serving", .name = "claim", .uid = "6f1c9a2e-3b1d-4c8e-9f00-1a2b3c4d5e6f"};
  check_claim(j, ref);
  if (j.is_object() && j.contains("metadata") && j["metadata"].is_object() &&
      j["metadata"].contains("uid") && j["metadata"]["uid"].is_string()) {
    ref.uid = j["metadata"]["uid"].get<std::string>();
    check_claim(j, ref);
  }
  const auto spec = dra::cdi_spec_from_json(j);
  if (spec) {
    require(dra::validate(*spec).has_value());
    const auto again = dra::cdi_spec_from_json(dra::to_json(*spec));
    require(again.has_value() && dra::to_json(*again) == dra::to_json(*spec));
  }
  return 0;
}
