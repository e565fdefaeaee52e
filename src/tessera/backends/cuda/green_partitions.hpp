#pragma once
// Physical contexts on a real GPU: disjoint SM partitions as green contexts (CUDA 12.4+ driver
// API; shared/notes/cuda-api-facts.md section 1).
//
// Two ways to carve a device, both on the same building blocks:
//  - Granules (what CudaGpu uses): ONE cuDevSmResourceSplitByCount call splits the device's SMs
//    into equal groups; SM resources of one split call may share a descriptor (cuda.h,
//    cuDevResourceGenerateDesc), so any subset of the groups becomes one green context
//    (split_into_granules, make_green_context).
//  - Unequal partitions (GreenPartitionSet). CUDA 13.0's cuDevSmResourceSplitByCount makes groups
//    of one size per call, and a group cannot be split again until it has a descriptor and a green
//    context. Partitions of different sizes are therefore carved one by one: split the remaining
//    SMs into one group of the next size and the rest, give the rest a green context, read its SM
//    resource back (cuGreenCtxGetDevResource) and split that, and so on.
//
// Every green context's SM count is read back from it: the driver may give fewer SMs than asked
// (or round up to its granularity), and callers must use GreenPartition::sms, never the request.

#include <cuda.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/backends/cuda/driver_handles.hpp"
#include "tessera/backends/cuda/driver_library.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cuda {

// The device's SM resource as the driver reports it (cuDeviceGetDevResource, type SM).
struct SmResourceInfo {
  int sm_count = 0;
  int min_partition_sms = 0;  // CUdevSmResource::minSmPartitionSize
  int alignment = 0;          // CUdevSmResource::smCoscheduledAlignment
};
// Fails with kUnsupported, saying which driver version is needed, when the driver has no green
// contexts.
core::Result<SmResourceInfo> query_sm_resource(const DriverLibrary& driver, CUdevice device);

// A request rounded up to what the driver can make: at least the minimum partition, a multiple of
// the alignment (cuda.h's "rounding up and aligning the minCount"). Pure; `sms` must be positive.
int round_partition_sms(const SmResourceInfo& resource, int sms);

// One split call's output: equal groups and the SMs left over. Groups from this call (and its
// remaining set) may be combined into one descriptor; groups of different calls may not.
struct SmGranules {
  SmResourceInfo device;  // the device's SM resource that was split
  int requested_sms = 0;  // the caller's granule size
  int granule_sms = 0;    // SMs per group, as the split reports them
  std::vector<CUdevResource> groups;
  CUdevResource remaining{};  // type CU_DEV_RESOURCE_TYPE_INVALID or 0 SMs: nothing left
  int remaining_sms = 0;
};
// Splits the device's SMs, in one call, into as many groups of `granule_sms` (rounded up by
// round_partition_sms) as fit. Fails naming the sizes when not even one group fits.
core::Result<SmGranules> split_into_granules(const DriverLibrary& driver, CUdevice device,
                                             int granule_sms);

struct GreenPartition {
  int requested_sms = 0;  // the SMs of the resources the descriptor was made from
  int sms = 0;            // what the green context really holds (read back)
  UniqueGreenCtx green;
  CUcontext context = nullptr;  // cuCtxFromGreenCtx: make it current to launch or allocate
  // Non-blocking streams created in the green context; declared after it, so destroyed first.
  std::vector<UniqueStream> streams;
  CUdevResource resource{};  // the green context's SM resource (cuGreenCtxGetDevResource)
};

// One green context over `resources` (all outputs of ONE split call: the driver refuses others
// with CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, and the error says so), with `streams`
// non-blocking streams of priority 0. On failure nothing it created is left.
core::Result<GreenPartition> make_green_context(const DriverLibrary& driver, CUdevice device,
                                                std::span<const CUdevResource> resources,
                                                int streams);
// One green context over the granules at `granule_indices` (distinct, in range).
core::Result<GreenPartition> make_green_context(const DriverLibrary& driver, CUdevice device,
                                                const SmGranules& granules,
                                                std::span<const int> granule_indices, int streams);
// One green context over the SMs the split left (kFailedPrecondition when there are none).
core::Result<GreenPartition> make_remaining_green_context(const DriverLibrary& driver,
                                                          CUdevice device,
                                                          const SmGranules& granules, int streams);
// Destroys the streams (the last made first), then the green context (cuGreenCtxDestroy does not
// destroy streams), and clears `partition`. Failures are logged, not returned: teardown carries on.
void destroy_green_context(GreenPartition& partition);

struct GreenPartitionOptions {
  int streams_per_partition = 1;
  // Also wrap the SMs no partition took (the split's remainder) in a green context, returned as
  // GreenPartitionSet::remainder(). The header warns the remainder "does not have the same
  // functional or performance guarantees"; tessera runs nothing latency-critical there.
  bool remainder_context = false;
};

class GreenPartitionSet {
 public:
  // Carves partitions of `sms` (in order; each a positive request, rounded by
  // round_partition_sms) out of the whole device. Fails, naming the partition and the SMs left,
  // when the requests do not fit; on failure everything created so far is destroyed.
  static core::Result<std::unique_ptr<GreenPartitionSet>> create(
      const DriverLibrary& driver, CUdevice device, std::span<const int> sms,
      const GreenPartitionOptions& options = {});
  // Destroys each partition's streams, then its green context, in reverse order of creation; the
  // intermediate green contexts of the split chain last.
  ~GreenPartitionSet();
  GreenPartitionSet(const GreenPartitionSet&) = delete;
  GreenPartitionSet& operator=(const GreenPartitionSet&) = delete;

  const std::vector<GreenPartition>& partitions() const { return partitions_; }
  // Each partition's SMs as read back, in order.
  std::vector<int> partition_sms() const;
  // The remainder's context (options.remainder_context), or null (also when no SM is left).
  const GreenPartition* remainder() const { return remainder_.get(); }
  // SMs no partition took: read back from the remainder's context when there is one, else as the
  // last split reported them; 0 when the partitions took them all.
  int remainder_sms() const { return remainder_sms_; }
  const SmResourceInfo& device_resource() const { return resource_; }

 private:
  GreenPartitionSet() = default;
  SmResourceInfo resource_;
  std::vector<GreenPartition> partitions_;
  std::unique_ptr<GreenPartition> remainder_;
  int remainder_sms_ = 0;
  // Green contexts made only to split their SMs further, destroyed last.
  std::vector<GreenPartition> chain_;
};

}  // namespace tessera::cuda
