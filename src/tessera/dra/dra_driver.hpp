#pragma once
// tessera's DRA driver on one node: what NodePrepareResources and NodeUnprepareResources do for
// one claim, without gRPC (dra_grpc.hpp serves it to the kubelet).
//
// Prepare reads the claim from the API server, takes the one GPU share it allocated from this
// node's pool (claim_allocation.hpp), asks tesserad to grant the claim's tenant that share (the
// daemon enforces it on the processes that register under the tenant), and writes the claim's
// CDI spec (cdi_spec.hpp), which makes the container start under the interposer with the
// daemon's socket and the tenant's identity. A MIG partition is made instead (mig_partitions.hpp)
// and given to the container by its UUID and capability device nodes: the hardware isolates it,
// and tesserad, which shares whole GPUs, has no part. Unprepare undoes either. Both are idempotent
// and survive restarts of the plugin and the kubelet through the checkpoint (prepared_claims.hpp);
// a prepare that fails undoes what it did and leaves nothing behind.

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/dra/cdi_spec.hpp"
#include "tessera/dra/claim_allocation.hpp"
#include "tessera/dra/mig_partitions.hpp"
#include "tessera/dra/prepared_claims.hpp"

namespace tessera::dra {

inline constexpr std::string_view kDriverName = "gpu.tessera.io";

// Where the driver reads claims: the API server, or a test's.
class ClaimSource {
 public:
  virtual ~ClaimSource() = default;
  // The ResourceClaim object; an error (kNotFound when the API server has none) otherwise.
  virtual core::Result<nlohmann::json> claim(const std::string& ns, const std::string& name) = 0;
};

// tesserad's grants (its control protocol's "grant" and "revoke"), or a test's.
class TenantGrants {
 public:
  virtual ~TenantGrants() = default;
  virtual core::Status grant(const nlohmann::json& request) = 0;
  virtual core::Status revoke(const std::string& claim_uid) = 0;
};

struct DriverOptions {
  std::string driver_name{kDriverName};
  std::string node_name;  // the pool this node's devices are published in
  std::string cdi_dir = "/var/run/cdi";
  std::string checkpoint_path = "/var/lib/kubelet/plugins/gpu.tessera.io/checkpoint.json";
  // What each container of a prepared claim is given. The interposer library on the host, and
  // where it appears in the container (LD_PRELOAD names that path).
  std::string interposer_host_path = "/opt/tessera/lib/libtessera_interpose.so";
  std::string interposer_container_path = "/opt/tessera/lib/libtessera_interpose.so";
  // tesserad's socket on the host; its folder is mounted at the same path in the container.
  std::string daemon_socket = "/run/tessera/tesserad.sock";
  // The MPS pipe folder the daemon's MPS control daemon uses ("": no MPS), mounted and named in
  // CUDA_MPS_PIPE_DIRECTORY.
  std::string mps_pipe_dir;
  // The CDI kind of NVIDIA's own spec (`nvidia-ctk cdi generate`: "nvidia.com/gpu"), whose device
  // "<index>" brings the driver's libraries and device nodes: its id is returned beside
  // tessera's. "": tessera's spec adds the GPU's device nodes itself, and the image must carry
  // the driver's user-space libraries.
  std::string nvidia_cdi_kind = "nvidia.com/gpu";
  // The MIG capability minors (read when a partition is prepared).
  std::string mig_minors_path = "/proc/driver/nvidia-caps/mig-minors";
};

// The CDI kind of tessera's specs: "<driver>/claim".
std::string cdi_kind(const DriverOptions& options);
// The tenant a claim's processes register under: the claim's name (cut to 54 characters) and the
// first 8 characters of its UID, so `tessera ctl list` shows which claim a tenant is.
std::string tenant_for(const ClaimRef& claim);

class DraDriver {
 public:
  // Opens the checkpoint (an unreadable one is an error: prepared claims must not be forgotten).
  // `mig` makes MIG partitions; without it a claim of one is refused.
  static core::Result<std::unique_ptr<DraDriver>> open(DriverOptions options, ClaimSource& claims,
                                                       TenantGrants& grants,
                                                       MigPartitions* mig = nullptr);

  // The devices prepared for `claim`, with their CDI ids; the same answer for a claim already
  // prepared, without asking the API server or the daemon again.
  core::Result<std::vector<PreparedDevice>> prepare(const ClaimRef& claim);
  // Undoes prepare; a claim not prepared here is not an error.
  core::Status unprepare(const ClaimRef& claim);

  std::size_t prepared() const;
  const DriverOptions& options() const { return options_; }

 private:
  DraDriver(DriverOptions options, ClaimSource& claims, TenantGrants& grants, MigPartitions* mig,
            PreparedClaims checkpoint)
      : options_(std::move(options)),
        claims_(claims),
        grants_(grants),
        mig_(mig),
        checkpoint_(std::move(checkpoint)) {}

  CdiSpec spec_for(const ClaimAllocation& allocation, const std::string& tenant) const;
  nlohmann::json grant_request(const ClaimAllocation& allocation, const std::string& tenant) const;
  // The share's enforcement: a grant in tesserad, or a MIG partition made; `entry` records what
  // was done (the checkpoint is written before each step that has an effect).
  core::Result<CdiSpec> enforce(const ClaimAllocation& allocation, PreparedClaim& entry);
  core::Result<CdiSpec> make_partition(const ClaimAllocation& allocation, PreparedClaim& entry);
  // Removes the claim's spec, revokes its grant or removes its partition and drops its entry;
  // stops at the first failure, leaving the entry for a retry.
  core::Status undo(const std::string& uid, const PreparedClaim& entry);

  DriverOptions options_;
  ClaimSource& claims_;
  TenantGrants& grants_;
  MigPartitions* mig_;
  mutable std::mutex mu_;  // the kubelet may call for several claims at once
  PreparedClaims checkpoint_;
};

}  // namespace tessera::dra
