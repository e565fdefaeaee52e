#pragma once
// The scenario simulator's pending pods (not a public header), one queue per shape. A scheduling
// pass gives up on a shape at its first pod that neither fits nor preempts; kept apart, the rest of
// that shape's pods are skipped without being read, so a pass costs O(shapes + pods bound) times
// log, where sorting every pending pod cost O(pending log pending).

#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "tessera/cluster/state/pod.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"

namespace tessera::sim::detail {

// What makes pending pods interchangeable in a pass: priority, QoS, topology requirement, request.
using PendingShape =
    std::tuple<std::int32_t, cluster::Qos, cluster::TopologyRequirement, int, std::int64_t, int>;
PendingShape pending_shape(const cluster::Pod& pod);

class PendingQueue {
 public:
  // Queues `job`, a pod of `shape` pending since `since`.
  void push(const PendingShape& shape, core::Nanos since, int job);
  // Removes what push(shape, since, job) queued.
  void erase(const PendingShape& shape, core::Nanos since, int job);
  std::size_t size() const { return size_; }
  // The queued jobs in the order they were pushed.
  std::vector<int> jobs_in_push_order() const;

  // One scheduling pass over the jobs queued when it begins, highest priority first, then longest
  // pending, then lowest job id. `visit(job)` returns a core::Result<bool>: false skips the rest
  // of that job's shape in this pass; an error ends the pass. It may push and erase; jobs pushed
  // during the pass wait for the next one.
  template <class Visit>
  core::Status pass(Visit visit);

 private:
  using Key = std::pair<core::Nanos, int>;  // (since, job): the order within a shape
  struct Head {
    Key key;
    PendingShape shape;
  };
  // a before b in a pass.
  static bool before(const Head& a, const Head& b) {
    return std::tie(std::get<0>(b.shape), a.key) < std::tie(std::get<0>(a.shape), b.key);
  }
  // The first job of `shape` after `after` (from the start when nullopt) pushed before `seq`.
  std::optional<Head> next(const PendingShape& shape, std::optional<Key> after,
                           std::uint64_t seq) const;

  std::map<PendingShape, std::map<Key, std::uint64_t>> queues_;  // per shape: key -> push order
  std::size_t size_ = 0;
  std::uint64_t next_seq_ = 0;
};

template <class Visit>
core::Status PendingQueue::pass(Visit visit) {
  const std::uint64_t seq = next_seq_;
  auto later = [](const Head& a, const Head& b) { return before(b, a); };
  std::priority_queue<Head, std::vector<Head>, decltype(later)> heads(later);
  for (const auto& entry : queues_) {
    if (auto head = next(entry.first, std::nullopt, seq)) heads.push(std::move(*head));
  }
  while (!heads.empty()) {
    const Head head = heads.top();
    heads.pop();
    core::Result<bool> go_on = visit(head.key.second);
    if (!go_on) return std::unexpected(go_on.error());
    if (!*go_on) continue;
    if (auto then = next(head.shape, head.key, seq)) heads.push(std::move(*then));
  }
  return {};
}

}  // namespace tessera::sim::detail
