#pragma once
// A Kubernetes v1.Pod (the JSON kube-scheduler sends) as the cluster level's cluster::Pod.
//
//   name      "namespace/name" (namespace "default" when the object has none)
//   uid       metadata.uid
//   priority  spec.priority (set by the API server from the PriorityClass); 0 when absent
//   request   per resource, Kubernetes' effective request: the larger of the sum over
//             spec.containers and the largest single spec.initContainers entry (init containers
//             run one at a time, before the others). A container's request is
//             resources.requests, else resources.limits (the API server defaults a missing
//             request to the limit). Resources: "nvidia.com/gpu" (whole GPUs), "cpu" (summed in
//             millicores, then rounded up to cores: 500m + 500m -> 1, 8 + 500m -> 9), "memory"
//             (bytes, each container's rounded up).
//   qos       annotation tessera.io/qos: guaranteed | best-effort; else Kubernetes' own class:
//             status.qosClass "Guaranteed" -> guaranteed, any other class -> best-effort; when
//             the status has none, computed as Kubernetes does (every container has cpu and
//             memory limits, and requests equal to them -> Guaranteed).
//   topology  annotation tessera.io/topology: numa | socket | none; none when absent
//
// Restartable init containers (sidecars) and pod overhead are not counted (ASSUMPTION: GPU pods
// under this extender do not use them; their requests would be missed, not double-counted).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "tessera/cluster/state/pod.hpp"
#include "tessera/core/error.hpp"

namespace tessera::k8s {

inline constexpr std::string_view kQosAnnotation = "tessera.io/qos";
inline constexpr std::string_view kTopologyAnnotation = "tessera.io/topology";
inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";

// 128 bits hold 38 significant digits, enough for any quantity a pod spec carries exactly.
__extension__ typedef unsigned __int128 QuantityMantissa;

// A Kubernetes resource.Quantity, exactly: value = mantissa * 10^exp10 * 2^exp2.
struct Quantity {
  bool negative = false;
  QuantityMantissa mantissa = 0;
  int exp10 = 0;
  int exp2 = 0;
};

// Kubernetes' quantity grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go):
//   <sign><digits>[.<digits>]<suffix>, suffix one of the binary SI Ki Mi Gi Ti Pi Ei, the decimal
//   SI n u m "" k M G T P E, or a decimal exponent e<int> / E<int>.
// Fails naming the text and what is wrong ("1.5Gb": unknown suffix "Gb").
core::Result<Quantity> parse_quantity(std::string_view text);
// The value rounded up to an integer, as Quantity.Value() does; fails when it does not fit int64.
core::Result<std::int64_t> quantity_ceil(const Quantity& q);
// Whether the value is a whole number.
bool quantity_is_integer(const Quantity& q);

// Fails (Domain::kK8s, kInvalidArgument or kParse) naming the field: "spec.containers[1]
// .resources.requests.memory: ...".
core::Result<cluster::Pod> translate_pod(const nlohmann::json& pod);

}  // namespace tessera::k8s
