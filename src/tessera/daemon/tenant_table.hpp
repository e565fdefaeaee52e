#pragma once
// tesserad's tenants and its policy round, without sockets or clocks: the server adds and removes
// tenants as their connections come and go and calls tick(now) on its timer. A round reads each
// tenant's activity from its assignment page, builds one gpu::RemapSnapshot per device, asks the
// node policy (node_policy.hpp: the same policy objects the simulator's modes run) for each
// tenant's assignment and writes each changed one to its page.
//
// What the snapshot holds of a tenant: it "has work" when it launched within `idle_after` (the
// interposer does not track kernel completion). Its graph launches are its steps: a serving engine
// that captures its decode step launches one graph per token, and the interposer times each on
// the GPU, so a tenant that launched graphs within `idle_after` is decoding, its next work is a
// decode step and the last step's time and SMs are its decode observation; cogpu then sizes its
// partition to its TPOT target (slo_demand). Without graphs (or a target) a latency-critical
// tenant with work asks for every usable SM. Prefill steps are not told apart. priority-fill
// needs only whether each tenant has work.

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"
#include "tessera/daemon/assignment_page.hpp"
#include "tessera/daemon/control_protocol.hpp"
#include "tessera/daemon/node_policy.hpp"
#include "tessera/gpu/policy/physical_contexts.hpp"

namespace tessera::daemon {

// How assignments reach the GPU.
//   green-contexts: the policy's assignments; each process launches into a green context of its
//                   SM range, or on the whole GPU, on a stream of its assigned priority (needs a
//                   driver with green contexts, and MPS for two processes to run at once).
//   gate:           no partitions: a best-effort process's launches are held while a
//                   latency-critical process on the GPU has work (each for at most the
//                   interposer's hold limit), and go to the whole GPU otherwise; latency-critical
//                   processes always launch on the whole GPU. Works on every driver; the policy
//                   is not asked.
//   mps-percentage: every process launches on the whole GPU as an MPS client, capped at a fixed
//                   share of the SMs: a tenant with an SM share (TESSERA_SM_SHARE, or one set
//                   with `ctl set --sm-share` and kept in the settings file) is told
//                   CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = its share in percent, rounded up, in
//                   its registration reply, and the interposer sets it before CUDA starts in
//                   the process (it registers at cuInit). MPS reads it once, so the cap holds
//                   for the process's life; caps may overlap (they limit, they do not reserve).
//                   Needs MPS (--mps, or a control daemon of one's own); the policy is not asked.
enum class Mechanism { kGreenContexts, kGate, kMpsPercentage };
std::string_view mechanism_name(Mechanism m);
core::Result<Mechanism> mechanism_named(std::string_view name);

struct TableOptions {
  // A tenant that launched within this long has work. ASSUMPTION: 20 ms spans the gaps between a
  // serving engine's steps (a few ms of host time each) without keeping an idle tenant's SMs long.
  core::Nanos idle_after = core::millis(20);
  // A latency-critical tenant's partition is not shrunk sooner than this after it last changed
  // (the cogpu runtime's remap_min_residency default).
  core::Nanos min_residency = core::millis(2);
  int max_tenants = 64;
  Mechanism mechanism = Mechanism::kGreenContexts;
  // For the policies that take options, also when `ctl policy` switches to one.
  NodePolicyOptions policy;
};

// A tenant as the table and its page last said: for `ctl list` and the metrics.
struct TenantView {
  std::string name;
  std::string claim;  // the grant it registered under; "": none
  int pid = 0;
  int device = 0;
  TenantSettings settings;
  daemon_abi::Assignment assignment;
  bool has_work = false;
  std::uint64_t assignment_changes = 0;
  // From the page, as the tenant's interposer wrote it.
  std::uint64_t launches = 0;
  std::uint64_t routed_sms = 0;  // SMs of the partition its last routed launch ran in
  std::uint64_t held_launches = 0;
  core::Nanos held = 0;
  std::uint64_t hold_timeouts = 0;
  std::uint64_t memory_used = 0;
  std::uint64_t memory_limit = 0;  // 0: none
  std::uint64_t memory_refused = 0;
  std::uint64_t steps = 0;  // timed graph launches
  core::Nanos last_step = 0;
  std::uint64_t last_step_sms = 0;
};

class TenantTable {
 public:
  // One grid per device the daemon owns, indexed by the device ordinal tenants register with.
  TenantTable(std::vector<gpu::PartitionGrid> devices, std::unique_ptr<NodePolicy> policy,
              TableOptions options = {});

  // Registers a tenant whose page the caller owns and keeps mapped until remove(). Under a
  // granted name it gets the grant's device and settings instead of the request's. Fails
  // (kInvalidArgument) on a name already registered, a device the daemon does not own, an SM
  // share the device cannot give, or a full table. Returns the tenant's id. Its page starts with
  // kHoldSms and the memory limit of its settings; the next tick assigns it.
  core::Result<int> add(const RegisterRequest& request, daemon_abi::AssignmentPage* page,
                        core::Nanos now);
  void remove(int id);
  core::Status set(const SetRequest& request);

  // Reserves `grant.tenant` for a claim: its device and settings for every registration under
  // that name. Returns true when the same grant is already held. Fails (kInvalidArgument),
  // changing nothing, on the claim granted with other fields, the tenant name granted to another
  // claim, a device the daemon does not own, or an SM share the device has not free: a device's
  // grants and the registered tenants under none add up to at most 1; and (kResourceExhausted)
  // when it holds max_tenants grants, as many as can register. A tenant already registered
  // under the name keeps its settings; the grant applies from the next registration.
  core::Result<bool> grant(const GrantRequest& grant);
  // Drops the claim's grant; false when there was none. Tenants registered under it keep their
  // settings and count as tenants under no grant.
  bool revoke(std::string_view claim);
  // The grant of tenant name `tenant`, if any.
  std::optional<GrantRequest> grant_for(std::string_view tenant) const;
  const std::vector<GrantRequest>& grants() const { return grants_; }

  core::Status set_policy(std::string_view name);
  std::string_view policy_name() const { return policy_->name(); }
  // What a tenant registering with `settings` should be told of how the policy serves it.
  std::string note_for(const TenantSettings& settings) const {
    return policy_->note(settings.tenant_class == TenantClass::kLatencyCritical,
                         settings.tpot_slo > 0 || settings.ttft_slo > 0);
  }
  Mechanism mechanism() const { return options_.mechanism; }
  // The CUDA_MPS_ACTIVE_THREAD_PERCENTAGE a tenant registering with `settings` is told: under
  // mps-percentage its SM share in percent, rounded up (1 to 100); 0 (nothing to set) otherwise
  // or without a share.
  int mps_percentage(const TenantSettings& settings) const;

  // One policy round; returns how many assignments changed.
  int tick(core::Nanos now);

  std::vector<TenantView> tenants() const;
  nlohmann::json to_json() const;
  std::size_t size() const;
  const std::vector<gpu::PartitionGrid>& devices() const { return devices_; }
  std::uint64_t rounds() const { return rounds_; }
  // priority-fill's reserve per device under NodePolicyOptions::slo_guided; empty otherwise.
  std::vector<int> reserves() const {
    return options_.policy.slo_guided ? reserve_ : std::vector<int>{};
  }

 private:
  struct Tenant {
    int id = 0;
    RegisterRequest registration;
    std::string claim;  // the grant it registered under, until revoked; "": none
    daemon_abi::AssignmentPage* page = nullptr;
    std::uint64_t launches_seen = 0;
    bool has_work = false;
    int sms = 0;  // the size last assigned
    core::Nanos last_change = 0;
    std::uint32_t sequence = 0;
    std::uint64_t changes = 0;
    std::uint64_t steps_seen = 0;
    gpu::PhaseObservation decode;  // its last timed graph launch
    core::Nanos last_step_seen = 0;
    bool new_step = false;  // a step finished since the last round
  };
  Tenant* find(std::string_view name);
  core::Status check_device(int device) const;
  // The SM share `device` has promised, leaving out tenant `tenant` and claim `claim`: each
  // grant's (or, where a tenant registered under it was `set` to more, that tenant's) and each
  // registered tenant's under no grant.
  double promised_shares(int device, std::string_view tenant, std::string_view claim) const;
  // Refuses a share for `tenant` (registered under `claim`, or "") that would take the SM shares
  // promised on `device` past 1.
  core::Status check_shares(int device, std::string_view tenant, std::string_view claim,
                            double share) const;
  void decide(int device, core::Nanos now, int& changes);
  // Each tenant's next assignment from the policy (sequence numbers left 0); nullopt when the
  // tenants keep theirs.
  std::optional<std::vector<daemon_abi::Assignment>> ask_policy(const std::vector<Tenant*>& on,
                                                                int device, core::Nanos now) const;
  // With NodePolicyOptions::slo_guided: each served tenant's step timed since the last round
  // moves the device's reserve (gpu::next_reserve, against half its TPOT target).
  void follow_slack(int device, const std::vector<Tenant*>& on);
  static std::vector<daemon_abi::Assignment> gate(const std::vector<Tenant*>& on);
  // Every tenant on the whole GPU (mps-percentage: MPS holds each to its cap).
  static std::vector<daemon_abi::Assignment> whole_gpu(const std::vector<Tenant*>& on);

  std::vector<gpu::PartitionGrid> devices_;
  std::unique_ptr<NodePolicy> policy_;
  TableOptions options_;
  std::vector<int> reserve_;     // per device: priority-fill's reserve under slo_guided
  std::vector<Tenant> tenants_;  // in registration order: the policy's attach order
  std::vector<GrantRequest> grants_;
  int next_id_ = 1;
  std::uint64_t rounds_ = 0;
};

}  // namespace tessera::daemon
