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
      generated_(requests_.size(), 0) {
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
  if (config_.kv_cache_tokens < 0) {
    return core::failf(Domain::kWorkload, Code::kInvalidArgument,
                       "inference server '{}': kv_cache_tokens ({}) must be 0 (no limit) or more",
                       config_.name, config_.kv_cache_tokens);
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
  workload::KernelSequence step;
  lengths_.clear();
  if (!waiting_.empty() && running_.size() < max_seqs && fits_kv_cache(waiting_.front())) {
    // Admit FIFO while the prompts fit the token budget (the first always fits), the running
    // set stays within max_num_seqs and the KV cache (when limited) holds their contexts.
    in_flight_.clear();
    int tokens = 0;
    while (!waiting_.empty() && running_.size() + in_flight_.size() < max_seqs) {
      const std::size_t next = waiting_.front();
      const int prompt = requests_[next].input_tokens;
      if (!in_flight_.empty() && tokens + prompt > config_.max_batched_tokens) break;
      if (!fits_kv_cache(next)) break;
      kv_reserved_ += static_cast<std::int64_t>(prompt) + requests_[next].output_tokens;
      tokens += prompt;
      in_flight_.push_back(next);
      lengths_.push_back(prompt);
      waiting_.pop_front();
    }
    in_flight_is_prefill_ = true;
    in_flight_tokens_ = tokens;
    step = workload::tp_prefill_step(config_.model, config_.tensor_parallel, lengths_);
  } else if (!running_.empty()) {
    for (const std::size_t i : running_)
      lengths_.push_back(requests_[i].input_tokens + generated_[i]);
    in_flight_is_prefill_ = false;
    in_flight_tokens_ = static_cast<int>(running_.size());
    step = workload::tp_decode_step(config_.model, config_.tensor_parallel, lengths_);
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

bool InferenceServer::fits_kv_cache(std::size_t request) const {
  if (config_.kv_cache_tokens <= 0 || kv_reserved_ == 0) return true;
  const auto& r = requests_[request];
  return kv_reserved_ + r.input_tokens + r.output_tokens <= config_.kv_cache_tokens;
}

void InferenceServer::release(std::size_t request) {
  kv_reserved_ -=
      static_cast<std::int64_t>(requests_[request].input_tokens) + requests_[request].output_tokens;
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
      generated_[i] = 1;
      records_[i].first_token = now;
      if (requests_[i].output_tokens == 1) {
        records_[i].finished = now;
        release(i);
      } else {
        running_.push_back(i);
      }
    }
    in_flight_.clear();
  } else {
    batch = running_.size();
    for (const std::size_t i : running_) {
      if (++generated_[i] >= requests_[i].output_tokens) {
        records_[i].finished = now;
        release(i);
      }
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
