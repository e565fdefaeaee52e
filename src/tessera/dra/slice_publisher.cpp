#include "tessera/dra/slice_publisher.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tessera/core/try.hpp"

namespace tessera::dra {

namespace {

constexpr int kAttempts = 3;
const std::string kSlices = "/apis/resource.k8s.io/v1/resourceslices/";

core::Error api_error(std::string_view what, const k8s::ApiResponse& r) {
  return core::Error(core::Domain::kK8s, core::Code::kFailedPrecondition,
                     fmt::format("{}: the API server answered {}: {}", what, r.status, r.reason()));
}

}  // namespace

namespace {

// A slice's spec without the pool's generation: what must match for the API server's to stand.
nlohmann::json content(nlohmann::json spec) {
  if (spec.contains("pool") && spec["pool"].is_object()) spec["pool"].erase("generation");
  return spec;
}

}  // namespace

core::Result<bool> SlicePublisher::publish(const std::vector<SliceGpu>& gpus) {
  const std::vector<nlohmann::json> want = resource_slices(driver_, node_, 0, gpus);
  for (int attempt = 1;; ++attempt) {
    // The pool's slices as the API server has them: all equal to ours, or a new generation.
    bool same = true;
    std::int64_t newest = 0;
    for (const auto& slice : want) {
      const std::string name = slice["metadata"]["name"];
      if (!k8s::safe_path_segment(name)) {
        return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument,
                           "ResourceSlice name '{}' is not a Kubernetes name", name);
      }
      TESSERA_ASSIGN_OR_RETURN(const k8s::ApiResponse current, client_.get(kSlices + name));
      if (current.status == 404) {
        same = false;
        continue;
      }
      if (current.status != 200) {
        return std::unexpected(api_error(fmt::format("reading ResourceSlice {}", name), current));
      }
      const auto object = nlohmann::json::parse(current.body, nullptr, false);
      const auto spec = object.is_object() ? object.value("spec", nlohmann::json::object())
                                           : nlohmann::json::object();
      newest = std::max<std::int64_t>(
          newest, spec.value("pool", nlohmann::json::object()).value("generation", 0));
      same = same && content(spec) == content(slice["spec"]);
    }
    if (same) return false;
    bool conflict = false;
    for (auto slice : want) {
      slice["spec"]["pool"]["generation"] = newest + 1;
      const std::string name = slice["metadata"]["name"];
      TESSERA_ASSIGN_OR_RETURN(const k8s::ApiResponse written,
                               client_.apply(kSlices + name, slice, kFieldManager));
      if (written.status == 409 && attempt < kAttempts) {
        conflict = true;
        break;
      }
      if (written.status != 200 && written.status != 201) {
        return std::unexpected(api_error(fmt::format("writing ResourceSlice {}", name), written));
      }
    }
    if (!conflict) return true;
  }
}

}  // namespace tessera::dra
