#include "tessera/experiment/determinism_reference.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <span>

#include "tessera/workload/models/compute_steps.hpp"

namespace tessera::experiment {

namespace cd = workload::compute_data;
namespace cs = workload::compute_steps;
using core::Code;
using core::Domain;

std::string_view to_string(GemmVariant v) {
  return v == GemmVariant::kFixed ? "fixed" : "drift";
}

core::Result<std::unique_ptr<HostDecodeModel>> HostDecodeModel::create(
    const HostDecodeOptions& options) {
  const auto& s = options.shape;
  if (s.batch <= 0 || s.hidden <= 0 || s.vocab <= 0) {
    return core::failf(Domain::kWorkload, Code::kInvalidArgument,
                       "host decode model: batch {}, hidden {} and vocab {} must all be > 0",
                       s.batch, s.hidden, s.vocab);
  }
  if (options.sms_per_split <= 0) {
    return core::failf(Domain::kWorkload, Code::kInvalidArgument,
                       "host decode model: sms_per_split {} must be > 0", options.sms_per_split);
  }
  return std::unique_ptr<HostDecodeModel>(new HostDecodeModel(options));
}

HostDecodeModel::HostDecodeModel(const HostDecodeOptions& options)
    : options_(options),
      sequence_(cs::decode_step_sequence(options.shape)),
      kernel_order_{cs::kDecodeEmbed, cs::kDecodeLmHead, cs::kDecodeSoftmax, cs::kDecodeArgmax} {}

core::Status HostDecodeModel::reset(std::uint64_t seed) {
  const auto b = static_cast<std::size_t>(options_.shape.batch);
  const auto h = static_cast<std::size_t>(options_.shape.hidden);
  const auto v = static_cast<std::size_t>(options_.shape.vocab);
  embedding_ = cd::generate_fp16(seed, cd::Tensor::kDecodeEmbedding, v * h);
  const auto w = cd::generate_fp16(seed, cd::Tensor::kDecodeLmHead, v * h);
  w_t_.assign(h * v, 0.0f);
  for (std::size_t row = 0; row < v; ++row) {
    for (std::size_t i = 0; i < h; ++i) w_t_[i * v + row] = cd::fp16_to_float(w[row * h + i]);
  }
  tokens_.resize(b);
  for (std::size_t s = 0; s < b; ++s) tokens_[s] = cd::initial_token(static_cast<int>(s));
  hidden_.assign(b * h, 0);
  logits_.assign(b * v, 0.0f);
  probs_.assign(b * v, 0.0f);
  next_tokens_.assign(b, 0);
  checksums_.clear();
  next_kernel_ = 0;
  seeded_ = true;
  return {};
}

int HostDecodeModel::gemm_splits(int partition_sms) const {
  if (options_.variant == GemmVariant::kFixed) return 1;
  return std::clamp(partition_sms / options_.sms_per_split, 1, options_.shape.hidden);
}

core::Status HostDecodeModel::run_kernel(std::string_view kernel,
                                         const workload::ComputeSite& site) {
  if (!seeded_) {
    return core::failf(Domain::kWorkload, Code::kFailedPrecondition,
                       "host decode model: run_kernel('{}') before reset(seed)", kernel);
  }
  if (next_kernel_ >= kernel_order_.size() || kernel != kernel_order_[next_kernel_]) {
    return core::failf(Domain::kWorkload, Code::kFailedPrecondition,
                       "host decode model: kernel '{}' launched where the step expects '{}'; a "
                       "step runs {} in order, then finish_step()",
                       kernel,
                       next_kernel_ < kernel_order_.size() ? kernel_order_[next_kernel_]
                                                           : std::string_view("finish_step()"),
                       fmt::join(kernel_order_, ", "));
  }
  // The model kernels are not block-independent (compute_steps.cpp): a launch covers the grid.
  const auto& k = sequence_->groups.front().kernels[next_kernel_];
  if (site.block_end - site.block_begin != k.blocks && site.block_end != site.block_begin) {
    return core::failf(Domain::kWorkload, Code::kFailedPrecondition,
                       "host decode model: '{}' launched over blocks [{}, {}) of {}; its kernels "
                       "run whole grids only",
                       kernel, site.block_begin, site.block_end, k.blocks);
  }
  switch (next_kernel_) {
    case 0:
      embed();
      checksums_.push_back(cd::checksum_of(std::span<const std::uint16_t>(hidden_)));
      break;
    case 1:
      lm_head(site.partition_sms);
      checksums_.push_back(cd::checksum_of(std::span<const float>(logits_)));
      break;
    case 2:
      softmax();
      checksums_.push_back(cd::checksum_of(std::span<const float>(probs_)));
      break;
    default:
      argmax();
      checksums_.push_back(cd::checksum_of(std::span<const std::int32_t>(next_tokens_)));
      break;
  }
  ++next_kernel_;
  return {};
}

void HostDecodeModel::embed() {
  const auto h = static_cast<std::size_t>(options_.shape.hidden);
  const auto v = static_cast<std::size_t>(options_.shape.vocab);
  for (std::size_t s = 0; s < tokens_.size(); ++s) {
    // A token outside the vocabulary cannot come from argmax; the first step's are b < B, and B
    // is not checked against V, so wrap rather than read outside the table.
    const auto row = static_cast<std::size_t>(tokens_[s]) % v;
    std::copy_n(embedding_.begin() + static_cast<std::ptrdiff_t>(row * h), h,
                hidden_.begin() + static_cast<std::ptrdiff_t>(s * h));
  }
}

void HostDecodeModel::lm_head(int partition_sms) {
  const auto h = static_cast<std::size_t>(options_.shape.hidden);
  const auto v = static_cast<std::size_t>(options_.shape.vocab);
  const auto splits = static_cast<std::size_t>(gemm_splits(partition_sms));
  std::vector<float> partial(v);
  for (std::size_t s = 0; s < tokens_.size(); ++s) {
    std::span<float> out(logits_.data() + s * v, v);
    std::fill(out.begin(), out.end(), 0.0f);
    for (std::size_t c = 0; c < splits; ++c) {
      // Chunk c of K: [c * H / splits, (c + 1) * H / splits), summed in k order.
      std::fill(partial.begin(), partial.end(), 0.0f);
      for (std::size_t i = c * h / splits; i < (c + 1) * h / splits; ++i) {
        const float x = cd::fp16_to_float(hidden_[s * h + i]);
        const float* w = w_t_.data() + i * v;
        for (std::size_t j = 0; j < v; ++j) partial[j] += w[j] * x;
      }
      for (std::size_t j = 0; j < v; ++j) out[j] += partial[j];
    }
  }
}

void HostDecodeModel::softmax() {
  const auto v = static_cast<std::size_t>(options_.shape.vocab);
  for (std::size_t s = 0; s < tokens_.size(); ++s) {
    const float* x = logits_.data() + s * v;
    float* p = probs_.data() + s * v;
    float m = x[0];
    for (std::size_t j = 1; j < v; ++j) m = std::max(m, x[j]);
    float sum = 0.0f;
    for (std::size_t j = 0; j < v; ++j) {
      p[j] = std::exp(x[j] - m);
      sum += p[j];
    }
    for (std::size_t j = 0; j < v; ++j) p[j] /= sum;
  }
}

void HostDecodeModel::argmax() {
  const auto v = static_cast<std::size_t>(options_.shape.vocab);
  for (std::size_t s = 0; s < tokens_.size(); ++s) {
    const float* p = probs_.data() + s * v;
    std::size_t best = 0;
    for (std::size_t j = 1; j < v; ++j) {
      if (p[j] > p[best]) best = j;  // strictly greater: the lowest index wins ties
    }
    next_tokens_[s] = static_cast<std::int32_t>(best);
  }
}

core::Result<workload::StepOutput> HostDecodeModel::finish_step() {
  if (next_kernel_ != kernel_order_.size()) {
    return core::failf(Domain::kWorkload, Code::kFailedPrecondition,
                       "host decode model: finish_step() after {} of the step's {} kernels",
                       next_kernel_, kernel_order_.size());
  }
  workload::StepOutput out;
  out.tokens = next_tokens_;
  for (std::size_t i = 0; i < kernel_order_.size(); ++i) {
    out.kernel_checksums.emplace_back(std::string(kernel_order_[i]), checksums_[i]);
  }
  tokens_ = next_tokens_;
  checksums_.clear();
  next_kernel_ = 0;
  return out;
}

}  // namespace tessera::experiment
