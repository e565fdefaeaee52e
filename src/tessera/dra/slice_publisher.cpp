#include "tessera/dra/slice_publisher.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tessera/core/try.hpp"

namespace tessera::dra {

namespace {

constexpr int kAttempts = 3;

core::Error api_error(std::string_view what, const k8s::ApiResponse& r) {
  return core::Error(core::Domain::kK8s, core::Code::kFailedPrecondition,
                     fmt::format("{}: the API server answered {}: {}", what, r.status, r.reason()));
}

}  // namespace

core::Result<bool> SlicePublisher::publish(const std::vector<SliceGpu>& gpus) {
  const std::string name = slice_name(driver_, node_);
  const std::string path = "/apis/resource.k8s.io/v1/resourceslices/" + name;
  if (!k8s::safe_path_segment(name)) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                       "ResourceSlice name '{}' is not a Kubernetes name", name);
  }
  for (int attempt = 1;; ++attempt) {
    TESSERA_ASSIGN_OR_RETURN(const k8s::ApiResponse current, client_.get(path));
    std::int64_t generation = 1;
    if (current.status == 200) {
      const auto object = nlohmann::json::parse(current.body, nullptr, false);
      const auto& spec = object.is_object() ? object.value("spec", nlohmann::json::object())
                                            : nlohmann::json::object();
      const auto want = resource_slice(driver_, node_, 0, gpus)["spec"]["devices"];
      if (spec.value("devices", nlohmann::json()) == want && spec.value("nodeName", "") == node_) {
        return false;
      }
      generation = spec.value("pool", nlohmann::json::object()).value("generation", 0) + 1;
    } else if (current.status != 404) {
      return std::unexpected(api_error(fmt::format("reading ResourceSlice {}", name), current));
    }
    TESSERA_ASSIGN_OR_RETURN(
        const k8s::ApiResponse written,
        client_.apply(path, resource_slice(driver_, node_, generation, gpus), kFieldManager));
    if (written.status == 200 || written.status == 201) return true;
    if (written.status != 409 || attempt == kAttempts) {
      return std::unexpected(api_error(fmt::format("writing ResourceSlice {}", name), written));
    }
  }
}

}  // namespace tessera::dra
