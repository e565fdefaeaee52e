#include "tessera/gpu/modes/tenant_table.hpp"

#include <fmt/format.h>

namespace tessera::gpu {

using core::Code;
using core::Domain;

core::Result<TenantTable> TenantTable::make(std::string_view mode,
                                            std::span<const TenantInfo> tenants) {
  if (tenants.empty()) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "sharing mode '{}' was given no tenants; a scenario needs at least one",
                       mode);
  }
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (tenants[i].id == tenants[j].id) {
        return core::failf(Domain::kGpu, Code::kInvalidArgument,
                           "sharing mode '{}': tenants '{}' and '{}' both have id {}; tenant ids "
                           "must be unique",
                           mode, tenants[j].name, tenants[i].name, tenants[i].id);
      }
    }
  }
  TenantTable table;
  table.tenants_.assign(tenants.begin(), tenants.end());
  return table;
}

std::vector<TenantId> TenantTable::ids() const {
  std::vector<TenantId> out;
  out.reserve(tenants_.size());
  for (const auto& t : tenants_) out.push_back(t.id);
  return out;
}

core::Result<std::size_t> TenantTable::index_of(std::string_view mode, TenantId tenant) const {
  for (std::size_t i = 0; i < tenants_.size(); ++i) {
    if (tenants_[i].id == tenant) return i;
  }
  if (tenants_.empty()) {
    return core::failf(Domain::kGpu, Code::kFailedPrecondition,
                       "sharing mode '{}' got work for tenant {} before attach(); attach the "
                       "tenants to a device first",
                       mode, tenant);
  }
  return core::failf(Domain::kGpu, Code::kNotFound,
                     "sharing mode '{}' has no tenant with id {}; it was attached with {}", mode,
                     tenant, describe());
}

core::Error already_attached(std::string_view mode) {
  return core::Error(Domain::kGpu, Code::kFailedPrecondition,
                     fmt::format("sharing mode '{}' is already attached to a device; create one "
                                 "mode object per GPU",
                                 mode));
}

std::string TenantTable::describe() const {
  std::string out;
  for (const auto& t : tenants_) {
    if (!out.empty()) out += ", ";
    out += fmt::format("'{}' ({})", t.name, t.id);
  }
  return out;
}

}  // namespace tessera::gpu
