#include "tessera/cluster/registry.hpp"

namespace tessera::cluster {
namespace {

constexpr core::EnumTable<PreemptionMethod, 3> kMethods(
    "preemption method", core::Domain::kCluster,
    {{
        {PreemptionMethod::kIncremental, "incremental",
         "FlexTopo's Incremental Minimal Preemption: the best S(C) of the smallest victim sets"},
        {PreemptionMethod::kExhaustive, "exhaustive",
         "every victim set up to max_victims; the best S(C), ties to fewer victims"},
        {PreemptionMethod::kDefaultK8s, "default-k8s",
         "kube-scheduler's DefaultPreemption, blind to topology"},
    }});

}  // namespace

std::span<const core::EnumName<PreemptionMethod>> preemption_methods() {
  return kMethods.entries();
}
std::string_view to_string(PreemptionMethod m) {
  return kMethods.to_string(m);
}
core::Result<PreemptionMethod> parse_preemption_method(std::string_view s) {
  return kMethods.parse(s);
}
std::string preemption_method_names() {
  return kMethods.names();
}
std::string preemption_methods_listing() {
  return kMethods.listing();
}

}  // namespace tessera::cluster
