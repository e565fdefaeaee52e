#include "tessera/dra/dra_driver.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "tessera/core/file_read.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::dra {

namespace {

using nlohmann::json;

constexpr std::size_t kTenantNameChars = 54;
constexpr std::size_t kUidChars = 8;

std::string folder_of(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

}  // namespace

std::string cdi_kind(const DriverOptions& options) {
  return options.driver_name + "/claim";
}

std::string tenant_for(const ClaimRef& claim) {
  std::string name = claim.name.substr(0, kTenantNameChars);
  while (!name.empty() && (name.back() == '-' || name.back() == '.')) name.pop_back();
  return fmt::format("{}-{}", name.empty() ? "claim" : name, claim.uid.substr(0, kUidChars));
}

core::Result<std::unique_ptr<DraDriver>> DraDriver::open(DriverOptions options, ClaimSource& claims,
                                                         TenantGrants& grants, MigPartitions* mig) {
  if (options.node_name.empty()) {
    return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                      "the DRA driver needs the node's name (its pool)");
  }
  TESSERA_ASSIGN_OR_RETURN(auto checkpoint, PreparedClaims::open(options.checkpoint_path));
  return std::unique_ptr<DraDriver>(
      new DraDriver(std::move(options), claims, grants, mig, std::move(checkpoint)));
}

std::size_t DraDriver::prepared() const {
  std::lock_guard lock(mu_);
  return checkpoint_.claims().size();
}

json DraDriver::grant_request(const ClaimAllocation& allocation, const std::string& tenant) const {
  const AllocatedShare& share = allocation.shares.front();
  return daemon::grant_request_json({.claim = allocation.claim.uid,
                                     .tenant = tenant,
                                     .device = share.gpu,
                                     .settings = share.settings});
}

CdiSpec DraDriver::spec_for(const ClaimAllocation& allocation, const std::string& tenant) const {
  const AllocatedShare& share = allocation.shares.front();
  const daemon::TenantSettings& s = share.settings;
  CdiDevice device{.name = fmt::format("{}-{}", allocation.claim.uid, share.device), .edits = {}};
  // The process's own view of its limits: what it runs under if the daemon is not there when it
  // starts (fail-open); once registered, the daemon's grant is what holds.
  device.edits.env = {
      "TESSERA_TENANT=" + tenant,
      fmt::format("TESSERA_CLASS={}", daemon::tenant_class_name(s.tenant_class)),
      fmt::format("TESSERA_PRIORITY={}", s.priority),
      fmt::format("TESSERA_DEVICE={}", share.gpu),
      fmt::format("TESSERA_SM_SHARE={}", s.sm_share),
  };
  if (s.tpot_slo > 0)
    device.edits.env.push_back(fmt::format("TESSERA_TPOT_SLO_MS={}", core::to_millis(s.tpot_slo)));
  if (s.ttft_slo > 0)
    device.edits.env.push_back(fmt::format("TESSERA_TTFT_SLO_MS={}", core::to_millis(s.ttft_slo)));
  if (s.memory_limit > 0)
    device.edits.env.push_back(fmt::format("TESSERA_MEMORY_LIMIT={}", s.memory_limit));
  if (options_.nvidia_cdi_kind.empty()) {
    device.edits.device_nodes = {fmt::format("/dev/nvidia{}", share.gpu), "/dev/nvidiactl",
                                 "/dev/nvidia-uvm"};
  }
  CdiSpec spec{.kind = cdi_kind(options_), .devices = {std::move(device)}, .common = {}};
  const std::string socket_dir = folder_of(options_.daemon_socket);
  spec.common.env = {"LD_PRELOAD=" + options_.interposer_container_path,
                     "TESSERA_DAEMON_SOCKET=" + options_.daemon_socket};
  spec.common.mounts = {
      {options_.interposer_host_path,
       options_.interposer_container_path,
       {"ro", "nosuid", "nodev", "bind"}},
      {socket_dir, socket_dir, {"rw", "nosuid", "nodev", "bind"}},
  };
  if (!options_.mps_pipe_dir.empty()) {
    spec.common.env.push_back("CUDA_MPS_PIPE_DIRECTORY=" + options_.mps_pipe_dir);
    spec.common.mounts.push_back(
        {options_.mps_pipe_dir, options_.mps_pipe_dir, {"rw", "nosuid", "nodev", "bind"}});
  }
  return spec;
}

core::Status DraDriver::undo(const std::string& uid, const PreparedClaim& entry) {
  TESSERA_TRY(remove_spec(entry.cdi_spec));
  if (entry.mig_gpu >= 0) {
    if (entry.mig_instance >= 0) {
      if (mig_ == nullptr) {
        return core::failf(core::Domain::kK8s, core::Code::kFailedPrecondition,
                           "claim {}/{}: its MIG partition (GPU {}, instance {}) cannot be "
                           "removed: the plugin has no NVML",
                           entry.ns, entry.name, entry.mig_gpu, entry.mig_instance);
      }
      TESSERA_TRY(
          mig_->destroy(entry.mig_gpu, static_cast<device::MigInstanceId>(entry.mig_instance)));
    }
    return checkpoint_.erase(uid);
  }
  if (auto revoked = grants_.revoke(uid); !revoked) {
    return std::unexpected(revoked.error().with_context(
        fmt::format("claim {}/{}: tesserad did not revoke its grant", entry.ns, entry.name)));
  }
  return checkpoint_.erase(uid);
}

core::Result<CdiSpec> DraDriver::enforce(const ClaimAllocation& allocation, PreparedClaim& entry) {
  const ClaimRef& claim = allocation.claim;
  if (allocation.shares.front().mig) return make_partition(allocation, entry);
  CdiSpec spec = spec_for(allocation, entry.tenant);
  TESSERA_TRY(validate(spec));
  if (auto granted = grants_.grant(grant_request(allocation, entry.tenant)); !granted) {
    return std::unexpected(granted.error().with_context(
        fmt::format("claim {}/{}: tesserad did not grant its share", claim.ns, claim.name)));
  }
  return spec;
}

core::Result<CdiSpec> DraDriver::make_partition(const ClaimAllocation& allocation,
                                                PreparedClaim& entry) {
  const ClaimRef& claim = allocation.claim;
  const AllocatedShare& share = allocation.shares.front();
  if (mig_ == nullptr) {
    return core::failf(core::Domain::kK8s, core::Code::kUnsupported,
                       "claim {}/{} holds MIG partition {}, and the plugin has no NVML to make it",
                       claim.ns, claim.name, share.device);
  }
  const MigDeviceName& m = *share.mig;
  auto made = mig_->create(m.gpu, m.profile_id, m.start);
  if (!made) {
    return std::unexpected(made.error().with_context(
        fmt::format("claim {}/{}: MIG partition {}", claim.ns, claim.name, share.device)));
  }
  const auto gone = [&](core::Error error) {
    (void)mig_->destroy(m.gpu, made->id);
    return std::unexpected(std::move(error));
  };
  entry.mig_instance = static_cast<std::int64_t>(made->id);
  if (auto kept = checkpoint_.put(claim.uid, entry); !kept) return gone(kept.error());
  auto minors = core::read_file(options_.mig_minors_path,
                                {"MIG capability minors", core::Domain::kK8s, core::kMiB});
  // ASSUMPTION: the partition's one compute instance is its GPU instance's first, ci0 (tessera's
  // MIG level makes one per GPU instance).
  auto nodes = minors ? mig_cap_nodes(*minors, m.gpu, static_cast<int>(made->id), 0)
                      : core::Result<std::vector<std::string>>(std::unexpected(minors.error()));
  if (!nodes) return gone(nodes.error());
  CdiDevice device{.name = fmt::format("{}-{}", claim.uid, share.device), .edits = {}};
  device.edits.env = {"CUDA_VISIBLE_DEVICES=" + made->uuid};
  device.edits.device_nodes = *nodes;
  if (options_.nvidia_cdi_kind.empty()) {
    for (const auto& node : {fmt::format("/dev/nvidia{}", m.gpu), std::string("/dev/nvidiactl"),
                             std::string("/dev/nvidia-uvm")}) {
      device.edits.device_nodes.push_back(node);
    }
  }
  CdiSpec spec{.kind = cdi_kind(options_), .devices = {std::move(device)}, .common = {}};
  if (auto valid = validate(spec); !valid) return gone(valid.error());
  return spec;
}

core::Result<std::vector<PreparedDevice>> DraDriver::prepare(const ClaimRef& claim) {
  std::lock_guard lock(mu_);
  if (const PreparedClaim* done = checkpoint_.find(claim.uid)) {
    if (done->complete) return done->devices;
    // A prepare that did not finish (the plugin stopped in the middle): undone, then done again.
    TESSERA_TRY(undo(claim.uid, PreparedClaim(*done)));
  }
  TESSERA_ASSIGN_OR_RETURN(const json object, claims_.claim(claim.ns, claim.name));
  TESSERA_ASSIGN_OR_RETURN(
      const ClaimAllocation allocation,
      read_allocation(object, claim, options_.driver_name, options_.node_name));
  if (allocation.shares.size() != 1) {
    return core::failf(core::Domain::kK8s, core::Code::kUnsupported,
                       "claim {}/{} holds {} devices of {} on this node; a claim may hold one "
                       "(one tenant per claim): ask for each GPU in a claim of its own",
                       claim.ns, claim.name, allocation.shares.size(), options_.driver_name);
  }
  const AllocatedShare& share = allocation.shares.front();
  const std::string kind = cdi_kind(options_);
  PreparedDevice device{
      .request = share.request,
      .pool = share.pool,
      .device = share.device,
      .cdi_ids = {qualified_device_id(kind, fmt::format("{}-{}", claim.uid, share.device))}};
  if (!options_.nvidia_cdi_kind.empty()) {
    device.cdi_ids.push_back(
        qualified_device_id(options_.nvidia_cdi_kind, std::to_string(share.gpu)));
  }
  PreparedClaim entry{.ns = claim.ns,
                      .name = claim.name,
                      .complete = false,
                      .tenant = share.mig ? std::string() : tenant_for(claim),
                      .cdi_spec = spec_path(options_.cdi_dir, kind, claim.uid),
                      .devices = {device},
                      .mig_gpu = share.mig ? share.gpu : -1,
                      .mig_instance = -1};
  TESSERA_TRY(checkpoint_.put(claim.uid, entry));
  auto spec = enforce(allocation, entry);
  if (!spec) {
    (void)checkpoint_.erase(claim.uid);
    return std::unexpected(spec.error());
  }
  if (auto written = write_spec(entry.cdi_spec, *spec); !written) {
    if (auto undone = undo(claim.uid, entry); !undone) {
      core::logger().warn("claim {}/{}: {}", claim.ns, claim.name, undone.error().message());
    }
    return std::unexpected(written.error());
  }
  entry.complete = true;
  TESSERA_TRY(checkpoint_.put(claim.uid, entry));
  if (share.mig) {
    core::logger().info("claim {}/{} prepared: MIG partition {} (instance {})", claim.ns,
                        claim.name, share.device, entry.mig_instance);
    return entry.devices;
  }
  core::logger().info(
      "claim {}/{} prepared: tenant '{}' on GPU {} ({}, SM share {}, memory {})", claim.ns,
      claim.name, entry.tenant, share.gpu, daemon::tenant_class_name(share.settings.tenant_class),
      share.settings.sm_share,
      share.settings.memory_limit > 0 ? fmt::format("{} bytes", share.settings.memory_limit)
                                      : std::string("unlimited"));
  return entry.devices;
}

core::Status DraDriver::unprepare(const ClaimRef& claim) {
  std::lock_guard lock(mu_);
  const PreparedClaim* entry = checkpoint_.find(claim.uid);
  if (entry == nullptr) return {};
  const PreparedClaim copy = *entry;
  TESSERA_TRY(undo(claim.uid, copy));
  core::logger().info("claim {}/{} unprepared: tenant '{}' released", copy.ns, copy.name,
                      copy.tenant);
  return {};
}

}  // namespace tessera::dra
