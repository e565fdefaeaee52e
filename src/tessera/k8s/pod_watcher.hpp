#pragma once
// The API server's pods, for the extender's state (ExtenderService::observe_pod, forget_pod,
// resync): a list of the pods bound to a node (fieldSelector spec.nodeName!=, in pages), then a
// watch from the list's resourceVersion with bookmarks, again and again as each watch ends. A
// 410 Gone (the version is too old to watch from) lists again; a failure waits, from
// min_backoff doubling to max_backoff, before the next try. client-go's reflector does the same.

#include <chrono>
#include <functional>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/k8s/api_server_client.hpp"
#include "tessera/k8s/extender_service.hpp"

namespace tessera::k8s {

struct PodWatchOptions {
  // timeoutSeconds of each watch: the API server ends it then, and the next one starts.
  std::chrono::seconds watch_timeout{300};
  std::chrono::milliseconds min_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
  int page_size = 500;
};

class PodWatcher {
 public:
  PodWatcher(ApiServerClient client, ExtenderService& service, PodWatchOptions options = {});

  // Lists and watches until `stop()` returns true or cancel() is called. stop() is asked between
  // events and between tries; cancel() also cuts a watch that waits for its next event.
  void run(const std::function<bool()>& stop);

  // One full list, given to the service (resync). Returns the list's resourceVersion.
  core::Result<std::string> list();
  // One watch from `resource_version` until the API server ends it or `stop()`: each event goes
  // to the service. Returns the version to watch from next, or "" when the list must be
  // redone (410 Gone).
  core::Result<std::string> watch(const std::string& resource_version,
                                  const std::function<bool()>& stop);
  // Ends run() from another thread now, even mid-watch.
  void cancel() { cancel_.cancel(); }

 private:
  ApiServerClient client_;
  ExtenderService& service_;
  PodWatchOptions options_;
  StreamCancel cancel_;
};

}  // namespace tessera::k8s
