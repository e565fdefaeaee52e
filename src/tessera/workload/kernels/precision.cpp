#include "tessera/workload/kernels/precision.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace tessera::workload {

namespace {

constexpr std::array<std::pair<Precision, std::string_view>, 5> kNames{{
    {Precision::kFp8, "fp8"},
    {Precision::kBf16, "bf16"},
    {Precision::kFp16, "fp16"},
    {Precision::kTf32, "tf32"},
    {Precision::kFp32, "fp32"},
}};

}  // namespace

std::string_view to_string(Precision p) {
  for (const auto& [value, name] : kNames) {
    if (value == p) return name;
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view text) {
  for (const auto& [value, name] : kNames) {
    if (std::ranges::equal(text, name,
                           [](unsigned char a, unsigned char b) { return std::tolower(a) == b; })) {
      return value;
    }
  }
  return std::nullopt;
}

int element_bytes(Precision p) {
  switch (p) {
    case Precision::kFp8: return 1;
    case Precision::kBf16:
    case Precision::kFp16: return 2;
    case Precision::kTf32:
    case Precision::kFp32: return 4;
  }
  return 2;
}

}  // namespace tessera::workload
