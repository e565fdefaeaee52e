#include "tessera/mig/registry.hpp"

namespace tessera::mig {
namespace {

constexpr core::EnumTable<Scheme, 5> kSchemes(
    "scheme", core::Domain::kConfig,
    {{
        {Scheme::kA, "A",
         "MIGM scheme A: the queue sorted by memory need, started in groups of equal profile"},
        {Scheme::kB, "B",
         "MIGM scheme B: first come, first served; the head's slice made by fusion or fission on "
         "demand"},
        {Scheme::kSequential, "sequential",
         "MIGM's baseline: one job at a time on the largest profile"},
        {Scheme::kStatic, "static",
         "the best fully configured layout for the jobs, created once, never changed"},
        {Scheme::kTimeFit, "time-fit",
         "tessera's: each job on the slice where it is predicted to finish first, the layout "
         "that finishes the whole queue first, reconfigured when the gain outweighs the cost; "
         "jobs waiting past a bound go first"},
    }},
    core::NameCase::kIgnored);

}  // namespace

std::span<const core::EnumName<Scheme>> schemes() {
  return kSchemes.entries();
}
std::string_view to_string(Scheme s) {
  return kSchemes.to_string(s);
}
core::Result<Scheme> parse_scheme(std::string_view text) {
  return kSchemes.parse(text);
}
std::string scheme_names() {
  return kSchemes.names();
}
std::string schemes_listing() {
  return kSchemes.listing();
}

}  // namespace tessera::mig
