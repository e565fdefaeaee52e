// Launch parameters of the compute models' kernels
// (src/tessera/backends/cuda/kernels/decode_kernels.cu), shared by the kernels and the host code
// that launches them (decode_step.cpp). The same conventions as kernel_params.h: plain C,
// fixed-width fields, one by-value pointer-free struct per kernel, device pointers as CUdeviceptr
// values. Layouts of the data: src/tessera/workload/models/compute_data.hpp.
//
// None of these kernels depends on the grid's placement: each thread's and block's share of the
// work, and the order of every reduction, follow from the shapes alone, so the same inputs give
// the same bits on any number of SMs (the determinism harness relies on it).
#ifndef TESSERA_CUDA_DECODE_KERNELS_H_
#define TESSERA_CUDA_DECODE_KERNELS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Threads per block of every kernel below (workload::compute_steps::kThreadsPerBlock).
#define TESSERA_DECODE_THREADS 256
// tessera_train_reduce: rows of C per block (compute_steps::kReduceRowsPerBlock); the block's
// TESSERA_DECODE_THREADS / TESSERA_TRAIN_REDUCE_ROWS warps take interleaved columns.
#define TESSERA_TRAIN_REDUCE_ROWS 32
// tessera_checksum_chunks: bytes per chunk (compute_data::kChecksumChunkBytes).
#define TESSERA_CHECKSUM_CHUNK_BYTES 1024

#define TESSERA_KERNEL_DECODE_EMBED "tessera_decode_embed"
#define TESSERA_KERNEL_DECODE_SOFTMAX "tessera_decode_softmax"
#define TESSERA_KERNEL_DECODE_ARGMAX "tessera_decode_argmax"
#define TESSERA_KERNEL_TRAIN_REDUCE "tessera_train_reduce"
#define TESSERA_KERNEL_TRAIN_UPDATE "tessera_train_update"
#define TESSERA_KERNEL_CHECKSUM_CHUNKS "tessera_checksum_chunks"
#define TESSERA_KERNEL_CHECKSUM_COMBINE "tessera_checksum_combine"

// tessera_decode_embed: grid = batch. Block b copies row tokens[b] of the table into hidden row b;
// a token outside [0, vocab) gives a zero row (never an out-of-bounds read).
typedef struct TesseraDecodeEmbedParams {
  uint64_t table;   // fp16 bits [vocab * width]
  uint64_t tokens;  // int32 [batch]
  uint64_t hidden;  // fp16 bits [batch * width], written
  uint32_t width;   // H
  uint32_t vocab;   // V
} TesseraDecodeEmbedParams;

// tessera_decode_softmax: grid = batch. Block b: probs row b = softmax(logits row b) in fp32;
// the max and the sum are each thread's strided partial (indices t, t + 256, ...) in order, then
// a fixed tree over the threads.
typedef struct TesseraDecodeSoftmaxParams {
  uint64_t logits;  // float [batch * vocab]
  uint64_t probs;   // float [batch * vocab], written
  uint32_t vocab;
  uint32_t pad;
} TesseraDecodeSoftmaxParams;

// tessera_decode_argmax: grid = batch. tokens[b] = the index of row b's largest value, the lowest
// index among equal values (NaNs are never chosen; an all-NaN row gives 0).
typedef struct TesseraDecodeArgmaxParams {
  uint64_t probs;   // float [batch * vocab]
  uint64_t tokens;  // int32 [batch], written
  uint32_t vocab;
  uint32_t pad;
} TesseraDecodeArgmaxParams;

// tessera_train_reduce: grid = ceil(m / TESSERA_TRAIN_REDUCE_ROWS). row_sq[r] = sum over columns
// j of C[r + j * m]^2 (C column-major m x n): warp w sums columns w, w + 8, ... in order, then the
// 8 partials are added in warp order.
typedef struct TesseraTrainReduceParams {
  uint64_t c;       // float [m * n]
  uint64_t row_sq;  // float [m], written
  uint32_t m;
  uint32_t n;
} TesseraTrainReduceParams;

// tessera_train_update: grid = ceil(k * n / 256), one thread per element of B (column-major
// k x n): with r = row mod m, B[row, j] = clamp(B[row, j] - lr * C[r, j] / sqrt(row_sq[r] / n +
// 1e-6), -1, 1), rounded to fp16 (to nearest even): a normalised step that keeps B in the
// generator's range and changes the next GEMM's input.
typedef struct TesseraTrainUpdateParams {
  uint64_t b;       // fp16 bits [k * n], updated in place
  uint64_t c;       // float [m * n]
  uint64_t row_sq;  // float [m]
  uint32_t m;
  uint32_t n;
  uint32_t k;
  float lr;
} TesseraTrainUpdateParams;

// tessera_checksum_chunks: grid = ceil(chunks / 256). Thread i writes the FNV-1a 64 of bytes
// [i * 1024, min((i + 1) * 1024, bytes)) of data into chunk_hashes[i].
typedef struct TesseraChecksumChunksParams {
  uint64_t data;
  uint64_t bytes;
  uint64_t chunk_hashes;  // uint64 [chunks], written
} TesseraChecksumChunksParams;

// tessera_checksum_combine: one block of one thread. *out = FNV-1a 64 over chunk_hashes[0..chunks)
// in order, each as 8 little-endian bytes (compute_data::checksum's second level).
typedef struct TesseraChecksumCombineParams {
  uint64_t chunk_hashes;  // uint64 [chunks]
  uint64_t chunks;
  uint64_t out;  // uint64, written
} TesseraChecksumCombineParams;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_CUDA_DECODE_KERNELS_H_
