#pragma once
// An LLM inference server with continuous (iteration-level) batching, in the manner of vLLM:
// each iteration either prefills newly admitted requests or runs one decode step for every
// running request. Each iteration is submitted through the sharing mode as one kernel sequence,
// after the engine's CPU time before it; its tokens are out after the engine's time after it.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "tessera/gpu/sharing_mode.hpp"
#include "tessera/metrics/latency.hpp"
#include "tessera/metrics/timeline.hpp"
#include "tessera/workload/arrivals.hpp"
#include "tessera/workload/models/tensor_parallel.hpp"
#include "tessera/workload/models/transformer.hpp"
#include "tessera/workload/serving/engine_costs.hpp"
#include "tessera/workload/serving/kv_cache.hpp"

namespace tessera::tenant {

// What the KV cache went through in a run.
struct KvCacheStats {
  std::int64_t peak_used_blocks = 0;
  std::uint64_t preemptions = 0;  // running sequences sent back to be recomputed
  std::size_t rejected = 0;       // prompts larger than the whole cache, never served
};

struct InferenceConfig {
  std::string name;
  workload::ModelConfig model;
  int max_num_seqs = 256;         // vLLM's default cap on running sequences
  int max_batched_tokens = 8192;  // prompt tokens admitted into one prefill batch
  // The model sharded over this many GPUs, its collectives timed on the host link; the server
  // submits the first GPU's kernels (workload/tensor_parallel.hpp). Degree 1 (the default): one
  // GPU, the unsharded model. Declared with {} so initializer lists that skip it stay warning-free.
  workload::TensorParallel tensor_parallel{};
  // The paged KV cache (workload/serving/kv_cache.hpp): admissions wait for blocks, running
  // sequences grow block by block and preempt the latest-admitted when none is free, and a
  // prompt that cannot fit the whole cache is dropped, as vLLM does. No limit by default.
  workload::KvCacheConfig kv_cache{};
  // The engine's CPU time around each iteration's GPU step, during which this server's GPU work
  // waits (workload/serving/engine_costs.hpp). None by default: the experiments' figures are the
  // GPU's alone until they are re-run with the fitted costs (a scenario's `engine: fitted`).
  workload::EngineCosts engine = workload::kNoEngineCosts;
  // Decode steps captured as CUDA graphs and launched in one call, prefills launched kernel by
  // kernel: vLLM's default (false is its enforce_eager). What a launch costs the host is the
  // simulated GPU's host_launch and graph_launch.
  bool cuda_graphs = true;
  metrics::Slo slo;
};

class InferenceServer {
 public:
  InferenceServer(gpu::TenantId id, InferenceConfig config, std::vector<workload::Request> requests,
                  gpu::SharingMode& mode, device::Executor& executor,
                  metrics::Timeline* timeline = nullptr, int timeline_track = -1);

  // Schedules the arrivals; work then flows as the executor runs. Requests may come in any order;
  // they are served in order of arrival. The server must outlive the executor's run.
  void start();
  const InferenceConfig& config() const { return config_; }
  const std::vector<metrics::RequestRecord>& records() const { return records_; }
  // Any submission the mode refused (the run should stop and report it).
  const std::optional<core::Error>& failure() const { return failure_; }
  KvCacheStats kv_stats() const;

 private:
  core::Status validate() const;
  void schedule_next_arrival();
  void on_arrivals();
  void maybe_start_iteration();
  void submit(workload::KernelSequencePtr step);
  void on_iteration_done(const device::SubmissionDone& done);
  // Its tokens are out at `now`.
  void finish_iteration(const device::SubmissionDone& done, core::Nanos now);
  // The tokens a (re)admitted request's prefill processes: its prompt, and after a preemption
  // the tokens it had generated too.
  int prefill_tokens(std::size_t request) const;
  // Takes a block for every running sequence that needs one for this decode step, preempting
  // from the latest-admitted when the cache is full.
  void reserve_decode_slots();
  void preempt(std::size_t request);
  void finish(std::size_t request, core::Nanos now);

  gpu::TenantId id_;
  InferenceConfig config_;
  std::vector<workload::Request> requests_;
  gpu::SharingMode& mode_;
  device::Executor& executor_;
  metrics::Timeline* timeline_;
  int timeline_track_;

  std::vector<metrics::RequestRecord> records_;  // indexed like requests_
  std::vector<std::size_t> arrival_order_;       // request indices sorted by arrival
  std::size_t next_arrival_ = 0;                 // position in arrival_order_
  std::deque<std::size_t> waiting_;
  std::vector<std::size_t> running_;    // decoding
  std::vector<std::size_t> in_flight_;  // admitted by the prefill in flight
  std::vector<int> generated_;          // tokens produced so far, per request
  std::vector<int> lengths_;            // scratch: the lengths handed to the step builders
  bool busy_ = false;
  bool in_flight_is_prefill_ = false;
  int in_flight_tokens_ = 0;  // prompt tokens (prefill) or sequences (decode)
  workload::KvCache kv_;
  std::uint64_t preemptions_ = 0;
  std::size_t rejected_ = 0;
  std::uint64_t iteration_ = 0;
  std::optional<core::Error> failure_;
};

}  // namespace tessera::tenant
