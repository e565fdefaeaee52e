#pragma once
// The number format a kernel computes in, which decides the pipe it runs on: FP8 and BF16/FP16
// and TF32 on the tensor cores (FP8 on Hopper and later), FP32 on the CUDA cores.

#include <optional>
#include <string_view>

namespace tessera::workload {

enum class Precision { kFp8, kBf16, kFp16, kTf32, kFp32 };

std::string_view to_string(Precision p);
// "fp8", "bf16", "fp16", "tf32", "fp32" (case-insensitive); nullopt for anything else.
std::optional<Precision> parse_precision(std::string_view text);
// Bytes of one element stored in this format (TF32 is stored as FP32).
int element_bytes(Precision p);

}  // namespace tessera::workload
