#include "tessera/scenario/tenant_memory.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tessera/mig/policy/memory_estimate.hpp"

namespace tessera::scenario {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

TenantMemory tenant_memory(const TenantSpec& t) {
  if (t.kind == TenantSpec::Kind::kTraining) {
    const auto& m = t.training.model;
    const int batch = t.training.batch > 0 ? t.training.batch : m.default_batch;
    const mig::MemoryBreakdown est = mig::estimate_training(m, batch, mig::default_optimizer(m));
    return {static_cast<double>(est.total()), est.describe()};
  }
  if (t.memory) {
    return {t.memory->budget,
            fmt::format("its serving engine's budget, {:.2f} GiB", t.memory->budget / kGiB)};
  }
  const double weights = t.inference.model.weight_bytes() / t.inference.tensor_parallel.degree;
  return {weights, fmt::format("weights {:.2f} GiB", weights / kGiB)};
}

std::vector<std::string> out_of_memory(const Scenario& s, std::span<const gpu::TenantId> ids) {
  const double capacity = static_cast<double>(s.gpu.memory_bytes);
  std::vector<std::string> out(ids.size());
  std::vector<std::string> holders;
  double used = 0;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const TenantSpec& t = s.tenants[ids[k]];
    const TenantMemory need = tenant_memory(t);
    if (used + need.bytes <= capacity) {
      used += need.bytes;
      holders.push_back(fmt::format("'{}' {:.2f} GiB", t.name, need.bytes / kGiB));
      continue;
    }
    out[k] = fmt::format(
        "out of memory: needs {:.2f} GiB ({}), {:.2f} GiB of the {}'s {:.2f} GiB "
        "are free{}",
        need.bytes / kGiB, need.parts, (capacity - used) / kGiB, s.gpu.name, capacity / kGiB,
        holders.empty() ? std::string() : fmt::format(" beside {}", fmt::join(holders, ", ")));
  }
  return out;
}

}  // namespace tessera::scenario
