#pragma once
// One cuBLASLt GEMM shape of a compute model (decode_step.hpp) with the determinism controls of
// shared/notes/cuda-api-facts.md section 4, in two variants:
//  - "fixed": one matmul descriptor whose CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET is a fixed value,
//    a heuristic preference that admits only CUBLASLT_REDUCTION_SCHEME_NONE (no split-K
//    reduction), the heuristic queried ONCE at creation and its algorithm cached, and a
//    workspace owned by the model: every launch runs the same kernel with the same
//    configuration whatever partition it lands in.
//  - "drift": the failure mode the CoGPU paper warns about: before each launch the SM target is
//    set to the partition's SM count and the heuristic is asked again with every reduction scheme
//    allowed, so the algorithm (tile, split-K, reduction) follows the partition.
// Every launch's algorithm is recorded by partition size ("algorithms seen per partition size").

#include <cublasLt.h>
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backends/cuda/cublaslt_library.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cuda {

enum class GemmVariant { kFixed, kDrift };
std::string_view to_string(GemmVariant v);
// "fixed" or "drift"; anything else is kInvalidArgument naming both.
core::Result<GemmVariant> parse_gemm_variant(std::string_view name);

// A cuBLASLt algorithm as its configuration attributes describe it (cublasLt.h,
// cublasLtMatmulAlgoConfigAttributes_t).
struct GemmAlgorithm {
  int id = 0;                       // CUBLASLT_ALGO_CONFIG_ID
  std::uint32_t tile = 0;           // CUBLASLT_ALGO_CONFIG_TILE_ID (cublasLtMatmulTile_t)
  int split_k = 1;                  // CUBLASLT_ALGO_CONFIG_SPLITK_NUM
  std::uint32_t reduction = 0;      // CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME
  std::uint32_t swizzle = 0;        // CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING
  std::uint32_t stages = 0;         // CUBLASLT_ALGO_CONFIG_STAGES_ID
  std::uint32_t cluster_shape = 0;  // CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID
  std::size_t workspace_bytes = 0;  // what the heuristic said it needs
  auto operator<=>(const GemmAlgorithm&) const = default;
};
// "id 21 tile 20 splitk 1 reduction none swizzle 0 stages 8 cluster 2 workspace 0".
std::string to_string(const GemmAlgorithm& a);

// The distinct algorithms the launches in partitions of one size used, in first-use order.
struct GemmAlgorithmsSeen {
  int partition_sms = 0;
  std::int64_t launches = 0;
  std::vector<GemmAlgorithm> algorithms;
};

struct GemmOptions {
  GemmVariant variant = GemmVariant::kFixed;
  // The fixed variant's SM target (0: the device's SM count, cuBLASLt's default). ASSUMPTION: 16,
  // the smallest partition the determinism harness uses, so the algorithm chosen fits every
  // partition it may run in (the notes' recommendation).
  int sm_count_target = 16;
  // ASSUMPTION: 32 MiB, the workspace the cuBLAS documentation recommends for Hopper
  // (cublasSetWorkspace); the drift variant's split-K reductions need one.
  std::size_t workspace_bytes = std::size_t{32} << 20;
};

// D[m x n] = op(A) * op(B), column-major, fp16 A and B, fp32 D, fp32 compute and scale
// (alpha 1, beta 0).
struct GemmShape {
  bool transpose_a = false;
  std::uint64_t m = 0;
  std::uint64_t n = 0;
  std::uint64_t k = 0;
  std::int64_t lda = 0;  // leading dimensions of the stored matrices
  std::int64_t ldb = 0;
  std::int64_t ldd = 0;
};

class LtGemm {
 public:
  // Needs a current context (the heuristic reads the device) and a workspace of at least
  // options.workspace_bytes that the caller keeps alive; `what` names the GEMM in errors.
  static core::Result<std::unique_ptr<LtGemm>> create(const CublasLt& lt, cublasLtHandle_t handle,
                                                      const GemmShape& shape,
                                                      const GemmOptions& options,
                                                      CUdeviceptr workspace, std::string what);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // Enqueues D = op(A) * op(B) on `stream` only. `partition_sms` is where it runs: it picks the
  // drift variant's algorithm and files the launch under that size.
  core::Status run(CUdeviceptr a, CUdeviceptr b, CUdeviceptr d, CUstream stream, int partition_sms);

  GemmVariant variant() const { return options_.variant; }
  // The fixed variant's cached algorithm (the drift variant's most recent one).
  const GemmAlgorithm& last_algorithm() const { return last_; }
  // By partition size, ascending.
  std::vector<GemmAlgorithmsSeen> algorithms_seen() const;

 private:
  LtGemm(const CublasLt& lt, cublasLtHandle_t handle, GemmOptions options, CUdeviceptr workspace,
         std::string what)
      : lt_(lt),
        handle_(handle),
        options_(options),
        workspace_(workspace),
        what_(std::move(what)) {}
  // The heuristic's first choice for the descriptor's current SM target.
  core::Result<cublasLtMatmulHeuristicResult_t> query_heuristic();
  core::Result<GemmAlgorithm> describe(const cublasLtMatmulHeuristicResult_t& r) const;
  void record(int partition_sms, const GemmAlgorithm& a);

  const CublasLt& lt_;
  cublasLtHandle_t handle_;
  GemmOptions options_;
  CUdeviceptr workspace_;
  std::string what_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr;
  cublasLtMatrixLayout_t b_layout_ = nullptr;
  cublasLtMatrixLayout_t d_layout_ = nullptr;
  cublasLtMatmulPreference_t preference_ = nullptr;
  cublasLtMatmulHeuristicResult_t cached_{};  // the fixed variant's algorithm
  int current_target_ = -1;                   // the SM target the descriptor holds
  GemmAlgorithm last_;
  std::map<int, GemmAlgorithmsSeen> seen_;
};

}  // namespace tessera::cuda
