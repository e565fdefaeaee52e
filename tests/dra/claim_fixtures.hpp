#pragma once
// ResourceClaims as the API server returns them (resource.k8s.io/v1, Kubernetes 1.34): allocated
// by the scheduler from a node's pool of gpu.tessera.io devices, with consumed capacity (a share
// of one GPU) and configuration from the DeviceClass and the claim.

#include <nlohmann/json.hpp>
#include <string>

namespace tessera::test {

inline nlohmann::json allocated_claim(
    const std::string& uid = "6f1c9a2e-3b1d-4c8e-9f00-1a2b3c4d5e6f",
    const std::string& device = "gpu-0", const std::string& sm_percent = "50",
    const std::string& memory = "20Gi") {
  return nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "vllm-7d9f8-gpu-x2k4p", "namespace": "serving", "uid": "UID",
                 "resourceVersion": "4242"},
    "spec": {"devices": {
      "requests": [{"name": "gpu", "exactly": {"deviceClassName": "tessera-gpu-share",
                    "capacity": {"requests": {"smPercent": "50", "memory": "20Gi"}}}}],
      "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.tessera.io", "parameters": {
        "apiVersion": "gpu.tessera.io/v1alpha1", "kind": "GpuShareConfig",
        "class": "latency-critical", "priority": 10, "tpotSLO": "50ms", "ttftSLO": "1s"}}}]}},
    "status": {
      "allocation": {
        "devices": {
          "results": [{"request": "gpu", "driver": "gpu.tessera.io", "pool": "node-a",
                       "device": "DEVICE", "shareID": "3e5b0c1a-0000-4000-8000-000000000001",
                       "consumedCapacity": {"smPercent": "SMS", "memory": "MEMORY"}}],
          "config": [
            {"source": "FromClass", "requests": [], "opaque": {"driver": "gpu.tessera.io",
              "parameters": {"apiVersion": "gpu.tessera.io/v1alpha1", "kind": "GpuShareConfig",
                             "class": "best-effort", "priority": 1}}},
            {"source": "FromClaim", "requests": ["gpu"], "opaque": {"driver": "gpu.tessera.io",
              "parameters": {"apiVersion": "gpu.tessera.io/v1alpha1", "kind": "GpuShareConfig",
                             "class": "latency-critical", "priority": 10, "tpotSLO": "50ms",
                             "ttftSLO": "1s"}}}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
          {"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]}},
      "reservedFor": [{"resource": "pods", "name": "vllm-7d9f8", "uid": "a1b2"}]}
  })")
      .patch(nlohmann::json::parse(R"([
        {"op": "replace", "path": "/metadata/uid", "value": ")" +
                                   uid + R"("},
        {"op": "replace", "path": "/status/allocation/devices/results/0/device", "value": ")" +
                                   device + R"("},
        {"op": "replace", "path": "/status/allocation/devices/results/0/consumedCapacity/smPercent",
         "value": ")" + sm_percent +
                                   R"("},
        {"op": "replace", "path": "/status/allocation/devices/results/0/consumedCapacity/memory",
         "value": ")" + memory + R"("}])"));
}

}  // namespace tessera::test
