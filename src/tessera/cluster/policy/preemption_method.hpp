#pragma once
// The victim searches the cluster level chooses from (preemption.hpp says what each does). Their
// names, summaries and parsing are in cluster/registry.hpp, the one list of them.

#include <cstdint>

namespace tessera::cluster {

enum class PreemptionMethod : std::uint8_t { kIncremental, kExhaustive, kDefaultK8s };

}  // namespace tessera::cluster
