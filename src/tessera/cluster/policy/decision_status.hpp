#pragma once
// How a cluster policy's decision ended. Like Ray's SchedulingResult, it tells a request that
// cannot be met now (infeasible: the cluster may change, so asking again later can succeed) from
// one that was malformed (invalid: asking again never helps, the caller must fix it).

#include <cstdint>
#include <string_view>

namespace tessera::cluster {

enum class DecisionStatus : std::uint8_t {
  kChosen,      // a choice was made
  kInfeasible,  // the request is valid, but nothing in the cluster meets it now
  kInvalid,     // the request or the configuration is malformed: nothing was searched
};
std::string_view to_string(DecisionStatus s);  // "chosen", "infeasible", "invalid"

}  // namespace tessera::cluster
