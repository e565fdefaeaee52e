#include "tessera/k8s/pod_watcher.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::k8s {
namespace {

using nlohmann::json;

// Pods bound to a node: "spec.nodeName!=" URL-encoded.
constexpr std::string_view kBoundPods = "fieldSelector=spec.nodeName%21%3D";

// A continue token as a query value: it is base64 (letters, digits, '+', '/', '=').
std::string query_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
  }
  return out;
}

core::Error watch_error(std::string message) {
  return core::Error(core::Domain::kK8s, core::Code::kFailedPrecondition, std::move(message));
}

}  // namespace

PodWatcher::PodWatcher(ApiServerClient client, ExtenderService& service, PodWatchOptions options)
    : client_(std::move(client)), service_(service), options_(options) {}

core::Result<std::string> PodWatcher::list() {
  const std::int64_t mark = service_.list_mark();
  json items = json::array();
  std::string resource_version;
  std::string next;
  do {
    std::string path = fmt::format("/api/v1/pods?{}&limit={}", kBoundPods, options_.page_size);
    if (!next.empty()) path += "&continue=" + query_escape(next);
    TESSERA_ASSIGN_OR_RETURN(const ApiResponse res, client_.get(path));
    if (res.status != 200) {
      return std::unexpected(watch_error(
          fmt::format("listing pods: API server answered HTTP {}: {}", res.status, res.reason())));
    }
    json page = json::parse(res.body, nullptr, false);
    const auto meta = page.is_object() ? page.find("metadata") : page.end();
    if (!page.is_object() || !page.contains("items") || !page["items"].is_array() ||
        meta == page.end() || !meta->is_object()) {
      return std::unexpected(watch_error("listing pods: the answer is not a v1.PodList"));
    }
    const auto text = [&](const char* key) {
      const auto v = meta->find(key);
      return v != meta->end() && v->is_string() ? v->get<std::string>() : std::string();
    };
    if (resource_version.empty()) resource_version = text("resourceVersion");
    next = text("continue");
    for (json& pod : page["items"]) items.push_back(std::move(pod));
  } while (!next.empty());
  if (resource_version.empty()) {
    return std::unexpected(watch_error("listing pods: the list has no resourceVersion"));
  }
  service_.resync(items, mark);
  core::logger().info("pods listed: {} bound, at resourceVersion {}", items.size(),
                      resource_version);
  return resource_version;
}

core::Result<std::string> PodWatcher::watch(const std::string& resource_version,
                                            const std::function<bool()>& stop) {
  std::string version = resource_version;
  bool gone = false;
  std::string broken;
  const std::string path = fmt::format(
      "/api/v1/pods?{}&watch=true&allowWatchBookmarks=true&timeoutSeconds={}&resourceVersion={}",
      kBoundPods, options_.watch_timeout.count(), query_escape(resource_version));
  const auto handle = [&](std::string_view line) {
    if (line.empty()) return !stop();
    const json event = json::parse(line, nullptr, false);
    if (!event.is_object() || !event.value("object", json()).is_object()) {
      broken = fmt::format("a watch event is not JSON: {:.200}", line);
      return false;
    }
    const std::string type = event.value("type", "");
    const json& object = event["object"];
    if (type == "ERROR") {
      if (object.value("code", 0) == 410) {
        gone = true;
      } else {
        broken = fmt::format("the watch ended with an error: {}", object.value("message", ""));
      }
      return false;
    }
    if (type == "ADDED" || type == "MODIFIED") service_.observe_pod(object);
    if (type == "DELETED") service_.forget_pod(object);
    const std::string v =
        object.value("metadata", json::object()).value("resourceVersion", std::string());
    if (!v.empty()) version = v;
    return !stop();
  };
  const auto on_line = [&](std::string_view line) {
    try {
      return handle(line);
    } catch (const json::exception& e) {
      broken = fmt::format("a watch event the extender cannot read: {}", e.what());
      return false;
    }
  };
  TESSERA_ASSIGN_OR_RETURN(
      const int status,
      client_.stream(path, on_line, options_.watch_timeout + std::chrono::seconds(30), &cancel_));
  if (status == 410 || gone) return std::string();
  if (!broken.empty()) return std::unexpected(watch_error(broken));
  if (status != 200) {
    return std::unexpected(
        watch_error(fmt::format("watching pods: API server answered HTTP {}", status)));
  }
  return version;
}

void PodWatcher::run(const std::function<bool()>& stop_asked) {
  const auto stop = [&] { return cancel_.cancelled() || stop_asked(); };
  std::string version;
  auto backoff = options_.min_backoff;
  while (!stop()) {
    auto next = version.empty() ? list() : watch(version, stop);
    if (stop()) break;
    if (next) {
      if (!version.empty() && next->empty()) {
        core::logger().info("pod watch at resourceVersion {} is too old (410 Gone); listing again",
                            version);
      }
      version = *next;
      backoff = options_.min_backoff;
      continue;
    }
    core::logger().warn("{}; trying again in {} ms", next.error().message(), backoff.count());
    const auto until = std::chrono::steady_clock::now() + backoff;
    while (!stop() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

}  // namespace tessera::k8s
