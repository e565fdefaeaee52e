#include "tessera/k8s/nrt_publisher.hpp"

#include <fmt/format.h>

#include <utility>

namespace tessera::k8s {

NrtPublisher::NrtPublisher(ApiServerClient client, core::Nanos period, const core::Clock& clock)
    : client_(std::move(client)), period_(period), clock_(clock) {}

NrtPublisher::Outcome NrtPublisher::maybe_publish(const nlohmann::json& nrt) {
  const core::Nanos now = clock_.now();
  const bool due = !tried_ || now - last_attempt_ >= period_;
  if (nrt == attempted_ && !due) return {};
  Outcome out;
  out.attempted = true;
  tried_ = true;
  last_attempt_ = now;
  attempted_ = nrt;
  const std::string name = nrt.value("/metadata/name"_json_pointer, std::string());
  if (!safe_path_segment(name)) {
    out.error = core::Error(core::Domain::kK8s, core::Code::kInvalidArgument,
                            fmt::format("NodeResourceTopology name '{}' is not a Kubernetes name; "
                                        "not published",
                                        name));
    return out;
  }
  const std::string path =
      fmt::format("/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/{}", name);
  auto res = client_.apply(path, nrt, kNrtFieldManager);
  if (!res) {
    out.error = res.error();
  } else if (res->status != 200 && res->status != 201) {
    out.error = core::Error(core::Domain::kK8s, core::Code::kFailedPrecondition,
                            fmt::format("publishing NodeResourceTopology {}: API server answered "
                                        "HTTP {}: {}",
                                        name, res->status, res->reason()));
  }
  return out;
}

}  // namespace tessera::k8s
