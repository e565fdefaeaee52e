#pragma once
// The tenants a sharing mode was attached with and the stream each one submits to. Every mode
// needs the same checks (unique ids, a non-empty tenant list, submissions only for known tenants),
// so they live here once.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/device/gpu_device.hpp"
#include "tessera/gpu/sharing_mode.hpp"

namespace tessera::gpu {

class TenantTable {
 public:
  TenantTable() = default;  // no tenants: the mode is not attached yet
  // Fails if `tenants` is empty or repeats an id; `mode` names the mode in the message.
  static core::Result<TenantTable> make(std::string_view mode, std::span<const TenantInfo> tenants);

  bool empty() const { return tenants_.empty(); }
  std::size_t size() const { return tenants_.size(); }
  const TenantInfo& info(std::size_t index) const { return tenants_[index]; }
  std::vector<TenantId> ids() const;

  // The position of `tenant` in the attach order, or an error naming the known tenants.
  core::Result<std::size_t> index_of(std::string_view mode, TenantId tenant) const;

  // A comma-separated list of "'name' (id)" for messages.
  std::string describe() const;

 private:
  std::vector<TenantInfo> tenants_;
};

// The error for a second attach() of one mode object.
core::Error already_attached(std::string_view mode);

// Device contexts are numbered from 1 in attach order so that 0, the default of StreamConfig,
// never names a tenant's context by accident.
inline device::ContextId context_for(std::size_t tenant_index) {
  return static_cast<device::ContextId>(tenant_index + 1);
}

}  // namespace tessera::gpu
