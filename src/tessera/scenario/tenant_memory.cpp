#include "tessera/scenario/tenant_memory.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "tessera/core/try.hpp"
#include "tessera/mig/policy/memory_estimate.hpp"

namespace tessera::scenario {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The scenario's own layout (sized on the whole GPU) when the pool is the GPU, else sized anew.
core::Result<std::optional<workload::ServingMemory>> serving_in(const Scenario& s,
                                                                const TenantSpec& t,
                                                                const MemoryPool& pool) {
  if (!t.memory) return std::nullopt;
  if (pool.bytes == s.gpu.memory_bytes) return t.memory;
  const auto& c = t.inference;
  TESSERA_ASSIGN_OR_RETURN(
      auto sized, workload::size_kv_cache(c.model, c.tensor_parallel, pool.bytes, t.memory->sizing,
                                          c.max_batched_tokens, c.max_num_seqs));
  return sized;
}

}  // namespace

TenantMemory tenant_memory(const TenantSpec& t,
                           const std::optional<workload::ServingMemory>& serving) {
  if (t.kind == TenantSpec::Kind::kTraining) {
    const auto& m = t.training.model;
    const int batch = t.training.batch > 0 ? t.training.batch : m.default_batch;
    const mig::MemoryBreakdown est =
        mig::estimate_training(m, batch, mig::default_optimizer(m), t.training.precision);
    return {static_cast<double>(est.total()), est.describe()};
  }
  if (serving) {
    return {serving->budget,
            fmt::format("its serving engine's budget, {:.2f} GiB", serving->budget / kGiB)};
  }
  const double weights = t.inference.model.weight_bytes() / t.inference.tensor_parallel.degree;
  return {weights, fmt::format("weights {:.2f} GiB", weights / kGiB)};
}

std::vector<TenantPlacement> place_in_memory(const Scenario& s, std::span<const gpu::TenantId> ids,
                                             std::span<const MemoryPool> pools) {
  struct Held {
    double bytes = 0;
    std::vector<std::string> by;
  };
  std::map<std::string, Held> held;  // per pool name
  std::vector<TenantPlacement> out(ids.size());
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const TenantSpec& t = s.tenants[ids[k]];
    const MemoryPool& pool = pools[k];
    const auto capacity = static_cast<double>(pool.bytes);
    auto serving = serving_in(s, t, pool);
    if (!serving) {
      out[k].out_of_memory = fmt::format("{} in {}'s {:.2f} GiB", serving.error().message(),
                                         pool.name, capacity / kGiB);
      continue;
    }
    const TenantMemory need = tenant_memory(t, *serving);
    Held& h = held[pool.name];
    if (h.bytes + need.bytes > capacity) {
      out[k].out_of_memory = fmt::format(
          "out of memory: needs {:.2f} GiB ({}), {:.2f} GiB of {}'s {:.2f} GiB are free{}",
          need.bytes / kGiB, need.parts, (capacity - h.bytes) / kGiB, pool.name, capacity / kGiB,
          h.by.empty() ? std::string() : fmt::format(" beside {}", fmt::join(h.by, ", ")));
      continue;
    }
    h.bytes += need.bytes;
    h.by.push_back(fmt::format("'{}' {:.2f} GiB", t.name, need.bytes / kGiB));
    out[k].serving = std::move(*serving);
  }
  return out;
}

}  // namespace tessera::scenario
