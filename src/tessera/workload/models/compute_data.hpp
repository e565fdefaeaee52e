#pragma once
// The data of the compute models, generated on the HOST by this one piece of code, so
// the CUDA models (src/tessera/backends/cuda/decode_step.hpp) and the host reference
// (src/tessera/experiment/determinism_reference.hpp) start from the same bits: a splitmix64 stream
// per tensor, each draw mapped to an fp16 value in [-1, 1). Also the fp16 <-> fp32 conversions, the
// layouts and the FNV-1a 64 based checksum both sides use. Header-only and free of device code.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tessera::workload::compute_data {

// --- shapes -------------------------------------------------------------------------------------

// The decode model "decode". Layouts (all dense, no padding):
//   embedding E: V rows of H fp16, row v = token v's vector (E[v * H + i])
//   LM head W:   V rows of H fp16 (W[v * H + i]); as a column-major matrix that is H x V, so the
//                GEMM is logits = W^T(col-major) * h, i.e. op(A) = transpose
//   hidden h:    B rows of H fp16 (h[b * H + i]) = column-major H x B
//   logits:      B rows of V fp32 (logits[b * V + v]) = column-major V x B
//   probs:       same layout as logits (softmax over each row of V)
//   tokens:      B int32; the first step's input token of sequence b is b (initial_token)
struct DecodeShape {
  int batch = 4;      // B
  int hidden = 1024;  // H
  int vocab = 32000;  // V (a multiple of 16 keeps cuBLASLt's fp16 alignment rules happy)
};

// The training-like model "train": C[M x N] = A[M x K] * B[K x N], fp16 in, fp32 out. Layouts:
// A, B, C column-major (A[m + k * M], B[k + n * K], C[m + n * M]).
struct TrainShape {
  int m = 2048;
  int n = 2048;
  int k = 2048;
};

inline std::int32_t initial_token(int sequence) {
  return sequence;
}

// --- generator ----------------------------------------------------------------------------------

// Which tensor a stream fills: part of the stream's starting state, so each tensor is independent
// of the others' sizes.
enum class Tensor : std::uint64_t {
  kDecodeEmbedding = 1,
  kDecodeLmHead = 2,
  kTrainA = 3,
  kTrainB = 4,
};

// splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014;
// the constants of Vigna's reference splitmix64.c).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t state) : state_(state) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

// The stream of `tensor` for `seed`: starting state seed XOR (tensor id * a 64-bit odd constant,
// 0xd1b54a32d192ed03 from Steele & Vigna's LCG multiplier tables), so tensor streams differ
// even for seed 0.
inline SplitMix64 tensor_stream(std::uint64_t seed, Tensor tensor) {
  return SplitMix64(seed ^ (static_cast<std::uint64_t>(tensor) * 0xd1b54a32d192ed03ULL));
}

// --- fp16 <-> fp32 ------------------------------------------------------------------------------

// IEEE 754 binary16 bits -> float, exact for every input (normals, subnormals, inf, NaN).
inline float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits = 0;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal: shift the mantissa up until its leading 1 becomes the implicit bit.
    std::uint32_t e = 113;  // exponent of 2^-14, the smallest normal fp16's, rebiased
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

// float -> binary16 bits, round to nearest, ties to even (what __float2half_rn does); overflow
// gives inf, NaN stays NaN (quiet).
inline std::uint16_t float_to_fp16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (abs < 0x38800000u) {
    // Below 2^-14: an fp16 subnormal (or zero). Value = mant24 * 2^(e-150); in units of 2^-24
    // that is mant24 >> (126 - e), rounded to nearest even.
    if (abs < 0x33000000u) return sign;  // < 2^-25: rounds to zero (2^-25 itself is a tie to 0)
    const std::uint32_t e = abs >> 23;
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - e;
    std::uint32_t q = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u) != 0)) ++q;
    return static_cast<std::uint16_t>(sign | q);
  }
  // Normal: rebias 127 -> 15 and round the 13 dropped mantissa bits; a carry into the exponent
  // is the correct result (including up to inf).
  std::uint32_t h = ((abs >> 23) - 112u) << 10 | ((abs >> 13) & 0x3ffu);
  const std::uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0)) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

// One draw -> an fp16 value in [-1, 1): the top 12 bits as k in [0, 4096), value (k - 2048) /
// 2048. Every such value is exactly representable in fp16 (|k - 2048| <= 2048 needs 11
// significant bits) and in fp32, so no rounding is involved; products of two carry 22 fraction
// bits, so fp32 sums of them round and the summation order shows in the result (the drift the
// harness looks for).
inline std::uint16_t draw_fp16(SplitMix64& stream) {
  const auto k = static_cast<std::int32_t>(stream.next() >> 52);
  return float_to_fp16(static_cast<float>(k - 2048) / 2048.0f);
}

// Fills `out` in index order from the stream of (seed, tensor).
inline void fill_fp16(std::uint64_t seed, Tensor tensor, std::span<std::uint16_t> out) {
  SplitMix64 stream = tensor_stream(seed, tensor);
  for (auto& v : out) v = draw_fp16(stream);
}

inline std::vector<std::uint16_t> generate_fp16(std::uint64_t seed, Tensor tensor,
                                                std::size_t count) {
  std::vector<std::uint16_t> out(count);
  fill_fp16(seed, tensor, out);
  return out;
}

// --- checksum -----------------------------------------------------------------------------------

// A kernel's output checksum: FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3)
// in a fixed two-level shape, so a GPU computes it in parallel and the host gets the same value:
//  1. the output buffer (the layout above, elements in index order, each little-endian as host
//     and GPU store them) is cut into chunks of kChecksumChunkBytes (the last one may be shorter);
//  2. each chunk's FNV-1a 64 from the offset basis;
//  3. the checksum is FNV-1a 64 over those chunk hashes in chunk order, each as 8 little-endian
//     bytes. An empty buffer has the offset basis as its checksum.
// The shape depends only on the buffer's size, never on where or how the kernel ran.
inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
inline constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;
inline constexpr std::size_t kChecksumChunkBytes = 1024;

inline std::uint64_t fnv1a64(std::span<const std::byte> bytes, std::uint64_t hash = kFnvOffset) {
  for (std::byte b : bytes) {
    hash ^= static_cast<std::uint64_t>(b);
    hash *= kFnvPrime;
  }
  return hash;
}

inline std::size_t checksum_chunks(std::size_t bytes) {
  return (bytes + kChecksumChunkBytes - 1) / kChecksumChunkBytes;
}

inline std::uint64_t checksum(std::span<const std::byte> bytes) {
  std::uint64_t hash = kFnvOffset;
  for (std::size_t offset = 0; offset < bytes.size(); offset += kChecksumChunkBytes) {
    const std::size_t n = std::min(kChecksumChunkBytes, bytes.size() - offset);
    std::uint64_t chunk = fnv1a64(bytes.subspan(offset, n));
    for (int i = 0; i < 8; ++i) {
      hash ^= chunk & 0xffu;
      hash *= kFnvPrime;
      chunk >>= 8;
    }
  }
  return hash;
}

template <typename T>
std::uint64_t checksum_of(std::span<const T> values) {
  return checksum(std::as_bytes(values));
}

}  // namespace tessera::workload::compute_data
