#include "tessera/tenant/inference_server.hpp"

#include <algorithm>
#include <memory>
#include <numeric>

namespace tessera::tenant {

using core::Code;
using core::Domain;

InferenceServer::InferenceServer(gpu::TenantId id, InferenceConfig config,
                                 std::vector<workload::Request> requests, gpu::SharingMode& mode,
                                 device::Executor& executor, metrics::Timeline* timeline,
                                 int timeline_track)
    : id_(id),
      config_(std::move(config)),
      requests_(std::move(requests)),
      mode_(mode),
      executor_(executor),
      timeline_(timeline),
      timeline_track_(timeline_track),
      generated_(requests_.size(), 0),
      kv_(config_.kv_cache, requests_.size()) {
  records_.reserve(requests_.size());
  for (const auto& r : requests_) {
    records_.push_back(metrics::RequestRecord{.id = r.id,
                                              .arrival = r.arrival,
                                              .first_token = -1,
                                              .finished = -1,
                                              .input_tokens = r.input_tokens,
                                              .output_tokens = r.output_tokens});
  }
}

core::Status InferenceServer::validate() const {
  if (auto model = config_.model.validate(); !model) {
    return std::unexpected(
        model.error().with_context(fmt::format("inference server '{}'", config_.name)));
  }
  if (auto tp = workload::validate(config_.model, config_.tensor_parallel); !tp) {
    return std::unexpected(
        tp.error().with_context(fmt::format("inference server '{}'", config_.name)));
  }
  if (auto kv = workload::validate(config_.kv_cache); !kv) {
    return std::unexpected(
        kv.error().with_context(fmt::format("inference server '{}'", config_.name)));
  }
  if (auto engine = workload::validate(config_.engine); !engine) {
    return std::unexpected(
        engine.error().with_context(fmt::format("inference server '{}'", config_.name)));
  }
  if (config_.max_num_seqs < 1 || config_.max_batched_tokens < 1) {
    return core::failf(Domain::kWorkload, Code::kInvalidArgument,
                       "inference server '{}': max_num_seqs ({}) and max_batched_tokens ({}) must "
                       "be at least 1",
                       config_.name, config_.max_num_seqs, config_.max_batched_tokens);
  }
  for (const auto& r : requests_) {
    if (r.input_tokens < 1 || r.output_tokens < 1 || r.arrival < 0) {
      return core::failf(Domain::kWorkload, Code::kInvalidArgument,
                         "inference server '{}': request {} has {} input and {} output tokens at "
                         "time {} ns; each request needs at least one of each and a time >= 0",
                         config_.name, r.id, r.input_tokens, r.output_tokens, r.arrival);
    }
  }
  return {};
}

void InferenceServer::start() {
  if (auto ok = validate(); !ok) {
    failure_ = ok.error();
    return;
  }
  arrival_order_.resize(requests_.size());
  std::iota(arrival_order_.begin(), arrival_order_.end(), std::size_t{0});
  std::stable_sort(
      arrival_order_.begin(), arrival_order_.end(),
      [this](std::size_t a, std::size_t b) { return requests_[a].arrival < requests_[b].arrival; });
  next_arrival_ = 0;
  schedule_next_arrival();
}

// One timer at a time, for the next arrival: a long trace never fills the event queue.
void InferenceServer::schedule_next_arrival() {
  if (next_arrival_ >= arrival_order_.size()) return;
  executor_.schedule_at(requests_[arrival_order_[next_arrival_]].arrival,
                        [this] { on_arrivals(); });
}

void InferenceServer::on_arrivals() {
  // Everything arriving at this instant joins together, so the scheduler sees them all at once.
  const core::Nanos now = executor_.now();
  while (next_arrival_ < arrival_order_.size() &&
         requests_[arrival_order_[next_arrival_]].arrival <= now) {
    waiting_.push_back(arrival_order_[next_arrival_++]);
  }
  schedule_next_arrival();
  maybe_start_iteration();
}

void InferenceServer::maybe_start_iteration() {
  if (busy_ || failure_) return;
  const auto max_seqs = static_cast<std::size_t>(config_.max_num_seqs);
  // A prompt the whole cache cannot hold is dropped, like vLLM's scheduler ignores it.
  while (!waiting_.empty() &&
         kv_.admission(prefill_tokens(waiting_.front())) == workload::KvCache::Admission::kNever) {
    ++rejected_;
    waiting_.pop_front();
  }
  workload::KernelSequence step;
  lengths_.clear();
  if (!waiting_.empty() && running_.size() < max_seqs &&
      kv_.admission(prefill_tokens(waiting_.front())) == workload::KvCache::Admission::kNow) {
    // Admit FIFO while the prompts fit the token budget (the first always fits), the running
    // set stays within max_num_seqs and the KV cache has their blocks.
    in_flight_.clear();
    int tokens = 0;
    while (!waiting_.empty() && running_.size() + in_flight_.size() < max_seqs) {
      const std::size_t next = waiting_.front();
      const int prompt = prefill_tokens(next);
      if (!in_flight_.empty() && tokens + prompt > config_.max_batched_tokens) break;
      const auto admission = kv_.admission(prompt);
      if (admission == workload::KvCache::Admission::kLater) break;
      waiting_.pop_front();
      if (admission == workload::KvCache::Admission::kNever) {
        ++rejected_;
        continue;
      }
      kv_.allocate(next, prompt);
      tokens += prompt;
      in_flight_.push_back(next);
      lengths_.push_back(prompt);
    }
    in_flight_is_prefill_ = true;
    in_flight_tokens_ = tokens;
    step = workload::tp_prefill_step(config_.model, config_.tensor_parallel, lengths_);
    step.mid_generation = !running_.empty();
  } else if (!running_.empty()) {
    reserve_decode_slots();
    // Only a sequence that outgrew the whole cache preempts itself with nothing else running.
    if (running_.empty()) return maybe_start_iteration();
    for (const std::size_t i : running_)
      lengths_.push_back(requests_[i].input_tokens + generated_[i]);
    in_flight_is_prefill_ = false;
    in_flight_tokens_ = static_cast<int>(running_.size());
    step = workload::tp_decode_step(config_.model, config_.tensor_parallel, lengths_);
    step.graph = config_.cuda_graphs;
    step.mid_generation = true;
  } else {
    return;
  }
  busy_ = true;
  auto sequence = std::make_shared<const workload::KernelSequence>(std::move(step));
  const core::Nanos before =
      config_.engine.before_step(sequence->phase, config_.tensor_parallel.degree);
  if (before > 0) {
    executor_.schedule_at(executor_.now() + before,
                          [this, sequence = std::move(sequence)]() mutable { submit(sequence); });
  } else {
    submit(std::move(sequence));
  }
}

void InferenceServer::submit(workload::KernelSequencePtr step) {
  auto submitted =
      mode_.submit(id_, std::move(step), iteration_++,
                   [this](const device::SubmissionDone& done) { on_iteration_done(done); });
  if (!submitted) {
    busy_ = false;
    failure_ = submitted.error().with_context(
        fmt::format("inference server '{}' could not submit an iteration", config_.name));
  }
}

int InferenceServer::prefill_tokens(std::size_t request) const {
  return requests_[request].input_tokens + generated_[request];
}

void InferenceServer::reserve_decode_slots() {
  // In admission order, as vLLM's scheduler walks its running queue; victims come off its back.
  for (std::size_t k = 0; k < running_.size(); ++k) {
    const std::size_t i = running_[k];
    const std::int64_t tokens = requests_[i].input_tokens + generated_[i];
    while (!kv_.can_grow(i, tokens) && running_.back() != i) {
      preempt(running_.back());
      running_.pop_back();
    }
    if (kv_.can_grow(i, tokens)) {
      kv_.grow(i, tokens);
    } else {
      preempt(i);  // the last one running
      running_.pop_back();
    }
  }
}

void InferenceServer::preempt(std::size_t request) {
  // Its blocks are freed and it waits at the front, to be recomputed: taken from the back, the
  // earliest-admitted victim ends up first.
  kv_.free(request);
  waiting_.push_front(request);
  ++preemptions_;
}

void InferenceServer::finish(std::size_t request, core::Nanos now) {
  records_[request].finished = now;
  kv_.free(request);
}

KvCacheStats InferenceServer::kv_stats() const {
  return KvCacheStats{.peak_used_blocks = kv_.peak_used_blocks(),
                      .preemptions = preemptions_,
                      .rejected = rejected_};
}

void InferenceServer::on_iteration_done(const device::SubmissionDone& done) {
  const auto sequences = in_flight_is_prefill_ ? in_flight_.size() : running_.size();
  const core::Nanos after = config_.engine.after_step(static_cast<int>(sequences));
  if (after > 0) {
    executor_.schedule_at(done.finished + after,
                          [this, done, after] { finish_iteration(done, done.finished + after); });
  } else {
    finish_iteration(done, done.finished);
  }
}

void InferenceServer::finish_iteration(const device::SubmissionDone& done, core::Nanos now) {
  busy_ = false;
  std::size_t batch = 0;
  if (in_flight_is_prefill_) {
    batch = in_flight_.size();
    for (const std::size_t i : in_flight_) {
      // A recomputed request had its first token before it was preempted.
      if (generated_[i] == 0) records_[i].first_token = now;
      if (++generated_[i] >= requests_[i].output_tokens) {
        finish(i, now);
      } else {
        running_.push_back(i);
      }
    }
    in_flight_.clear();
  } else {
    batch = running_.size();
    for (const std::size_t i : running_) {
      if (++generated_[i] >= requests_[i].output_tokens) finish(i, now);
    }
    std::erase_if(running_, [this](std::size_t i) { return records_[i].done(); });
  }
  if (timeline_ != nullptr && timeline_track_ >= 0) {
    timeline_->add_span(timeline_track_, in_flight_is_prefill_ ? "prefill" : "decode",
                        done.submitted, done.finished,
                        {{"batch", batch}, {"tokens", in_flight_tokens_}});
  }
  maybe_start_iteration();
}

}  // namespace tessera::tenant
