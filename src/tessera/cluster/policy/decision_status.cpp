#include "tessera/cluster/policy/decision_status.hpp"

namespace tessera::cluster {

std::string_view to_string(DecisionStatus s) {
  switch (s) {
    case DecisionStatus::kChosen: return "chosen";
    case DecisionStatus::kInfeasible: return "infeasible";
    case DecisionStatus::kInvalid: return "invalid";
  }
  return "?";
}

}  // namespace tessera::cluster
