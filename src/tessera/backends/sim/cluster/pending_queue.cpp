#include "tessera/backends/sim/cluster/internal/pending_queue.hpp"

#include <algorithm>

namespace tessera::sim::detail {

PendingShape pending_shape(const cluster::Pod& pod) {
  return {pod.priority,    pod.qos, pod.topology, pod.request.gpus, pod.request.memory_bytes,
          pod.request.cpus};
}

void PendingQueue::push(const PendingShape& shape, core::Nanos since, int job) {
  queues_[shape].emplace(Key{since, job}, next_seq_++);
  ++size_;
}

void PendingQueue::erase(const PendingShape& shape, core::Nanos since, int job) {
  const auto q = queues_.find(shape);
  if (q == queues_.end() || q->second.erase(Key{since, job}) == 0) return;
  --size_;
  if (q->second.empty()) queues_.erase(q);
}

std::vector<int> PendingQueue::jobs_in_push_order() const {
  std::vector<std::pair<std::uint64_t, int>> all;
  all.reserve(size_);
  for (const auto& [shape, queue] : queues_) {
    for (const auto& [key, seq] : queue) all.emplace_back(seq, key.second);
  }
  std::sort(all.begin(), all.end());
  std::vector<int> jobs;
  jobs.reserve(all.size());
  for (const auto& [seq, job] : all) jobs.push_back(job);
  return jobs;
}

std::optional<PendingQueue::Head> PendingQueue::next(const PendingShape& shape,
                                                     std::optional<Key> after,
                                                     std::uint64_t seq) const {
  const auto q = queues_.find(shape);
  if (q == queues_.end()) return std::nullopt;
  for (auto it = after ? q->second.upper_bound(*after) : q->second.begin(); it != q->second.end();
       ++it) {
    if (it->second < seq) return Head{.key = it->first, .shape = shape};
  }
  return std::nullopt;
}

}  // namespace tessera::sim::detail
