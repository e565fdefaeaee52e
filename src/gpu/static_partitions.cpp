#include "tessera/gpu/static_partitions.hpp"

#include <cmath>

#include "tessera/core/try.hpp"

namespace tessera::gpu {

using core::Code;
using core::Domain;

namespace {

// Shares are user input in decimal ("0.3"); this tolerance keeps 0.1 + 0.2 + 0.7 from counting
// as over-subscribed and 0.5 x 66 TPCs from rounding down to 32.
constexpr double kShareTolerance = 1e-9;

core::Status check_spec(const hw::GpuSpec& spec) {
  if (spec.sms_per_tpc <= 0 || spec.tpcs <= 0 || spec.tpcs * spec.sms_per_tpc > spec.sms ||
      spec.sms > device::kMaxSms) {
    return core::failf(Domain::kGpu, Code::kInvalidArgument,
                       "static-partitions: GPU '{}' describes {} SMs in {} TPCs of {} SMs, which "
                       "cannot be partitioned by TPC (at most {} SMs); fix the GPU spec",
                       spec.name, spec.sms, spec.tpcs, spec.sms_per_tpc, device::kMaxSms);
  }
  return {};
}

}  // namespace

core::Result<std::vector<PartitionPlan>> plan_static_partitions(
    const hw::GpuSpec& spec, std::span<const TenantInfo> tenants) {
  TESSERA_TRY(check_spec(spec));
  double explicit_sum = 0;
  std::size_t even = 0;
  std::string so_far;
  for (const auto& t : tenants) {
    if (!std::isfinite(t.sm_share) || t.sm_share < 0 || t.sm_share > 1) {
      return core::failf(Domain::kGpu, Code::kInvalidArgument,
                         "static-partitions: tenant '{}' has SM share {}; a share is a fraction "
                         "in (0, 1], or 0 for an even split of what the others leave",
                         t.name, t.sm_share);
    }
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
                      .bandwidth_share = static_cast<double>(sms) / static_cast<double>(spec.sms)});
    next_sm += sms;
  }
  return plans;
}

core::Status StaticPartitionsMode::attach(device::GpuDevice& device,
                                          std::span<const TenantInfo> tenants) {
  if (device_ != nullptr) return std::unexpected(already_attached(name()));
  const auto caps = device.capabilities();
  if (!caps.sm_partitions || !caps.bandwidth_partitions) {
    const std::string_view missing = caps.sm_partitions          ? "bandwidth partitions"
                                     : caps.bandwidth_partitions ? "SM partitions"
                                                                 : "both";
    return core::failf(Domain::kGpu, Code::kUnsupported,
                       "static-partitions needs a device that confines streams to SM sets and "
                       "splits memory bandwidth into domains; {} lacks {}; choose mps or "
                       "time-slicing on this device",
                       device.spec().name, missing);
  }
  TESSERA_ASSIGN_OR_RETURN(auto table, TenantTable::make(name(), tenants));
  TESSERA_ASSIGN_OR_RETURN(const auto plans, plan_static_partitions(device.spec(), tenants));
  std::vector<Slice> slices;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const auto& plan = plans[i];
    const auto domain = device.create_bandwidth_domain(plan.bandwidth_share);
    if (!domain) {
      return std::unexpected(domain.error().with_context(
          fmt::format("static-partitions: bandwidth domain for tenant '{}'", table.info(i).name)));
    }
    const auto sms = device::SmMask::range(plan.first_sm, plan.first_sm + plan.sms);
    const device::StreamConfig config{
        .context = context_for(i), .sms = sms, .max_sms = 0, .bandwidth_domain = *domain};
    TESSERA_ASSIGN_OR_RETURN(const auto stream, device.create_stream(config));
    slices.push_back(Slice{.stream = stream, .sms = sms, .domain = *domain});
  }
  tenants_ = std::move(table);
  slices_ = std::move(slices);
  device_ = &device;
  return {};
}

core::Status StaticPartitionsMode::submit(TenantId tenant, workload::KernelSequencePtr sequence,
                                          std::uint64_t tag, device::DoneCallback done) {
  TESSERA_ASSIGN_OR_RETURN(const auto index, tenants_.index_of(name(), tenant));
  return device_->submit(slices_[index].stream, std::move(sequence), tag, std::move(done));
}

std::vector<PartitionInfo> StaticPartitionsMode::partitions() const {
  std::vector<PartitionInfo> out;
  for (std::size_t i = 0; i < slices_.size(); ++i) {
    out.push_back(PartitionInfo{.name = tenants_.info(i).name,
                                .sms = slices_[i].sms,
                                .bandwidth_domain = slices_[i].domain,
                                .tenants = {tenants_.info(i).id}});
  }
  return out;
}

}  // namespace tessera::gpu
