#pragma once
// Who tells Kubernetes where a pod goes once the extender has decided. kube-scheduler delegates
// binding to an extender that has a bindVerb: the extender must then create the pod's v1.Binding
// itself (extender/v1 types.go, ExtenderBindingArgs).
//
//   ApiServerBinder   records the placement on the pod (a merge patch of its tessera.io/placement
//                     annotation, first, so that a bound pod always carries it), then POSTs the
//                     Binding as the default binder does
//                     (POST /api/v1/namespaces/{ns}/pods/{name}/binding, 201 Created)
//   RecordOnlyBinder  records the binding and tells no one: dry runs, tests, and the default when
//                     no API server is configured (each bind is logged as not sent)

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/k8s/api_server_client.hpp"

namespace tessera::k8s {

struct BindingTarget {
  std::string pod_namespace;
  std::string pod_name;
  std::string pod_uid;
  std::string node;
  // tessera.io/placement's value (placement_annotation.hpp); "" for a pod that holds nothing.
  std::string placement;
};

class Binder {
 public:
  virtual ~Binder() = default;
  // Fails (Domain::kK8s) with the API server's reason when the binding was not created.
  virtual core::Status bind(const BindingTarget& target) = 0;
  // "api-server https://10.0.0.1:443", "record-only": for the log.
  virtual std::string describe() const = 0;
};

class RecordOnlyBinder final : public Binder {
 public:
  core::Status bind(const BindingTarget& target) override;
  std::string describe() const override { return "record-only (no API server: nothing sent)"; }
  std::vector<BindingTarget> bindings() const;

 private:
  mutable std::mutex mu_;
  std::vector<BindingTarget> bindings_;
};

class ApiServerBinder final : public Binder {
 public:
  // Fails when the URL is not http(s)://host[:port] or the token file cannot be read.
  static core::Result<std::unique_ptr<ApiServerBinder>> create(ApiServerConfig config);
  core::Status bind(const BindingTarget& target) override;
  std::string describe() const override { return "api-server " + client_.config().url; }

 private:
  explicit ApiServerBinder(ApiServerClient client) : client_(std::move(client)) {}
  ApiServerClient client_;
};

}  // namespace tessera::k8s
