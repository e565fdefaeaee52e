#pragma once
// Keeps the node's ResourceSlices on the API server equal to what the node has: read them, and
// when any differs from the node's (or is missing), apply them all at the pool's generation one
// above the highest read, so schedulers drop the old view (server-side apply, forced, as
// tessera-dra-plugin). A conflict (409: a slice changed between the read and the write) is
// retried from the read. Slices of an older, larger pool are left to the generation: consumers
// use only the pool's newest.

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

  // True when it wrote the slices, false when the API server already had them.
  core::Result<bool> publish(const std::vector<SliceGpu>& gpus);

 private:
  k8s::ApiServerClient client_;
  std::string driver_;
  std::string node_;
};

}  // namespace tessera::dra
