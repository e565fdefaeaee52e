#pragma once
// Physical contexts on a real GPU: disjoint SM partitions as green contexts (CUDA 12.4+ driver
// API; shared/notes/cuda-api-facts.md section 1).
//
// CUDA 13.0's cuDevSmResourceSplitByCount makes groups of one size per call, and a group cannot
// be split again until it has a descriptor and a green context. Partitions of different sizes are
// therefore carved one by one: split the remaining SMs into one group of the next size and the
// rest, give the rest a green context, read its SM resource back (cuGreenCtxGetDevResource) and
// split that, and so on. Every partition's SM count is read back from its green context: the
// driver may give fewer SMs than asked (or round up to its granularity), and callers must use
// GreenPartition::sms, never the request.

#include <cuda.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/cuda/driver_library.hpp"

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

struct GreenPartition {
  int requested_sms = 0;
  int sms = 0;  // what the green context really holds (read back)
  CUgreenCtx green = nullptr;
  CUcontext context = nullptr;   // cuCtxFromGreenCtx: make it current to launch or allocate
  std::vector<CUstream> streams;  // non-blocking streams created in the green context
};

struct GreenPartitionOptions {
  int streams_per_partition = 1;
  // Also wrap the SMs no partition took (the split's remainder) in a green context, returned as
  // GreenPartitionSet::remainder(). The header warns the remainder "does not have the same
  // functional or performance guarantees"; tessera runs nothing latency-critical there.
  bool remainder_context = false;
};

class GreenPartitionSet {
 public:
  // Carves partitions of `sms` (in order; each a positive request, rounded by the driver) out of
  // the whole device. Fails, naming the partition and the SMs left, when the requests do not fit;
  // on failure everything created so far is destroyed.
  static core::Result<std::unique_ptr<GreenPartitionSet>> create(
      const DriverLibrary& driver, CUdevice device, std::span<const int> sms,
      const GreenPartitionOptions& options = {});
  // Destroys each partition's streams, then its green context (cuGreenCtxDestroy does not destroy
  // streams), in reverse order of creation; intermediate green contexts of the split chain too.
  ~GreenPartitionSet();
  GreenPartitionSet(const GreenPartitionSet&) = delete;
  GreenPartitionSet& operator=(const GreenPartitionSet&) = delete;

  const std::vector<GreenPartition>& partitions() const { return partitions_; }
  // The remainder's context (options.remainder_context), or null.
  const GreenPartition* remainder() const;
  const SmResourceInfo& device_resource() const { return resource_; }

 private:
  GreenPartitionSet(const DriverLibrary& driver) : driver_(driver) {}
  const DriverLibrary& driver_;
  SmResourceInfo resource_;
  std::vector<GreenPartition> partitions_;
  std::unique_ptr<GreenPartition> remainder_;
  // Green contexts made only to split their SMs further, destroyed last.
  std::vector<CUgreenCtx> chain_;
};

}  // namespace tessera::cuda
