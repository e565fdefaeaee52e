#include "tessera/gpu/modes/static_partitions/static_partitions.hpp"

#include <cmath>

#include "tessera/core/try.hpp"
#include "tessera/gpu/policy/tpc_shares.hpp"

namespace tessera::gpu {

using core::Code;
using core::Domain;

core::Result<std::vector<PartitionPlan>> plan_static_partitions(
    const hw::GpuSpec& spec, std::span<const TenantInfo> tenants) {
  TESSERA_TRY(check_tpc_spec("static-partitions", spec));
  double explicit_sum = 0;
  std::size_t even = 0;
  std::string so_far;
  for (const auto& t : tenants) {
    TESSERA_TRY(check_sm_share("static-partitions", t, "an even split of what the others leave"));
    if (t.sm_share == 0) {
      ++even;
      continue;
    }
    explicit_sum += t.sm_share;
    so_far += fmt::format("{}'{}' {}", so_far.empty() ? "" : " + ", t.name, t.sm_share);
    if (explicit_sum > 1 + kShareTolerance) {
      return core::failf(Domain::kGpu, Code::kInvalidArgument,
                         "static-partitions: tenant '{}' over-subscribes the GPU: SM shares add "
                         "up to {} ({}), more than 1; lower the shares",
                         t.name, explicit_sum, so_far);
    }
  }
  const double left = std::max(0.0, 1 - explicit_sum);
  const double even_share = even > 0 ? left / static_cast<double>(even) : 0;

  std::vector<PartitionPlan> plans;
  int next_sm = 0;
  for (const auto& t : tenants) {
    const double share = t.sm_share > 0 ? t.sm_share : even_share;
    const int tpcs = static_cast<int>(std::floor(share * spec.tpcs + kShareTolerance));
    if (tpcs < 1) {
      const std::string why =
          t.sm_share > 0
              ? fmt::format("its SM share {}", share)
              : fmt::format("an even split ({}) of the {} the explicit shares leave", share, left);
      return core::failf(Domain::kGpu, Code::kInvalidArgument,
                         "static-partitions: tenant '{}' would get less than one TPC ({} SMs) of "
                         "{}'s {} TPCs from {}; give it a share of at least {:.4f}",
                         t.name, spec.sms_per_tpc, spec.name, spec.tpcs, why, 1.0 / spec.tpcs);
    }
    const int sms = tpcs * spec.sms_per_tpc;
    plans.push_back(
        PartitionPlan{.first_sm = next_sm,
                      .sms = sms,
                      .bandwidth_share = static_cast<double>(sms) / static_cast<double>(spec.sms),
                      .memory_bytes = 0,
                      .label = {}});
    next_sm += sms;
  }
  return plans;
}

core::Status StaticPartitionsMode::attach(device::GpuDevice& device,
                                          std::span<const TenantInfo> tenants) {
  if (device_ != nullptr) return std::unexpected(already_attached(name()));
  const auto caps = device.capabilities();
  if (!caps.sm_partitions) {
    return core::failf(Domain::kGpu, Code::kUnsupported,
                       "{} needs a device that confines streams to SM sets; {} lacks SM "
                       "partitions; choose mps or time-slicing on this device",
                       name(), device.spec().name);
  }
  // Without bandwidth domains (a real GPU's green contexts split SMs, not memory bandwidth) the
  // partitions confine SMs only and share the device's bandwidth; counters() says so.
  const bool shared_bandwidth = !caps.bandwidth_partitions;
  TESSERA_ASSIGN_OR_RETURN(auto table, TenantTable::make(name(), tenants));
  TESSERA_ASSIGN_OR_RETURN(const auto plans, planner_(device.spec(), tenants));
  std::vector<Slice> slices;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const auto& plan = plans[i];
    const auto domain = shared_bandwidth ? core::Result<device::DomainId>(device::kWholeDevice)
                                         : device.create_bandwidth_domain(plan.bandwidth_share);
    if (!domain) {
      return std::unexpected(domain.error().with_context(
          fmt::format("{}: bandwidth domain for tenant '{}'", name(), table.info(i).name)));
    }
    const auto sms = device::SmMask::range(plan.first_sm, plan.first_sm + plan.sms);
    const device::StreamConfig config{.context = context_for(i),
                                      .sms = sms,
                                      .max_sms = 0,
                                      .bandwidth_domain = *domain,
                                      .priority = 0};
    TESSERA_ASSIGN_OR_RETURN(const auto stream, device.create_stream(config));
    slices.push_back(Slice{.stream = stream,
                           .sms = sms,
                           .domain = *domain,
                           .memory_bytes = plan.memory_bytes,
                           .label = plan.label});
  }
  tenants_ = std::move(table);
  slices_ = std::move(slices);
  shared_bandwidth_ = shared_bandwidth;
  device_ = &device;
  return {};
}

core::Status StaticPartitionsMode::submit(TenantId tenant, workload::KernelSequencePtr sequence,
                                          std::uint64_t tag, device::DoneCallback done) {
  TESSERA_ASSIGN_OR_RETURN(const auto index, tenants_.index_of(name(), tenant));
  return device_->submit(slices_[index].stream, std::move(sequence), tag, std::move(done));
}

std::vector<ModeCounter> StaticPartitionsMode::counters() const {
  if (!shared_bandwidth_) return {};
  return {ModeCounter{.name = "partitions sharing memory bandwidth", .value = 1}};
}

std::vector<PartitionInfo> StaticPartitionsMode::partitions() const {
  std::vector<PartitionInfo> out;
  for (std::size_t i = 0; i < slices_.size(); ++i) {
    const auto& slice = slices_[i];
    const std::string& tenant = tenants_.info(i).name;
    out.push_back(PartitionInfo{
        .name = slice.label.empty() ? tenant : fmt::format("{} ({})", tenant, slice.label),
        .sms = slice.sms,
        .bandwidth_domain = slice.domain,
        .tenants = {tenants_.info(i).id},
        .memory_bytes = slice.memory_bytes});
  }
  return out;
}

}  // namespace tessera::gpu
