#include "tessera/core/error.hpp"

namespace tessera::core {

std::string_view to_string(Domain d) {
  switch (d) {
    case Domain::kCore: return "core";
    case Domain::kConfig: return "config";
    case Domain::kHardware: return "hardware";
    case Domain::kWorkload: return "workload";
    case Domain::kDevice: return "device";
    case Domain::kSim: return "sim";
    case Domain::kGpu: return "gpu";
    case Domain::kScenario: return "scenario";
    case Domain::kIo: return "io";
    case Domain::kMig: return "mig";
    case Domain::kNvml: return "nvml";
    case Domain::kTopology: return "topology";
    case Domain::kCluster: return "cluster";
    case Domain::kK8s: return "k8s";
    case Domain::kCuda: return "cuda";
  }
  return "unknown";
}

std::string_view to_string(Code c) {
  switch (c) {
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kNotFound: return "not found";
    case Code::kParse: return "parse error";
    case Code::kUnsupported: return "unsupported";
    case Code::kResourceExhausted: return "resource exhausted";
    case Code::kFailedPrecondition: return "failed precondition";
    case Code::kInternal: return "internal error";
  }
  return "unknown";
}

}  // namespace tessera::core
