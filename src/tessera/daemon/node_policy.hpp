#pragma once
// The policies tesserad runs on each GPU: pure functions from a snapshot of the GPU's tenants to
// one assignment per tenant (daemon_abi::Assignment: a hold, the whole GPU, or an SM range, each
// with a stream priority). The same policy objects the simulator's modes run decide; this layer
// only turns their answer into ranges a process can launch into.
//
//   cogpu, tpot-first: the remap policies of the cogpu runtime (gpu/policy/remap_policy.hpp);
//                      their sizes are laid out as disjoint SM ranges from SM 0 upwards.
//   static-partitions: fixed disjoint slices from each tenant's SM share (an even split of the
//                      rest for tenants without one), whether or not the tenants have work: the
//                      baseline of hard isolation.
//   priority-fill:     the policy of the priority-fill mode (gpu/policy/fill_policy.hpp):
//                      protected tenants (latency-critical with a TPOT or TTFT target) launch on
//                      the whole GPU at high stream priority; best-effort tenants are held to the
//                      highest-numbered `best_effort_share` of the SMs while one of them has work,
//                      and get the whole GPU when none has. Ranges overlap: the stream priority
//                      and the reserve, not disjoint SMs, protect the inference.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/daemon/assignment_page.hpp"
#include "tessera/gpu/policy/remap_policy.hpp"

namespace tessera::daemon {

// What a round gives a policy beside the tenants' snapshot.
struct PolicyInputs {
  std::span<const std::string> names;  // the tenants', same order, for errors
  // priority-fill's reserve as the table's slack controller keeps it (NodePolicyOptions::
  // slo_guided); 0: the policy's fixed share.
  int reserve_sms = 0;
};

class NodePolicy {
 public:
  virtual ~NodePolicy() = default;
  virtual std::string_view name() const = 0;
  // One assignment per tenant of snapshot.tenants, same order (sequence numbers 0). nullopt: the
  // tenants keep their assignments.
  virtual std::optional<std::vector<daemon_abi::Assignment>> decide(
      const gpu::RemapSnapshot& snapshot, const PolicyInputs& inputs) const = 0;
  // What a tenant registering as `latency_critical`, with or without a TTFT or TPOT target,
  // should be told of how this policy serves it; empty: nothing to tell.
  virtual std::string note(bool /*latency_critical*/, bool /*has_target*/) const { return {}; }
};

struct NodePolicyOptions {
  // priority-fill's knob (PriorityFillOptions::best_effort_share), in (0, 1].
  double best_effort_share = 0.05;
  // priority-fill's reserve follows the served tenants' timed steps against their TPOT targets
  // (PriorityFillOptions::slo_guided), from best_effort_share up.
  bool slo_guided = false;
};

// The policy named `name`; an unknown name or a share outside (0, 1] gets an error that says so
// (listing the known names).
core::Result<std::unique_ptr<NodePolicy>> make_node_policy(std::string_view name,
                                                           const NodePolicyOptions& options = {});
std::string node_policy_names();
inline constexpr std::string_view kDefaultNodePolicy = "priority-fill";

}  // namespace tessera::daemon
