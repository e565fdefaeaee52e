#pragma once
// Optimizer steps as PyTorch's multi-tensor ("foreach"/fused) implementations launch them: one
// kernel over every parameter, one block per 65,536-element chunk.
//
// Mixed precision (an assumption about the training setup, in the style of apex O2 and NVIDIA's
// DeepLearningExamples): FP16 model weights and gradients for the forward and backward passes,
// FP32 master weights and optimizer state updated here, which also writes the FP16 copy back.

#include "tessera/workload/kernels/kernel.hpp"

namespace tessera::workload {

// SGD with momentum and weight decay over `parameters` values.
Kernel sgd_momentum_step(double parameters);

// AdamW (decoupled weight decay) over `parameters` values.
Kernel adamw_step(double parameters);

}  // namespace tessera::workload
