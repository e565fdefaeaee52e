#pragma once
// An LLM inference server with continuous (iteration-level) batching, in the manner of vLLM:
// each iteration either prefills newly admitted requests or runs one decode step for every
// running request. Each iteration is submitted through the sharing mode as one kernel sequence.

#include <cstdint>
#include <deque>
#include <vector>

#include "tessera/gpu/sharing_mode.hpp"
#include "tessera/metrics/latency.hpp"
#include "tessera/metrics/timeline.hpp"
#include "tessera/workload/arrivals.hpp"
#include "tessera/workload/transformer.hpp"

namespace tessera::tenant {

struct InferenceConfig {
  std::string name;
  workload::ModelConfig model;
  int max_num_seqs = 256;          // vLLM's default cap on running sequences
  int max_batched_tokens = 8192;   // prompt tokens admitted into one prefill batch
  metrics::Slo slo;
};

class InferenceServer {
 public:
  InferenceServer(gpu::TenantId id, InferenceConfig config, std::vector<workload::Request> requests,
                  gpu::SharingMode& mode, device::Executor& executor,
                  metrics::Timeline* timeline = nullptr, int timeline_track = -1);

  // Schedules the arrivals; work then flows as the executor runs.
  void start();
  const InferenceConfig& config() const { return config_; }
  const std::vector<metrics::RequestRecord>& records() const { return records_; }
  // Any submission the mode refused (the run should stop and report it).
  const std::optional<core::Error>& failure() const { return failure_; }

 private:
  void on_arrival(std::size_t index);
  void maybe_start_iteration();
  void on_iteration_done(const device::SubmissionDone& done);

  gpu::TenantId id_;
  InferenceConfig config_;
  std::vector<workload::Request> requests_;
  gpu::SharingMode& mode_;
  device::Executor& executor_;
  metrics::Timeline* timeline_;
  int timeline_track_;

  std::vector<metrics::RequestRecord> records_;  // indexed like requests_
  std::deque<std::size_t> waiting_;
  std::vector<std::size_t> running_;   // decoding
  std::vector<std::size_t> in_flight_; // in the current iteration
  std::vector<int> generated_;         // tokens produced so far, per request
  bool busy_ = false;
  bool in_flight_is_prefill_ = false;
  std::uint64_t iteration_ = 0;
  std::optional<core::Error> failure_;
};

}  // namespace tessera::tenant
