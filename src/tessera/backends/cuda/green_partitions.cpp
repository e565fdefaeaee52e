#include "tessera/backends/cuda/green_partitions.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::cuda {
namespace {

// cuda.h: CUdevSmResource's fields are unsigned; SM counts fit an int with room to spare.
int sm_count_of(const CUdevResource& r) {
  return r.type == CU_DEV_RESOURCE_TYPE_SM ? static_cast<int>(r.sm.smCount) : 0;
}

std::string version_text(int v) {
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

// The entry points green contexts need, and the driver version that brought them
// (cudaTypedefs.h's PFN_*_v12040 / _v12050, notes section 1).
core::Status require_green_contexts(const DriverLibrary& driver) {
  const DriverApi& api = driver.api();
  const bool core_api =
      api.device_get_dev_resource != nullptr && api.dev_sm_resource_split_by_count != nullptr &&
      api.dev_resource_generate_desc != nullptr && api.green_ctx_create != nullptr &&
      api.green_ctx_destroy != nullptr && api.ctx_from_green_ctx != nullptr &&
      api.green_ctx_get_dev_resource != nullptr;
  if (!core_api) {
    return core::failf(core::Domain::kCuda, core::Code::kUnsupported,
                       "green contexts need a CUDA 12.4+ driver (this one is {}); update the "
                       "NVIDIA driver to use SM partitions",
                       version_text(driver.driver_version()));
  }
  if (api.green_ctx_stream_create == nullptr) {
    return core::failf(core::Domain::kCuda, core::Code::kUnsupported,
                       "green-context streams (cuGreenCtxStreamCreate) need a CUDA 12.5+ driver "
                       "(this one is {}); update the NVIDIA driver to use SM partitions",
                       version_text(driver.driver_version()));
  }
  return {};
}

core::Result<CUdevResource> device_sm_resource(const DriverLibrary& driver, CUdevice device) {
  TESSERA_TRY(require_green_contexts(driver));
  CUdevResource resource{};
  TESSERA_TRY(
      driver.check(driver.api().device_get_dev_resource(device, &resource, CU_DEV_RESOURCE_TYPE_SM),
                   "cuDeviceGetDevResource(SM)"));
  return resource;
}

SmResourceInfo info_of(const CUdevResource& r) {
  return {sm_count_of(r), static_cast<int>(r.sm.minSmPartitionSize),
          static_cast<int>(r.sm.smCoscheduledAlignment)};
}

// One split of `input` into groups of `min_count` SMs: the group count is queried first
// (result = NULL), then that many are asked for; the driver may still make fewer.
core::Status split_by_count(const DriverLibrary& driver, const CUdevResource& input, int min_count,
                            unsigned max_groups, std::vector<CUdevResource>& groups,
                            CUdevResource& remaining) {
  const auto split = driver.api().dev_sm_resource_split_by_count;
  unsigned count = 0;
  TESSERA_TRY(
      driver.check(split(nullptr, &count, &input, nullptr, 0, static_cast<unsigned>(min_count)),
                   "cuDevSmResourceSplitByCount (group count)"));
  count = std::min(count, max_groups);
  groups.assign(count, CUdevResource{});
  remaining = CUdevResource{};
  if (count == 0) return {};
  TESSERA_TRY(driver.check(
      split(groups.data(), &count, &input, &remaining, 0, static_cast<unsigned>(min_count)),
      "cuDevSmResourceSplitByCount"));
  groups.resize(count);
  return {};
}

}  // namespace

core::Result<SmResourceInfo> query_sm_resource(const DriverLibrary& driver, CUdevice device) {
  TESSERA_ASSIGN_OR_RETURN(CUdevResource resource, device_sm_resource(driver, device));
  return info_of(resource);
}

int round_partition_sms(const SmResourceInfo& resource, int sms) {
  const int at_least = std::max(sms, resource.min_partition_sms);
  const int align = std::max(resource.alignment, 1);
  return (at_least + align - 1) / align * align;
}

core::Result<SmGranules> split_into_granules(const DriverLibrary& driver, CUdevice device,
                                             int granule_sms) {
  TESSERA_ASSIGN_OR_RETURN(CUdevResource input, device_sm_resource(driver, device));
  SmGranules out;
  out.device = info_of(input);
  out.requested_sms = granule_sms;
  if (granule_sms <= 0) {
    return core::failf(core::Domain::kCuda, core::Code::kInvalidArgument,
                       "granule size {} SMs: it must be positive", granule_sms);
  }
  const int rounded = round_partition_sms(out.device, granule_sms);
  if (rounded > out.device.sm_count) {
    return core::failf(core::Domain::kCuda, core::Code::kInvalidArgument,
                       "granules of {} SMs ({} after rounding to the minimum partition {} and "
                       "alignment {}) do not fit the device's {} SMs; ask for smaller granules",
                       granule_sms, rounded, out.device.min_partition_sms, out.device.alignment,
                       out.device.sm_count);
  }
  TESSERA_TRY(split_by_count(driver, input, rounded, static_cast<unsigned>(out.device.sm_count),
                             out.groups, out.remaining));
  if (out.groups.empty()) {
    return core::failf(core::Domain::kCuda, core::Code::kResourceExhausted,
                       "the driver split the device's {} SMs into no group of {} SMs; ask for "
                       "smaller granules",
                       out.device.sm_count, rounded);
  }
  out.granule_sms = sm_count_of(out.groups.front());
  out.remaining_sms = sm_count_of(out.remaining);
  return out;
}

core::Result<GreenPartition> make_green_context(const DriverLibrary& driver, CUdevice device,
                                                std::span<const CUdevResource> resources,
                                                int streams) {
  TESSERA_TRY(require_green_contexts(driver));
  if (resources.empty() || streams < 0) {
    return core::failf(core::Domain::kCuda, core::Code::kInvalidArgument,
                       "a green context needs at least one SM resource and a stream count >= 0 "
                       "(got {} resources, {} streams)",
                       resources.size(), streams);
  }
  const DriverApi& api = driver.api();
  GreenPartition p;
  for (const CUdevResource& r : resources) p.requested_sms += sm_count_of(r);
  // cuDevResourceGenerateDesc takes a non-const array.
  std::vector<CUdevResource> copy(resources.begin(), resources.end());
  CUdevResourceDesc desc = nullptr;
  const CUresult generated =
      api.dev_resource_generate_desc(&desc, copy.data(), static_cast<unsigned>(copy.size()));
  if (generated == CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION) {
    return core::fail(core::Domain::kCuda, core::Code::kInvalidArgument,
                      driver.check(generated, "cuDevResourceGenerateDesc").error().message() +
                          ": the SM resources of one green context must all come from the same "
                          "split call (cuda.h); split once and pick groups of that split");
  }
  TESSERA_TRY(driver.check(generated, "cuDevResourceGenerateDesc"));
  // cuda.h: CU_GREEN_CTX_DEFAULT_STREAM is required.
  CUgreenCtx green = nullptr;
  TESSERA_TRY(driver.check(api.green_ctx_create(&green, desc, device, CU_GREEN_CTX_DEFAULT_STREAM),
                           "cuGreenCtxCreate"));
  // From here on, a failure leaves `p` to destroy what this call made.
  p.green = UniqueGreenCtx(driver, green);
  TESSERA_TRY(driver.check(api.ctx_from_green_ctx(&p.context, green), "cuCtxFromGreenCtx"));
  TESSERA_TRY(
      driver.check(api.green_ctx_get_dev_resource(green, &p.resource, CU_DEV_RESOURCE_TYPE_SM),
                   "cuGreenCtxGetDevResource(SM)"));
  p.sms = sm_count_of(p.resource);
  for (int i = 0; i < streams; ++i) {
    CUstream s = nullptr;
    // cuda.h: flags must include CU_STREAM_NON_BLOCKING; priority 0 is the default.
    TESSERA_TRY(driver.check(api.green_ctx_stream_create(&s, green, CU_STREAM_NON_BLOCKING, 0),
                             "cuGreenCtxStreamCreate"));
    p.streams.emplace_back(driver, s);
  }
  if (p.sms < p.requested_sms) {
    core::logger().info("green partitions: green context got {} of the {} SMs it was made from",
                        p.sms, p.requested_sms);
  }
  return p;
}

core::Result<GreenPartition> make_green_context(const DriverLibrary& driver, CUdevice device,
                                                const SmGranules& granules,
                                                std::span<const int> granule_indices, int streams) {
  const int n = static_cast<int>(granules.groups.size());
  std::vector<bool> used(granules.groups.size(), false);
  std::vector<CUdevResource> chosen;
  for (int i : granule_indices) {
    if (i < 0 || i >= n || used[static_cast<size_t>(i)]) {
      return core::failf(core::Domain::kCuda, core::Code::kInvalidArgument,
                         "granule indices [{}]: each must be distinct and in [0, {})",
                         fmt::join(granule_indices, ", "), n);
    }
    used[static_cast<size_t>(i)] = true;
    chosen.push_back(granules.groups[static_cast<size_t>(i)]);
  }
  return make_green_context(driver, device, chosen, streams);
}

core::Result<GreenPartition> make_remaining_green_context(const DriverLibrary& driver,
                                                          CUdevice device,
                                                          const SmGranules& granules, int streams) {
  if (granules.remaining_sms == 0) {
    return core::failf(core::Domain::kCuda, core::Code::kFailedPrecondition,
                       "the split into {} granules of {} SMs left no SMs over",
                       granules.groups.size(), granules.granule_sms);
  }
  return make_green_context(driver, device, std::span(&granules.remaining, 1), streams);
}

void destroy_green_context(GreenPartition& partition) {
  while (!partition.streams.empty()) partition.streams.pop_back();
  partition.green.reset();
  partition = GreenPartition{};
}

core::Result<std::unique_ptr<GreenPartitionSet>> GreenPartitionSet::create(
    const DriverLibrary& driver, CUdevice device, std::span<const int> sms,
    const GreenPartitionOptions& options) {
  if (sms.empty() || options.streams_per_partition < 0) {
    return core::failf(core::Domain::kCuda, core::Code::kInvalidArgument,
                       "green partitions: need at least one partition and streams >= 0 (got {} "
                       "partitions, {} streams each)",
                       sms.size(), options.streams_per_partition);
  }
  TESSERA_ASSIGN_OR_RETURN(CUdevResource input, device_sm_resource(driver, device));
  std::unique_ptr<GreenPartitionSet> set(new GreenPartitionSet());
  set->resource_ = info_of(input);
  const SmResourceInfo& dev = set->resource_;

  // Requests first, before anything is created: each positive, and together within the device.
  std::vector<int> rounded;
  int taken = 0;
  for (size_t i = 0; i < sms.size(); ++i) {
    if (sms[i] <= 0) {
      return core::failf(core::Domain::kCuda, core::Code::kInvalidArgument,
                         "green partition {} asks for {} SMs: each partition needs at least 1", i,
                         sms[i]);
    }
    rounded.push_back(round_partition_sms(dev, sms[i]));
    if (taken + rounded.back() > dev.sm_count) {
      return core::failf(core::Domain::kCuda, core::Code::kResourceExhausted,
                         "green partition {} ({} SMs, {} after rounding to the minimum partition "
                         "{} and alignment {}) does not fit: the partitions before it take {} of "
                         "the device's {} SMs, {} left",
                         i, sms[i], rounded.back(), dev.min_partition_sms, dev.alignment, taken,
                         dev.sm_count, dev.sm_count - taken);
    }
    taken += rounded.back();
  }

  // The chain: each step splits `input` into one group of the next size and the rest.
  for (size_t i = 0; i < sms.size(); ++i) {
    const int left = sm_count_of(input);
    if (rounded[i] > left) {
      return core::failf(core::Domain::kCuda, core::Code::kResourceExhausted,
                         "green partition {} ({} SMs, {} after rounding) does not fit: the "
                         "driver left {} SMs after partitions [{}]",
                         i, sms[i], rounded[i], left, fmt::join(set->partition_sms(), ", "));
    }
    std::vector<CUdevResource> group;
    CUdevResource rest{};
    TESSERA_TRY(split_by_count(driver, input, rounded[i], 1, group, rest));
    if (group.empty()) {
      return core::failf(core::Domain::kCuda, core::Code::kResourceExhausted,
                         "green partition {} ({} SMs, {} after rounding): the driver made no group "
                         "of that size from the {} SMs left after partitions [{}]",
                         i, sms[i], rounded[i], left, fmt::join(set->partition_sms(), ", "));
    }
    TESSERA_ASSIGN_OR_RETURN(
        GreenPartition p,
        core::with_context(make_green_context(driver, device, group, options.streams_per_partition),
                           fmt::format("green partition {} ({} SMs)", i, sms[i])));
    p.requested_sms = sms[i];
    set->partitions_.push_back(std::move(p));

    const bool last = i + 1 == sms.size();
    set->remainder_sms_ = sm_count_of(rest);
    if (set->remainder_sms_ == 0 || (last && !options.remainder_context)) continue;
    // The rest can be split again (or used) only through a green context of its own (cuda.h).
    TESSERA_ASSIGN_OR_RETURN(
        GreenPartition rest_ctx,
        core::with_context(
            make_green_context(driver, device, std::span(&rest, 1),
                               last ? options.streams_per_partition : 0),
            fmt::format("the {} SMs left after green partition {}", set->remainder_sms_, i)));
    set->remainder_sms_ = rest_ctx.sms;
    input = rest_ctx.resource;
    if (last) {
      set->remainder_ = std::make_unique<GreenPartition>(std::move(rest_ctx));
    } else {
      set->chain_.push_back(std::move(rest_ctx));
    }
  }
  return set;
}

std::vector<int> GreenPartitionSet::partition_sms() const {
  std::vector<int> out;
  for (const GreenPartition& p : partitions_) out.push_back(p.sms);
  return out;
}

GreenPartitionSet::~GreenPartitionSet() {
  if (remainder_ != nullptr) destroy_green_context(*remainder_);
  for (auto it = partitions_.rbegin(); it != partitions_.rend(); ++it) destroy_green_context(*it);
  for (auto it = chain_.rbegin(); it != chain_.rend(); ++it) destroy_green_context(*it);
}

}  // namespace tessera::cuda
