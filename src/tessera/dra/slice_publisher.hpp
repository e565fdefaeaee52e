#pragma once
// Keeps the node's ResourceSlice on the API server equal to what the node has: read it, and
// when its devices differ from the node's (or it is missing), apply the new one with the pool's
// generation one higher, so schedulers drop the old view (server-side apply, forced, as
// tessera-dra-plugin). A conflict (409: the slice changed between the read and the write) is
// retried from the read.

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/dra/resource_slice.hpp"
#include "tessera/k8s/api_server_client.hpp"

namespace tessera::dra {

inline constexpr std::string_view kFieldManager = "tessera-dra-plugin";

class SlicePublisher {
 public:
  SlicePublisher(k8s::ApiServerClient client, std::string driver, std::string node)
      : client_(std::move(client)), driver_(std::move(driver)), node_(std::move(node)) {}

  // True when it wrote the slice, false when the API server already had it.
  core::Result<bool> publish(const std::vector<SliceGpu>& gpus);

 private:
  k8s::ApiServerClient client_;
  std::string driver_;
  std::string node_;
};

}  // namespace tessera::dra
