#include "tessera/k8s/agent_http.hpp"

#include <fmt/format.h>

#include <memory>

namespace tessera::k8s {
namespace {

HttpResponse nrt_response(const NodeAgent& agent, bool yaml) {
  auto nrt = agent.node_resource_topology();
  if (!nrt) return json_error(500, nrt.error().message());
  if (!yaml) return json_response(*nrt);
  HttpResponse r;
  r.body = to_yaml(*nrt);
  r.content_type = "application/yaml";
  return r;
}

bool wants_yaml(const HttpRequest& req) {
  if (const std::string format = req.param("format"); !format.empty()) return format == "yaml";
  const std::string accept = req.header("Accept");
  return accept.find("application/yaml") != std::string::npos ||
         accept.find("application/x-yaml") != std::string::npos ||
         accept.find("text/yaml") != std::string::npos;
}

}  // namespace

void add_agent_routes(HttpServer& server, NodeAgent& agent, std::function<void()> on_change) {
  server.get("/healthz", [&agent](const HttpRequest&) { return json_response(agent.health()); });
  server.get("/topology",
             [&agent](const HttpRequest&) { return json_response(agent.topology_json()); });
  server.get("/noderesourcetopology", [&agent](const HttpRequest& req) {
    const std::string format = req.param("format");
    if (!format.empty() && format != "yaml" && format != "json") {
      return json_error(400, fmt::format("format '{}': expected yaml or json", format));
    }
    return nrt_response(agent, wants_yaml(req));
  });
  server.get("/noderesourcetopology\\.yaml",
             [&agent](const HttpRequest&) { return nrt_response(agent, true); });
  server.get("/allocations", [&agent](const HttpRequest&) {
    nlohmann::json body = allocations_json(agent.allocations());
    body["generation"] = agent.generation();
    return json_response(body);
  });
  server.post("/allocations", [&agent, on_change = std::move(on_change)](const HttpRequest& req) {
    const auto json = nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) {
      return json_error(400, "POST /allocations: the body is not JSON; send {\"pods\": [...]}");
    }
    auto pods = parse_allocations(json);
    if (!pods) return json_error(400, fmt::format("POST /allocations: {}", pods.error().message()));
    const std::size_t count = pods->size();
    auto outcome = agent.set_allocations(std::move(*pods));
    if (!outcome) {
      return json_error(
          409, fmt::format("POST /allocations: {} (nothing changed)", outcome.error().message()));
    }
    if (outcome->changed && on_change) on_change();
    return json_response(
        {{"generation", outcome->generation}, {"changed", outcome->changed}, {"pods", count}});
  });
}

}  // namespace tessera::k8s
