#pragma once
// An extender serving `nodes` generated rtx4090-2s nodes (node000, node001, ...) over HTTP on a
// loopback port: what the extender and HTTP server benchmarks send their requests to. A failure
// throws: a benchmark cannot run without it.

#include <fmt/format.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "tessera/core/log.hpp"
#include "tessera/hw/topology/presets.hpp"
#include "tessera/k8s/extender_service.hpp"
#include "tessera/k8s/http_server.hpp"

namespace tessera::bench {

struct ServedExtender {
  std::unique_ptr<k8s::ExtenderService> service;
  std::unique_ptr<k8s::HttpServer> server;
};

inline ServedExtender serve_extender(int nodes) {
  (void)core::set_log_level("warn");  // the per-decision info lines would be the cost
  ServedExtender x;
  x.service = std::make_unique<k8s::ExtenderService>(k8s::ExtenderConfig{},
                                                     std::make_shared<k8s::RecordOnlyBinder>());
  for (int i = 0; i < nodes; ++i) {
    const std::string name = fmt::format("node{:03}", i);
    auto t = hw::preset("rtx4090-2s", name);
    if (!t) throw std::runtime_error(t.error().message());
    auto added =
        x.service->put_topology(name, std::make_shared<const hw::HostTopology>(std::move(*t)));
    if (!added) throw std::runtime_error(added.error().message());
  }
  auto s = k8s::HttpServer::create({});
  if (!s) throw std::runtime_error(s.error().message());
  x.server = std::move(*s);
  x.service->register_routes(*x.server);
  if (auto st = x.server->start(); !st) throw std::runtime_error(st.error().message());
  return x;
}

}  // namespace tessera::bench
