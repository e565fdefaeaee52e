// Static memory estimates for DNN training and inference jobs (MIGM §3.2.2).

#include "tessera/mig/policy/memory_estimate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::mig {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// Bytes per parameter of model states (Rajbhandari et al., "ZeRO: Memory Optimizations Toward
// Training Trillion Parameter Models", SC'20, §3.1: mixed-precision Adam holds 2 B of FP16
// weights, 2 B of FP16 gradients, and 12 B of FP32 optimizer state (master weights, momentum,
// variance): "16 bytes per parameter"). SGD with momentum keeps one FP32 buffer, plain SGD none;
// under mixed precision both keep the FP32 master copy as well.
constexpr double kHalfBytes = 2;
constexpr double kFloatBytes = 4;

// cuBLAS workspace: the cuBLAS documentation (cublasSetWorkspace) recommends 32 MiB on Hopper
// and 4 MiB on earlier architectures; we take the larger so the estimate holds on every MIG GPU.
constexpr double kWorkspaceBytes = 32 * kMiB;

// ASSUMPTION: 500 MiB for the CUDA context and the framework runtime on the device (kernel
// images of PyTorch, cuBLAS and cuDNN, and the allocator's first segments). A PyTorch process
// that has touched CUDA commonly shows 300-500 MiB in nvidia-smi before allocating any tensor;
// we take the top of that range so the estimate errs on the large side.
constexpr double kFrameworkContextBytes = 500 * kMiB;

// Cross-entropy runs in FP32 under autocast (PyTorch AMP documentation, "CUDA Ops that can
// autocast to float32": log_softmax, nll_loss); its saved log-probabilities are 4 B each.
constexpr double kLossBytes = 4;

std::int64_t round_bytes(double b) {
  return static_cast<std::int64_t>(std::ceil(std::max(b, 0.0)));
}

double optimizer_bytes_per_param(Optimizer o, bool mixed_precision) {
  const double master = mixed_precision ? kFloatBytes : 0;
  switch (o) {
    case Optimizer::kAdam: return 2 * kFloatBytes + master;  // m and v in FP32
    case Optimizer::kSgdMomentum: return kFloatBytes + master;
    case Optimizer::kSgd: return master;
  }
  return master;
}

// --- BERT: Devlin et al. 2019 (BERT, Sec. 3: BASE L=12, H=768, A=12; LARGE L=24, H=1024,
// A=16; feed-forward 4H), as src/tessera/workload/models/bert.cpp builds it. ---
struct BertShape {
  double layers;
  double hidden;
  double heads;
};
constexpr BertShape kBertBase{.layers = 12, .hidden = 768, .heads = 12};
constexpr BertShape kBertLarge{.layers = 24, .hidden = 1024, .heads = 16};
constexpr double kBertVocab = 30522;
constexpr int kBertMaxSeq = 512;

// Saved activations of one sequence of s tokens.
//
// Per layer: Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
// Models", Eq. 1) give s b h (34 + 5 a s / h) bytes at 16-bit with a 1-byte dropout mask and a
// feed-forward of 4h. The 5 a s^2 b term is the attention scores, softmax output and its dropout
// mask; bert.cpp's FlashAttention-2 kernels do not keep them (they are recomputed in backward,
// dropout regenerated in-kernel), and save only the FP32 log-sum-exp per head and row (4 a s
// bytes). Embeddings: the LayerNorm input (2 s h) and the dropout mask (s h). Masked-LM head on
// every position: the transform's input, GELU input, LayerNorm input and decoder input
// (4 x 2 s h), and the loss's FP32 log-probabilities over the vocabulary (4 s V).
double bert_activation_bytes(const BertShape& bert, int seq_len) {
  const double s = std::clamp(seq_len, 1, kBertMaxSeq);
  const double h = bert.hidden;
  const double per_layer = s * h * 34 + 4 * bert.heads * s;
  const double embeddings = 3 * s * h;
  const double head = 8 * s * h + kLossBytes * s * kBertVocab;
  return bert.layers * per_layer + embeddings + head;
}

// --- ResNet-50 v1.5 on 224x224 images: He et al. 2016, Table 1, as
// src/tessera/workload/models/resnet50.cpp builds it (strides on the 3x3 convolutions, FP16
// activations, int64 max-pool indices). ---
constexpr int kImage = 224;
constexpr int kImageChannels = 3;
constexpr int kClasses = 1000;
constexpr std::array<int, 4> kStageBlocks = {3, 4, 6, 3};
constexpr std::array<int, 4> kStageWidths = {64, 128, 256, 512};
constexpr int kExpansion = 4;
constexpr double kResnetElemBytes = 2;
constexpr double kIndexBytes = 8;

struct FeatureMap {
  double c, h, w;
  double elems() const { return c * h * w; }
};

// One image's saved tensors, counted once each: a convolution saves its input (for the weight
// gradient); batch norm saves its input (the convolution's output); ReLU runs in place
// (torchvision) and saves its output, which is also the next convolution's input; the residual
// add saves nothing, and the ReLU after it saves the block's output. The stem's max pool saves
// its output and int64 indices; the head saves the pooled vector and the loss's log-probabilities.
double resnet50_activation_bytes() {
  double elems = 0;  // FP16 elements
  double other_bytes = 0;
  // Every convolution and the max pool pad by k/2, so out = (in - 1) / stride + 1 for any k.
  const auto conv_out = [](FeatureMap in, int cout, int stride) {
    return FeatureMap{static_cast<double>(cout), std::floor((in.h - 1) / stride) + 1,
                      std::floor((in.w - 1) / stride) + 1};
  };
  FeatureMap x{kImageChannels, kImage, kImage};
  elems += x.elems();  // the image, conv1's input
  x = conv_out(x, 64, 2);
  elems += 2 * x.elems();  // conv1 output, BN+ReLU output
  x = FeatureMap{x.c, std::floor((x.h - 1) / 2) + 1, std::floor((x.w - 1) / 2) + 1};  // max pool
  other_bytes += x.elems() * kIndexBytes;
  elems += x.elems();  // the pooled map, first block's input

  for (std::size_t s = 0; s < kStageBlocks.size(); ++s) {
    const int width = kStageWidths[s];
    for (int b = 0; b < kStageBlocks[s]; ++b) {
      const int stride = (b == 0 && s > 0) ? 2 : 1;
      const FeatureMap y1 = conv_out(x, width, 1);
      const FeatureMap y2 = conv_out(y1, width, stride);
      const FeatureMap y3 = conv_out(y2, width * kExpansion, 1);
      elems += 2 * y1.elems() + 2 * y2.elems();  // conv outputs and BN+ReLU outputs
      elems += y3.elems();                       // conv3 output (BN input)
      if (b == 0) elems += y3.elems();           // projection shortcut output (BN input)
      elems += y3.elems();                       // block output after add and ReLU
      x = y3;
    }
  }
  elems += x.c;  // the average-pooled vector, the classifier's input
  other_bytes += kClasses * kLossBytes;
  return elems * kResnetElemBytes + other_bytes;
}

}  // namespace

std::int64_t MemoryBreakdown::total() const {
  return weights + gradients + optimizer_state + activations + kv_cache + workspace +
         framework_context;
}

std::string MemoryBreakdown::describe() const {
  const std::pair<std::string_view, std::int64_t> parts[] = {
      {"weights", weights},
      {"gradients", gradients},
      {"optimizer state", optimizer_state},
      {"activations", activations},
      {"kv cache", kv_cache},
      {"workspace", workspace},
      {"framework context", framework_context},
  };
  std::string out;
  for (const auto& [name, bytes] : parts) {
    if (bytes == 0) continue;
    if (!out.empty()) out += " + ";
    const auto b = static_cast<double>(bytes);
    out += b >= kGiB ? fmt::format("{} {:.2f} GiB", name, b / kGiB)
                     : fmt::format("{} {:.1f} MiB", name, b / kMiB);
  }
  if (out.empty()) out = "nothing";
  out += fmt::format(" = total {:.2f} GiB", static_cast<double>(total()) / kGiB);
  return out;
}

MemoryBreakdown estimate_training(const TrainingMemoryInput& in) {
  const double p = std::max(in.parameters, 0.0);
  const double state_bytes = in.mixed_precision ? kHalfBytes : kFloatBytes;
  MemoryBreakdown m;
  m.weights = round_bytes(p * state_bytes);
  m.gradients = round_bytes(p * state_bytes);
  m.optimizer_state = round_bytes(p * optimizer_bytes_per_param(in.optimizer, in.mixed_precision));
  m.activations = round_bytes(std::max(in.batch, 0) * in.activation_bytes_per_sample);
  m.workspace = round_bytes(kWorkspaceBytes);
  m.framework_context = round_bytes(kFrameworkContextBytes);
  return m;
}

double activation_bytes_per_sample(std::string_view training_model, int seq_len) {
  if (training_model == "bert-base") return bert_activation_bytes(kBertBase, seq_len);
  if (training_model == "bert-large") return bert_activation_bytes(kBertLarge, seq_len);
  if (training_model == "resnet-50") return resnet50_activation_bytes();
  return 0;
}

Optimizer default_optimizer(const workload::TrainingModel& m) {
  return m.name == "resnet-50" ? Optimizer::kSgdMomentum : Optimizer::kAdam;
}

MemoryBreakdown estimate_training(const workload::TrainingModel& m, int batch, Optimizer optimizer,
                                  workload::Precision precision) {
  // activation_bytes_per_sample counts 16-bit activations.
  const double scale = workload::element_bytes(precision) / kHalfBytes;
  return estimate_training(TrainingMemoryInput{
      .parameters = m.parameters,
      .batch = batch,
      .optimizer = optimizer,
      .mixed_precision = workload::mixed_precision(precision),
      .activation_bytes_per_sample = activation_bytes_per_sample(m.name) * scale});
}

// Activations of inference: the largest set of intermediates live at once in one decode step of
// `batch` sequences (one new token each). FlashAttention-style kernels keep no s x s score
// matrix, so the MLP is the widest point: the residual stream (h), the fused gate/up output
// (2 x intermediate) and the activated product (intermediate), per expert a token is routed to,
// at the weights' precision; the LM head's FP32 logits over the vocabulary (4 V) may be wider,
// and the larger of the two is taken. Prefill is not counted: its intermediates grow with the
// prompt tokens processed at once, which the serving engine bounds (chunked prefill); the estimate
// covers steady decoding.
MemoryBreakdown estimate_inference(const workload::ModelConfig& m, int batch,
                                   std::int64_t context_tokens) {
  const double b = std::max(batch, 0);
  const double ctx = static_cast<double>(std::max<std::int64_t>(context_tokens, 0));
  // A mixture of experts holds the intermediates of each token's experts_per_token experts.
  const double experts = std::max(m.experts_per_token, 1);
  const double mlp =
      (static_cast<double>(m.hidden) + 3.0 * m.intermediate * experts) * m.bytes_per_param;
  const double logits = kLossBytes * m.vocab;
  MemoryBreakdown out;
  out.weights = round_bytes(m.weight_bytes());
  out.kv_cache = round_bytes(m.kv_bytes_per_token() * b * ctx);
  out.activations = round_bytes(b * std::max(mlp, logits));
  out.workspace = round_bytes(kWorkspaceBytes);
  out.framework_context = round_bytes(kFrameworkContextBytes);
  return out;
}

}  // namespace tessera::mig
