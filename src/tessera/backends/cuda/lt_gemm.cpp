#include "tessera/backends/cuda/lt_gemm.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::cuda {

std::string_view to_string(GemmVariant v) {
  switch (v) {
    case GemmVariant::kFixed: return "fixed";
    case GemmVariant::kDrift: return "drift";
  }
  return "unknown";
}

core::Result<GemmVariant> parse_gemm_variant(std::string_view name) {
  if (name == "fixed") return GemmVariant::kFixed;
  if (name == "drift") return GemmVariant::kDrift;
  return core::failf(core::Domain::kCuda, core::Code::kInvalidArgument,
                     "unknown GEMM variant '{}': use fixed or drift", name);
}

namespace {

std::string_view reduction_name(std::uint32_t scheme) {
  switch (scheme) {
    case CUBLASLT_REDUCTION_SCHEME_NONE: return "none";
    case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "compute-type";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "output-type";
    default: return "other";
  }
}

}  // namespace

std::string to_string(const GemmAlgorithm& a) {
  return fmt::format(
      "id {} tile {} splitk {} reduction {} swizzle {} stages {} cluster {} "
      "workspace {}",
      a.id, a.tile, a.split_k, reduction_name(a.reduction), a.swizzle, a.stages, a.cluster_shape,
      a.workspace_bytes);
}

core::Result<std::unique_ptr<LtGemm>> LtGemm::create(const CublasLt& lt, cublasLtHandle_t handle,
                                                     const GemmShape& shape,
                                                     const GemmOptions& options,
                                                     CUdeviceptr workspace, std::string what) {
  if (options.sm_count_target < 0) {
    return core::failf(core::Domain::kCuda, core::Code::kInvalidArgument,
                       "{}: SM count target {} is negative (0 means the device's)", what,
                       options.sm_count_target);
  }
  std::unique_ptr<LtGemm> g(new LtGemm(lt, handle, options, workspace, std::move(what)));
  const auto& api = lt.api();
  const auto call = [&g](std::string_view name) { return fmt::format("{} ({})", name, g->what_); };
  TESSERA_TRY(lt.check(api.matmul_desc_create(&g->desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                       call("cublasLtMatmulDescCreate")));
  const std::int32_t transa = shape.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  TESSERA_TRY(lt.check(
      api.matmul_desc_set_attribute(g->desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)),
      call("cublasLtMatmulDescSetAttribute(TRANSA)")));
  // op(A) is m x k: stored k x m when transposed.
  const std::uint64_t a_rows = shape.transpose_a ? shape.k : shape.m;
  const std::uint64_t a_cols = shape.transpose_a ? shape.m : shape.k;
  TESSERA_TRY(
      lt.check(api.matrix_layout_create(&g->a_layout_, CUDA_R_16F, a_rows, a_cols, shape.lda),
               call("cublasLtMatrixLayoutCreate(A)")));
  TESSERA_TRY(
      lt.check(api.matrix_layout_create(&g->b_layout_, CUDA_R_16F, shape.k, shape.n, shape.ldb),
               call("cublasLtMatrixLayoutCreate(B)")));
  TESSERA_TRY(
      lt.check(api.matrix_layout_create(&g->d_layout_, CUDA_R_32F, shape.m, shape.n, shape.ldd),
               call("cublasLtMatrixLayoutCreate(D)")));
  TESSERA_TRY(lt.check(api.matmul_preference_create(&g->preference_),
                       call("cublasLtMatmulPreferenceCreate")));
  const std::uint64_t max_workspace = options.workspace_bytes;
  TESSERA_TRY(lt.check(
      api.matmul_preference_set_attribute(g->preference_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                          &max_workspace, sizeof(max_workspace)),
      call("cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)")));
  if (options.variant == GemmVariant::kFixed) {
    // Mask NONE (0): only algorithms without a split-K reduction (cublasLt.h,
    // CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK filters on the schemes it lists).
    const std::uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE;
    TESSERA_TRY(lt.check(
        api.matmul_preference_set_attribute(
            g->preference_, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask)),
        call("cublasLtMatmulPreferenceSetAttribute(REDUCTION_SCHEME_MASK)")));
    const std::int32_t target = options.sm_count_target;
    TESSERA_TRY(
        lt.check(api.matmul_desc_set_attribute(g->desc_, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                                               &target, sizeof(target)),
                 call("cublasLtMatmulDescSetAttribute(SM_COUNT_TARGET)")));
    g->current_target_ = target;
    TESSERA_ASSIGN_OR_RETURN(g->cached_, g->query_heuristic());
    TESSERA_ASSIGN_OR_RETURN(g->last_, g->describe(g->cached_));
    core::logger().info("{}: fixed algorithm for SM target {}: {}", g->what_, target,
                        to_string(g->last_));
  }
  return g;
}

LtGemm::~LtGemm() {
  const auto& api = lt_.api();
  const auto warn = [this](cublasStatus_t s, std::string_view call) {
    if (auto st = lt_.check(s, call); !st) {
      core::logger().warn("{}: teardown: {}", what_, st.error().message());
    }
  };
  if (preference_ != nullptr) {
    warn(api.matmul_preference_destroy(preference_), "cublasLtMatmulPreferenceDestroy");
  }
  for (auto* layout : {d_layout_, b_layout_, a_layout_}) {
    if (layout != nullptr) warn(api.matrix_layout_destroy(layout), "cublasLtMatrixLayoutDestroy");
  }
  if (desc_ != nullptr) warn(api.matmul_desc_destroy(desc_), "cublasLtMatmulDescDestroy");
}

core::Result<cublasLtMatmulHeuristicResult_t> LtGemm::query_heuristic() {
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  TESSERA_TRY(
      lt_.check(lt_.api().matmul_algo_get_heuristic(handle_, desc_, a_layout_, b_layout_, d_layout_,
                                                    d_layout_, preference_, 1, &result, &count),
                fmt::format("cublasLtMatmulAlgoGetHeuristic ({})", what_)));
  if (count < 1 || result.state != CUBLAS_STATUS_SUCCESS) {
    return core::failf(
        core::Domain::kCuda, core::Code::kUnsupported,
        "{}: cuBLASLt has no algorithm for this GEMM with a workspace of {} bytes, "
        "SM target {} and {} (raise the workspace or use the other variant)",
        what_, options_.workspace_bytes, current_target_,
        options_.variant == GemmVariant::kFixed ? "no split-K reduction" : "any reduction");
  }
  return result;
}

core::Result<GemmAlgorithm> LtGemm::describe(const cublasLtMatmulHeuristicResult_t& r) const {
  GemmAlgorithm a;
  a.workspace_bytes = r.workspaceSize;
  std::uint16_t cluster = 0;
  const auto get = [this, &r](cublasLtMatmulAlgoConfigAttributes_t attr, void* out,
                              std::size_t size, std::string_view name) -> core::Status {
    std::size_t written = 0;
    return lt_.check(lt_.api().matmul_algo_config_get_attribute(&r.algo, attr, out, size, &written),
                     fmt::format("cublasLtMatmulAlgoConfigGetAttribute({}) ({})", name, what_));
  };
  TESSERA_TRY(get(CUBLASLT_ALGO_CONFIG_ID, &a.id, sizeof(a.id), "ID"));
  TESSERA_TRY(get(CUBLASLT_ALGO_CONFIG_TILE_ID, &a.tile, sizeof(a.tile), "TILE_ID"));
  TESSERA_TRY(get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &a.split_k, sizeof(a.split_k), "SPLITK_NUM"));
  TESSERA_TRY(get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &a.reduction, sizeof(a.reduction),
                  "REDUCTION_SCHEME"));
  TESSERA_TRY(
      get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &a.swizzle, sizeof(a.swizzle), "CTA_SWIZZLING"));
  TESSERA_TRY(get(CUBLASLT_ALGO_CONFIG_STAGES_ID, &a.stages, sizeof(a.stages), "STAGES_ID"));
  // uint16_t in cublasLt.h.
  TESSERA_TRY(
      get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof(cluster), "CLUSTER_SHAPE_ID"));
  a.cluster_shape = cluster;
  return a;
}

void LtGemm::record(int partition_sms, const GemmAlgorithm& a) {
  auto& seen = seen_[partition_sms];
  seen.partition_sms = partition_sms;
  ++seen.launches;
  if (std::find(seen.algorithms.begin(), seen.algorithms.end(), a) == seen.algorithms.end()) {
    seen.algorithms.push_back(a);
  }
}

core::Status LtGemm::run(CUdeviceptr a, CUdeviceptr b, CUdeviceptr d, CUstream stream,
                         int partition_sms) {
  const cublasLtMatmulHeuristicResult_t* chosen = &cached_;
  cublasLtMatmulHeuristicResult_t fresh{};
  if (options_.variant == GemmVariant::kDrift) {
    // The algorithm follows the partition: the SM target is the partition's, the heuristic asked
    // anew (0, an unknown partition, is cuBLASLt's "the device's").
    const std::int32_t target = std::max(partition_sms, 0);
    if (target != current_target_) {
      TESSERA_TRY(
          lt_.check(lt_.api().matmul_desc_set_attribute(desc_, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                                                        &target, sizeof(target)),
                    fmt::format("cublasLtMatmulDescSetAttribute(SM_COUNT_TARGET) ({})", what_)));
      current_target_ = target;
    }
    TESSERA_ASSIGN_OR_RETURN(fresh, query_heuristic());
    TESSERA_ASSIGN_OR_RETURN(last_, describe(fresh));
    chosen = &fresh;
  }
  record(partition_sms, last_);
  const float alpha = 1.0f;
  const float beta = 0.0f;
  // cudaStream_t and CUstream are the same type, struct CUstream_st* (driver_types.h:2998,
  // cuda.h:292).
  return lt_.check(
      lt_.api().matmul(handle_, desc_, &alpha, reinterpret_cast<const void*>(a), a_layout_,
                       reinterpret_cast<const void*>(b), b_layout_, &beta,
                       reinterpret_cast<const void*>(d), d_layout_, reinterpret_cast<void*>(d),
                       d_layout_, &chosen->algo, reinterpret_cast<void*>(workspace_),
                       options_.workspace_bytes, stream),
      fmt::format("cublasLtMatmul ({})", what_));
}

std::vector<GemmAlgorithmsSeen> LtGemm::algorithms_seen() const {
  std::vector<GemmAlgorithmsSeen> out;
  out.reserve(seen_.size());
  for (const auto& [sms, seen] : seen_) out.push_back(seen);
  return out;
}

}  // namespace tessera::cuda
