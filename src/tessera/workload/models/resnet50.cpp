// ResNet-50 training iteration on 224x224 images (He et al. 2016, "Deep Residual Learning for
// Image Recognition", Table 1): conv1 7x7/64 stride 2, 3x3 max pool stride 2, four stages of
// [3, 4, 6, 3] bottleneck blocks of widths 64/128/256/512 expanded x4, global average pool,
// 1000-way fully connected layer. Strides sit on the 3x3 convolutions (the "v1.5" variant of
// torchvision and NVIDIA's DeepLearningExamples, the one training benchmarks run).
//
// Every kernel is derived from the layer shapes: convolutions are implicit GEMMs; the backward
// pass computes a data gradient and a weight gradient per convolution (each as many FLOPs as
// the forward), batch-norm and ReLU backward are memory-bound; SGD with momentum ends the step.

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tessera/workload/kernels/gemm_shapes.hpp"
#include "tessera/workload/kernels/memory_bound.hpp"
#include "tessera/workload/kernels/optimizer.hpp"
#include "tessera/workload/models/internal/training_units.hpp"
#include "tessera/workload/models/training.hpp"

namespace tessera::workload {

namespace {

constexpr int kImageSize = 224;
constexpr int kImageChannels = 3;
constexpr int kClasses = 1000;
constexpr int kStageBlocks[] = {3, 4, 6, 3};
constexpr int kStageWidths[] = {64, 128, 256, 512};
constexpr int kExpansion = 4;
constexpr double kIndexBytes = 8;  // int64 max-pool indices (PyTorch max_pool2d_with_indices)

// Assumptions: arithmetic per value of memory-bound layers, counted from their formulas.
// Batch norm: statistics accumulate a sum and a sum of squares (2 per value); the apply pass
// subtracts, scales and shifts (3); backward reduces dY and dY*x (3), then forms dX (5).
constexpr double kBnStatsFlops = 2;
constexpr double kBnApplyFlops = 3;
constexpr double kBnBwdReduceFlops = 3;
constexpr double kBnBwdApplyFlops = 5;
constexpr double kPoolWindow = 9;  // 3x3 max pool: a compare per window element

struct Act {  // one image's activation shape
  std::int64_t c;
  std::int64_t h;
  std::int64_t w;
  std::int64_t per_image() const { return c * h * w; }
};

struct ConvNames {
  std::string_view fprop;
  std::string_view dgrad;
  std::string_view wgrad;
};

ConvNames conv_names(int k) {
  switch (k) {
    case 7: return {"conv7x7_fprop", "conv7x7_dgrad", "conv7x7_wgrad"};
    case 3: return {"conv3x3_fprop", "conv3x3_dgrad", "conv3x3_wgrad"};
    default: return {"conv1x1_fprop", "conv1x1_dgrad", "conv1x1_wgrad"};
  }
}

class Builder {
 public:
  // Activations, weights and gradients are stored in `precision`'s format, and the convolutions
  // and the classifier run on its pipe.
  Builder(int batch, Precision precision)
      : batch_(batch), precision_(precision), elem_(element_bytes(precision)) {}

  double values(Act a) const { return static_cast<double>(batch_) * a.per_image(); }

  // A k x k convolution with "same"-style padding (k/2). The stem convolution needs no data
  // gradient: its input is the image.
  Act conv(TrainingUnit& u, Act in, int cout, int k, int stride, bool data_grad = true) {
    const Act out{cout, (in.h + 2 * (k / 2) - k) / stride + 1,
                  (in.w + 2 * (k / 2) - k) / stride + 1};
    const ConvNames names = conv_names(k);
    const std::int64_t kk = static_cast<std::int64_t>(k) * k;
    const double weights = static_cast<double>(cout) * in.c * kk;
    const double x_bytes = values(in) * elem_;
    const double y_bytes = values(out) * elem_;
    const double w_bytes = weights * elem_;
    const std::int64_t out_pixels = batch_ * out.h * out.w;

    u.forward.push_back(make_gemm({.name = names.fprop,
                                   .kind = KernelClass::kConv,
                                   .m = out_pixels,
                                   .n = cout,
                                   .k = in.c * kk,
                                   .a_bytes = x_bytes,
                                   .b_bytes = w_bytes,
                                   .c_bytes = y_bytes,
                                   .precision = precision_}));
    std::vector<Kernel> bwd;
    if (data_grad) {
      // dX = dY (*) W^T over the input pixels. A strided convolution's data gradient does as
      // many multiply-adds as its forward pass (cuDNN skips the inserted zeros), so the GEMM's
      // K is the forward's multiply-adds per input pixel and channel.
      const std::int64_t in_pixels = batch_ * in.h * in.w;
      bwd.push_back(make_gemm({.name = names.dgrad,
                               .kind = KernelClass::kConv,
                               .m = in_pixels,
                               .n = in.c,
                               .k = out_pixels * cout * kk / in_pixels,
                               .a_bytes = y_bytes,
                               .b_bytes = w_bytes,
                               .c_bytes = x_bytes,
                               .precision = precision_}));
    }
    // dW = dY^T x im2col(X): the output is small and K spans every output pixel of the batch.
    bwd.push_back(make_gemm({.name = names.wgrad,
                             .kind = KernelClass::kConv,
                             .m = cout,
                             .n = in.c * kk,
                             .k = out_pixels,
                             .a_bytes = y_bytes,
                             .b_bytes = x_bytes,
                             .c_bytes = w_bytes,
                             .precision = precision_}));
    u.backward_by_op.push_back(std::move(bwd));
    u.parameters += weights;
    return out;
  }

  // Training-mode batch norm, as PyTorch's CUDA implementation launches it: a statistics
  // kernel whose blocks each reduce a slice of the batch and combine per-channel partial sums
  // across blocks (a cross-block reduction: not block-independent), then a pointwise kernel
  // that normalises, scales and shifts. Backward mirrors it: a reduction of dY and dY*x per
  // channel, then the elementwise input gradient.
  void batchnorm(TrainingUnit& u, Act a) {
    const double v = values(a);
    const auto blocks = elementwise_blocks(static_cast<std::int64_t>(v));
    u.forward.push_back(memory_bound({.name = "batchnorm_stats",
                                      .kind = KernelClass::kReduction,
                                      .blocks = blocks,
                                      .flops = kBnStatsFlops * v,
                                      .bytes = v * elem_,
                                      .block_independent = false}));
    u.forward.push_back(memory_bound({.name = "batchnorm_apply",
                                      .kind = KernelClass::kPointwise,
                                      .blocks = blocks,
                                      .flops = kBnApplyFlops * v,
                                      .bytes = 2 * v * elem_}));
    u.backward_by_op.push_back({memory_bound({.name = "batchnorm_bwd_reduce",
                                              .kind = KernelClass::kReduction,
                                              .blocks = blocks,
                                              .flops = kBnBwdReduceFlops * v,
                                              .bytes = 2 * v * elem_,  // dy, x
                                              .block_independent = false}),
                                memory_bound({.name = "batchnorm_bwd_apply",
                                              .kind = KernelClass::kPointwise,
                                              .blocks = blocks,
                                              .flops = kBnBwdApplyFlops * v,
                                              .bytes = 3 * v * elem_})});  // dy, x, dx
    u.parameters += 2.0 * static_cast<double>(a.c);                        // gamma, beta
  }

  void relu(TrainingUnit& u, Act a) {
    const double v = values(a);
    const auto blocks = elementwise_blocks(static_cast<std::int64_t>(v));
    u.forward.push_back(memory_bound({.name = "relu_fwd",
                                      .kind = KernelClass::kPointwise,
                                      .blocks = blocks,
                                      .flops = v,
                                      .bytes = 2 * v * elem_}));
    u.backward_by_op.push_back({memory_bound({.name = "relu_bwd",
                                              .kind = KernelClass::kPointwise,
                                              .blocks = blocks,
                                              .flops = v,
                                              .bytes = 3 * v * elem_})});
  }

  // The block input feeds both branches; in backward their gradients are summed here.
  void fork(TrainingUnit& u, Act a) {
    const double v = values(a);
    u.backward_by_op.push_back(
        {memory_bound({.name = "residual_grad_add",
                       .kind = KernelClass::kPointwise,
                       .blocks = elementwise_blocks(static_cast<std::int64_t>(v)),
                       .flops = v,
                       .bytes = 3 * v * elem_})});
  }

  void residual_add(TrainingUnit& u, Act a) {
    const double v = values(a);
    u.forward.push_back(memory_bound({.name = "residual_add",
                                      .kind = KernelClass::kPointwise,
                                      .blocks = elementwise_blocks(static_cast<std::int64_t>(v)),
                                      .flops = v,
                                      .bytes = 3 * v * elem_}));
    u.backward_by_op.emplace_back();  // the gradient passes to both branches unchanged
  }

  Act maxpool(TrainingUnit& u, Act in) {
    const Act out{in.c, (in.h + 2 - 3) / 2 + 1, (in.w + 2 - 3) / 2 + 1};  // 3x3, stride 2, pad 1
    const double vin = values(in);
    const double vout = values(out);
    u.forward.push_back(memory_bound({.name = "maxpool_fwd",
                                      .kind = KernelClass::kReduction,
                                      .blocks = elementwise_blocks(static_cast<std::int64_t>(vout)),
                                      .flops = kPoolWindow * vout,
                                      .bytes = vin * elem_ + vout * (elem_ + kIndexBytes)}));
    u.backward_by_op.push_back(
        {memory_bound({.name = "maxpool_bwd",
                       .kind = KernelClass::kElementwise,
                       .blocks = elementwise_blocks(static_cast<std::int64_t>(vin)),
                       .flops = vout,
                       .bytes = vout * (elem_ + kIndexBytes) + vin * elem_})});
    return out;
  }

  Act avgpool(TrainingUnit& u, Act in) {
    const Act out{in.c, 1, 1};
    const double vin = values(in);
    const double vout = values(out);
    u.forward.push_back(memory_bound({.name = "avgpool_fwd",
                                      .kind = KernelClass::kReduction,
                                      .blocks = elementwise_blocks(static_cast<std::int64_t>(vout)),
                                      .flops = vin,
                                      .bytes = (vin + vout) * elem_}));
    u.backward_by_op.push_back(
        {memory_bound({.name = "avgpool_bwd",
                       .blocks = elementwise_blocks(static_cast<std::int64_t>(vin)),
                       .flops = vin,
                       .bytes = (vin + vout) * elem_})});
    return out;
  }

  void fully_connected(TrainingUnit& u, Act in, int classes) {
    const std::int64_t b = batch_;
    const double weights = static_cast<double>(classes) * in.c;
    const double x_bytes = values(in) * elem_;
    const double y_bytes = static_cast<double>(b) * classes * elem_;
    const double w_bytes = weights * elem_;
    const double bias_flops = static_cast<double>(b) * classes;
    u.forward.push_back(make_gemm({.name = "fc_fwd",
                                   .m = b,
                                   .n = classes,
                                   .k = in.c,
                                   .a_bytes = x_bytes,
                                   .b_bytes = w_bytes + classes * elem_,
                                   .c_bytes = y_bytes,
                                   .epilogue_flops = bias_flops,
                                   .precision = precision_}));
    u.backward_by_op.push_back(
        {make_gemm({.name = "fc_dgrad",
                    .m = b,
                    .n = in.c,
                    .k = classes,
                    .a_bytes = y_bytes,
                    .b_bytes = w_bytes,
                    .c_bytes = x_bytes,
                    .precision = precision_}),
         // The bias gradient (a column sum of dY) rides in the weight-gradient epilogue.
         make_gemm({.name = "fc_wgrad",
                    .m = classes,
                    .n = in.c,
                    .k = b,
                    .a_bytes = y_bytes,
                    .b_bytes = x_bytes,
                    .c_bytes = w_bytes + classes * elem_,
                    .epilogue_flops = bias_flops,
                    .precision = precision_})});
    u.parameters += weights + classes;
  }

  // Softmax cross-entropy over the class scores: one block per image.
  void loss(TrainingUnit& u, int classes) {
    const double v = static_cast<double>(batch_) * classes;
    const MemoryBoundDesc fwd{.name = "softmax_xent_fwd",
                              .kind = KernelClass::kReduction,
                              .blocks = batch_,
                              .threads = row_threads(classes),
                              .flops = 5 * v,  // max, subtract, exp, sum, log
                              .bytes = v * elem_};
    u.forward.push_back(memory_bound(fwd));
    MemoryBoundDesc bwd = fwd;
    bwd.name = "softmax_xent_bwd";
    bwd.kind = KernelClass::kElementwise;
    bwd.bytes = 2 * v * elem_;
    u.backward_by_op.push_back({memory_bound(bwd)});
  }

 private:
  std::int64_t batch_;
  Precision precision_;
  double elem_;
};

TrainingIteration build(int batch, Precision precision) {
  Builder net(std::max(batch, 1), precision);
  std::vector<TrainingUnit> units;

  TrainingUnit stem;
  Act x{kImageChannels, kImageSize, kImageSize};
  x = net.conv(stem, x, 64, 7, 2, /*data_grad=*/false);
  net.batchnorm(stem, x);
  net.relu(stem, x);
  x = net.maxpool(stem, x);
  units.push_back(std::move(stem));

  for (int s = 0; s < 4; ++s) {
    const int width = kStageWidths[s];
    const int out_c = width * kExpansion;
    for (int first = 1; first >= 0; --first) {
      // The first block of a stage changes shape (projection shortcut); the rest are
      // identical and form one repeated unit.
      TrainingUnit block;
      block.repeat = first ? 1 : kStageBlocks[s] - 1;
      const int stride = (first && s > 0) ? 2 : 1;
      const Act in = x;
      net.fork(block, in);
      Act y = net.conv(block, in, width, 1, 1);
      net.batchnorm(block, y);
      net.relu(block, y);
      y = net.conv(block, y, width, 3, stride);
      net.batchnorm(block, y);
      net.relu(block, y);
      y = net.conv(block, y, out_c, 1, 1);
      net.batchnorm(block, y);
      if (first) {
        const Act shortcut = net.conv(block, in, out_c, 1, stride);
        net.batchnorm(block, shortcut);
      }
      net.residual_add(block, y);
      net.relu(block, y);
      x = y;
      units.push_back(std::move(block));
    }
  }

  TrainingUnit head;
  x = net.avgpool(head, x);
  net.fully_connected(head, x, kClasses);
  net.loss(head, kClasses);
  units.push_back(std::move(head));

  return assemble_iteration(units, sgd_momentum_step);
}

}  // namespace

KernelSequence resnet50_iteration(int batch, Precision precision) {
  return build(batch, precision).sequence;
}

double resnet50_parameters() {
  return build(1, Precision::kBf16).parameters;
}

}  // namespace tessera::workload
