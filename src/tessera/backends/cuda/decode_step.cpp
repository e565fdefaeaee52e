#include "tessera/backends/cuda/decode_step.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "tessera/backends/cuda/decode_kernels.h"
#include "tessera/backends/cuda/driver_handles.hpp"
#include "tessera/backends/cuda/kernel_module.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/workload/models/compute_steps.hpp"

extern "C" const unsigned char tessera_fatbin_decode_kernels[];
extern "C" const unsigned long long tessera_fatbin_decode_kernels_size;

namespace tessera::cuda {

namespace cd = workload::compute_data;
namespace cs = workload::compute_steps;

// The kernels and the sequences that describe them must agree on their launch shapes.
static_assert(TESSERA_DECODE_THREADS == cs::kThreadsPerBlock);
static_assert(TESSERA_TRAIN_REDUCE_ROWS == cs::kReduceRowsPerBlock);
static_assert(TESSERA_CHECKSUM_CHUNK_BYTES == cd::kChecksumChunkBytes);

std::span<const unsigned char> decode_kernels_image() {
  return {tessera_fatbin_decode_kernels,
          static_cast<std::size_t>(tessera_fatbin_decode_kernels_size)};
}

namespace {

constexpr std::array<std::string_view, 4> kDecodeKernels = {cs::kDecodeEmbed, cs::kDecodeLmHead,
                                                            cs::kDecodeSoftmax, cs::kDecodeArgmax};
constexpr std::array<std::string_view, 3> kTrainKernels = {cs::kTrainGemm, cs::kTrainReduce,
                                                           cs::kTrainUpdate};
constexpr unsigned kThreads = TESSERA_DECODE_THREADS;

unsigned grid_for(std::uint64_t items, std::uint64_t per_block) {
  return static_cast<unsigned>((items + per_block - 1) / per_block);
}

core::Status invalid(std::string message) {
  return core::fail(core::Domain::kCuda, core::Code::kInvalidArgument, std::move(message));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ModelResources: what both models hold on the device.

class ModelResources {
 public:
  static core::Result<std::unique_ptr<ModelResources>> create(const DriverLibrary& driver,
                                                              const CublasLt& lt, int ordinal,
                                                              std::string what) {
    TESSERA_ASSIGN_OR_RETURN(DriverDevice device, driver.device(ordinal));
    std::unique_ptr<ModelResources> r(new ModelResources(driver, std::move(what)));
    TESSERA_TRY(driver.check(driver.api().primary_ctx_retain(&r->context_, device.handle),
                             "cuDevicePrimaryCtxRetain"));
    r->retained_ = RetainedPrimaryContext(driver, device.handle);
    TESSERA_TRY(r->in_context([&]() -> core::Status {
      TESSERA_ASSIGN_OR_RETURN(
          r->module_, KernelModule::load(driver, decode_kernels_image(), "decode_kernels"));
      TESSERA_ASSIGN_OR_RETURN(r->handle_, CublasLtHandle::create(lt));
      return {};
    }));
    return r;
  }

  ~ModelResources() {
    if (!retained_) return;
    const auto warn = [this](core::Status s) {
      if (!s) core::logger().warn("{}: teardown: {}", what_, s.error().message());
    };
    // Nothing may still be reading or writing the buffers when they are freed.
    warn(synchronize());
    warn(in_context([this]() -> core::Status {
      buffers_.clear();
      handle_.reset();
      module_.reset();
      return {};
    }));
    retained_.reset();
  }

  // Runs `f` with the device's primary context current (allocation, copies, cuBLASLt setup).
  template <typename F>
  core::Status in_context(F&& f) {
    TESSERA_TRY(driver_.check(driver_.api().ctx_push_current(context_), "cuCtxPushCurrent"));
    core::Status result = f();
    CUcontext popped = nullptr;
    const core::Status pop =
        driver_.check(driver_.api().ctx_pop_current(&popped), "cuCtxPopCurrent");
    if (!result) return result;
    return pop;
  }

  // A device buffer of `bytes`, zeroed, freed with the resources. Call inside in_context.
  core::Result<CUdeviceptr> alloc(std::size_t bytes, std::string_view name) {
    CUdeviceptr p = 0;
    TESSERA_TRY(
        driver_.check(driver_.api().mem_alloc(&p, std::max<std::size_t>(bytes, 1)),
                      fmt::format("cuMemAlloc({} bytes for {} of the {})", bytes, name, what_)));
    buffers_.emplace_back(driver_, p);
    TESSERA_TRY(driver_.check(driver_.api().memset_d8(p, 0, std::max<std::size_t>(bytes, 1)),
                              "cuMemsetD8"));
    return p;
  }

  // Host -> device copies, finished when this returns (cuMemcpyHtoD from pageable memory may
  // return before its DMA completes, and the model's streams do not wait for the legacy stream,
  // so the context is synchronised). Call inside in_context.
  core::Status upload(CUdeviceptr dst, const void* src, std::size_t bytes) {
    TESSERA_TRY(driver_.check(driver_.api().memcpy_htod(dst, src, bytes), "cuMemcpyHtoD"));
    return driver_.check(driver_.api().ctx_synchronize(), "cuCtxSynchronize");
  }
  // Device -> host, after synchronize(). Call inside in_context.
  core::Status download(void* dst, CUdeviceptr src, std::size_t bytes) {
    return driver_.check(driver_.api().memcpy_dtoh(dst, src, bytes), "cuMemcpyDtoH");
  }

  // Waits for the last stream the model enqueued on (its work is ordered after everything else
  // the model enqueued: the caller orders a model's kernels).
  core::Status synchronize() {
    if (!stream_used_) return {};
    TESSERA_TRY(driver_.check(driver_.api().stream_synchronize(last_stream_),
                              fmt::format("cuStreamSynchronize (the {}'s last stream)", what_)));
    stream_used_ = false;
    return {};
  }
  void used(CUstream stream) {
    last_stream_ = stream;
    stream_used_ = true;
  }

  // The scratch space of checksum() for outputs up to `max_bytes`, and `slots` result slots.
  core::Status make_checksum_slots(std::size_t max_bytes, int slots) {
    TESSERA_ASSIGN_OR_RETURN(
        chunk_hashes_,
        alloc(cd::checksum_chunks(max_bytes) * sizeof(std::uint64_t), "checksum chunk hashes"));
    TESSERA_ASSIGN_OR_RETURN(slots_, alloc(slots * sizeof(std::uint64_t), "checksum slots"));
    slot_count_ = slots;
    return {};
  }
  // Enqueues compute_data::checksum of [data, data + bytes) into slot `slot`.
  core::Status checksum(CUdeviceptr data, std::size_t bytes, int slot, CUstream stream) {
    const std::uint64_t chunks = cd::checksum_chunks(bytes);
    if (chunks > 0) {
      const TesseraChecksumChunksParams p{
          .data = data, .bytes = bytes, .chunk_hashes = chunk_hashes_};
      TESSERA_TRY(module_->launch(TESSERA_KERNEL_CHECKSUM_CHUNKS, grid_for(chunks, kThreads),
                                  kThreads, 0, stream, p));
    }
    const TesseraChecksumCombineParams c{
        .chunk_hashes = chunk_hashes_, .chunks = chunks, .out = slot_address(slot)};
    return module_->launch(TESSERA_KERNEL_CHECKSUM_COMBINE, 1, 1, 0, stream, c);
  }
  CUdeviceptr slot_address(int slot) const { return slots_ + slot * sizeof(std::uint64_t); }
  core::Result<std::vector<std::uint64_t>> read_slots() {
    std::vector<std::uint64_t> out(slot_count_);
    TESSERA_TRY(download(out.data(), slots_, out.size() * sizeof(std::uint64_t)));
    return out;
  }

  KernelModule& module() { return *module_; }
  cublasLtHandle_t lt_handle() const { return handle_->get(); }
  const std::string& what() const { return what_; }

 private:
  ModelResources(const DriverLibrary& driver, std::string what)
      : driver_(driver), what_(std::move(what)) {}
  const DriverLibrary& driver_;
  std::string what_;
  RetainedPrimaryContext retained_;  // released last, after everything made in it
  CUcontext context_ = nullptr;
  std::unique_ptr<KernelModule> module_;
  std::unique_ptr<CublasLtHandle> handle_;
  std::vector<UniqueDeviceMemory> buffers_;
  CUdeviceptr chunk_hashes_ = 0;
  CUdeviceptr slots_ = 0;
  int slot_count_ = 0;
  CUstream last_stream_ = nullptr;
  bool stream_used_ = false;
};

namespace {

// The model kernels are never cut into block ranges (compute_steps: block_independent false):
// a launch must cover the kernel's whole grid. block_end 0 means the whole grid too.
core::Status check_site(const workload::Kernel& kernel, const workload::ComputeSite& site,
                        std::string_view model) {
  if (site.block_begin == 0 && (site.block_end == 0 || site.block_end == kernel.blocks)) return {};
  return core::failf(core::Domain::kCuda, core::Code::kInvalidArgument,
                     "{} kernel {} launched for blocks [{}, {}) of {}: its kernels run only as "
                     "whole grids (they are not block-independent)",
                     model, kernel.name, site.block_begin, site.block_end, kernel.blocks);
}

core::Status check_order(std::string_view kernel, std::span<const std::string_view> kernels,
                         int next, std::int64_t step, std::string_view model) {
  if (next < static_cast<int>(kernels.size()) && kernel == kernels[next]) return {};
  const bool known = std::find(kernels.begin(), kernels.end(), kernel) != kernels.end();
  if (!known) {
    return core::failf(core::Domain::kCuda, core::Code::kNotFound,
                       "the {} model has no kernel '{}' (its kernels: {})", model, kernel,
                       fmt::join(kernels, ", "));
  }
  return core::failf(
      core::Domain::kCuda, core::Code::kFailedPrecondition,
      "{} kernel {} run out of order in step {}: expected {}", model, kernel, step,
      next < static_cast<int>(kernels.size()) ? kernels[next] : "finish_step() first");
}

const workload::Kernel& kernel_at(const workload::KernelSequence& seq, int index) {
  return seq.groups.front().kernels[static_cast<std::size_t>(index)];
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The decode model.

core::Status validate(const DecodeModelOptions& options) {
  const auto& s = options.shape;
  if (s.batch <= 0 || s.hidden <= 0 || s.vocab <= 0) {
    return invalid(fmt::format("decode model: batch {}, hidden {} and vocab {} must be positive",
                               s.batch, s.hidden, s.vocab));
  }
  if (s.batch > s.vocab) {
    return invalid(
        fmt::format("decode model: batch {} exceeds vocab {} (sequence b starts "
                    "at token b)",
                    s.batch, s.vocab));
  }
  if (options.gemm.sm_count_target < 0) {
    return invalid(
        fmt::format("decode model: SM count target {} is negative", options.gemm.sm_count_target));
  }
  return {};
}

CudaDecodeModel::CudaDecodeModel(DecodeModelOptions options,
                                 std::unique_ptr<ModelResources> resources)
    : options_(std::move(options)),
      res_(std::move(resources)),
      sequence_(cs::decode_step_sequence(options_.shape)) {}

CudaDecodeModel::~CudaDecodeModel() = default;

core::Result<std::unique_ptr<CudaDecodeModel>> CudaDecodeModel::create(
    const DriverLibrary& driver, const CublasLt& lt, const DecodeModelOptions& options) {
  TESSERA_TRY(validate(options));
  TESSERA_ASSIGN_OR_RETURN(
      auto res, ModelResources::create(driver, lt, options.device_ordinal, "decode model"));
  std::unique_ptr<CudaDecodeModel> m(new CudaDecodeModel(options, std::move(res)));
  const auto b = static_cast<std::size_t>(options.shape.batch);
  const auto h = static_cast<std::size_t>(options.shape.hidden);
  const auto v = static_cast<std::size_t>(options.shape.vocab);
  ModelResources& r = *m->res_;
  TESSERA_TRY(r.in_context([&]() -> core::Status {
    TESSERA_ASSIGN_OR_RETURN(m->table_, r.alloc(v * h * 2, "the embedding table"));
    TESSERA_ASSIGN_OR_RETURN(m->lm_head_, r.alloc(v * h * 2, "the LM head"));
    TESSERA_ASSIGN_OR_RETURN(m->tokens_, r.alloc(b * 4, "the tokens"));
    TESSERA_ASSIGN_OR_RETURN(m->hidden_, r.alloc(b * h * 2, "the hidden states"));
    TESSERA_ASSIGN_OR_RETURN(m->logits_, r.alloc(v * b * 4, "the logits"));
    TESSERA_ASSIGN_OR_RETURN(m->probs_, r.alloc(v * b * 4, "the probabilities"));
    TESSERA_ASSIGN_OR_RETURN(CUdeviceptr workspace,
                             r.alloc(options.gemm.workspace_bytes, "the cuBLASLt workspace"));
    TESSERA_TRY(r.make_checksum_slots(v * b * 4, static_cast<int>(kDecodeKernels.size())));
    // logits[V x B] = op(W) * h with W stored H x V column-major (compute_data.hpp).
    const GemmShape shape{.transpose_a = true,
                          .m = v,
                          .n = b,
                          .k = h,
                          .lda = static_cast<std::int64_t>(h),
                          .ldb = static_cast<std::int64_t>(h),
                          .ldd = static_cast<std::int64_t>(v)};
    TESSERA_ASSIGN_OR_RETURN(m->gemm_, LtGemm::create(lt, r.lt_handle(), shape, options.gemm,
                                                      workspace, "decode.lm_head"));
    return {};
  }));
  TESSERA_TRY(m->reset(options.seed));
  return m;
}

core::Status CudaDecodeModel::reset(std::uint64_t seed) {
  const auto& s = options_.shape;
  const auto b = static_cast<std::size_t>(s.batch);
  const std::size_t table = static_cast<std::size_t>(s.vocab) * static_cast<std::size_t>(s.hidden);
  TESSERA_TRY(res_->synchronize());
  std::vector<std::int32_t> tokens(b);
  for (std::size_t i = 0; i < b; ++i) tokens[i] = cd::initial_token(static_cast<int>(i));
  TESSERA_TRY(res_->in_context([&]() -> core::Status {
    // The step never writes E or W: they are generated (about a second for the defaults) only
    // when the seed changes.
    if (loaded_seed_ != seed) {
      loaded_seed_.reset();
      const auto e = cd::generate_fp16(seed, cd::Tensor::kDecodeEmbedding, table);
      TESSERA_TRY(res_->upload(table_, e.data(), e.size() * 2));
      const auto w = cd::generate_fp16(seed, cd::Tensor::kDecodeLmHead, table);
      TESSERA_TRY(res_->upload(lm_head_, w.data(), w.size() * 2));
      loaded_seed_ = seed;
    }
    return res_->upload(tokens_, tokens.data(), b * 4);
  }));
  step_ = 0;
  next_kernel_ = 0;
  return {};
}

core::Status CudaDecodeModel::run_kernel(std::string_view kernel,
                                         const workload::ComputeSite& site) {
  TESSERA_TRY(check_order(kernel, kDecodeKernels, next_kernel_, step_, "decode"));
  TESSERA_TRY(check_site(kernel_at(*sequence_, next_kernel_), site, "decode"));
  const auto& s = options_.shape;
  const auto b = static_cast<std::uint64_t>(s.batch);
  const auto h = static_cast<std::uint64_t>(s.hidden);
  const auto v = static_cast<std::uint64_t>(s.vocab);
  auto* stream = static_cast<CUstream>(site.stream);
  auto& module = res_->module();
  const unsigned batch = static_cast<unsigned>(s.batch);
  switch (next_kernel_) {
    case 0:
      TESSERA_TRY(module.launch(TESSERA_KERNEL_DECODE_EMBED, batch, kThreads, 0, stream,
                                TesseraDecodeEmbedParams{.table = table_,
                                                         .tokens = tokens_,
                                                         .hidden = hidden_,
                                                         .width = static_cast<std::uint32_t>(h),
                                                         .vocab = static_cast<std::uint32_t>(v)}));
      TESSERA_TRY(res_->checksum(hidden_, b * h * 2, 0, stream));
      break;
    case 1:
      TESSERA_TRY(gemm_->run(lm_head_, hidden_, logits_, stream, site.partition_sms));
      TESSERA_TRY(res_->checksum(logits_, v * b * 4, 1, stream));
      break;
    case 2:
      TESSERA_TRY(module.launch(TESSERA_KERNEL_DECODE_SOFTMAX, batch, kThreads, 0, stream,
                                TesseraDecodeSoftmaxParams{.logits = logits_,
                                                           .probs = probs_,
                                                           .vocab = static_cast<std::uint32_t>(v),
                                                           .pad = 0}));
      TESSERA_TRY(res_->checksum(probs_, v * b * 4, 2, stream));
      break;
    default:
      TESSERA_TRY(module.launch(TESSERA_KERNEL_DECODE_ARGMAX, batch, kThreads, 0, stream,
                                TesseraDecodeArgmaxParams{.probs = probs_,
                                                          .tokens = tokens_,
                                                          .vocab = static_cast<std::uint32_t>(v),
                                                          .pad = 0}));
      TESSERA_TRY(res_->checksum(tokens_, b * 4, 3, stream));
      break;
  }
  res_->used(stream);
  ++next_kernel_;
  return {};
}

core::Result<workload::StepOutput> CudaDecodeModel::finish_step() {
  if (next_kernel_ != static_cast<int>(kDecodeKernels.size())) {
    return core::failf(core::Domain::kCuda, core::Code::kFailedPrecondition,
                       "decode step {}: finish_step after {} of its {} kernels (next: {})", step_,
                       next_kernel_, kDecodeKernels.size(), kDecodeKernels[next_kernel_]);
  }
  TESSERA_TRY(res_->synchronize());
  workload::StepOutput out;
  out.tokens.resize(static_cast<std::size_t>(options_.shape.batch));
  std::vector<std::uint64_t> sums;
  TESSERA_TRY(res_->in_context([&]() -> core::Status {
    TESSERA_ASSIGN_OR_RETURN(sums, res_->read_slots());
    return res_->download(out.tokens.data(), tokens_, out.tokens.size() * 4);
  }));
  for (std::size_t i = 0; i < kDecodeKernels.size(); ++i) {
    out.kernel_checksums.emplace_back(std::string(kDecodeKernels[i]), sums[i]);
  }
  ++step_;
  next_kernel_ = 0;
  return out;
}

core::Result<std::vector<float>> CudaDecodeModel::read_logits() {
  if (next_kernel_ < 2) {
    return core::failf(core::Domain::kCuda, core::Code::kFailedPrecondition,
                       "decode step {}: its LM head has not run yet", step_);
  }
  TESSERA_TRY(res_->synchronize());
  std::vector<float> logits(static_cast<std::size_t>(options_.shape.vocab) *
                            static_cast<std::size_t>(options_.shape.batch));
  TESSERA_TRY(res_->in_context(
      [&]() { return res_->download(logits.data(), logits_, logits.size() * sizeof(float)); }));
  return logits;
}

// ---------------------------------------------------------------------------------------------
// The training-like model.

core::Status validate(const TrainingModelOptions& options) {
  const auto& s = options.shape;
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) {
    return invalid(
        fmt::format("training model: m {}, n {} and k {} must be positive", s.m, s.n, s.k));
  }
  if (!std::isfinite(options.learning_rate)) {
    return invalid("training model: the learning rate must be finite");
  }
  if (options.gemm.sm_count_target < 0) {
    return invalid(fmt::format("training model: SM count target {} is negative",
                               options.gemm.sm_count_target));
  }
  return {};
}

CudaTrainingModel::CudaTrainingModel(TrainingModelOptions options,
                                     std::unique_ptr<ModelResources> resources)
    : options_(std::move(options)),
      res_(std::move(resources)),
      sequence_(cs::train_step_sequence(options_.shape)) {}

CudaTrainingModel::~CudaTrainingModel() = default;

core::Result<std::unique_ptr<CudaTrainingModel>> CudaTrainingModel::create(
    const DriverLibrary& driver, const CublasLt& lt, const TrainingModelOptions& options) {
  TESSERA_TRY(validate(options));
  TESSERA_ASSIGN_OR_RETURN(
      auto res, ModelResources::create(driver, lt, options.device_ordinal, "training model"));
  std::unique_ptr<CudaTrainingModel> t(new CudaTrainingModel(options, std::move(res)));
  const auto m = static_cast<std::size_t>(options.shape.m);
  const auto n = static_cast<std::size_t>(options.shape.n);
  const auto k = static_cast<std::size_t>(options.shape.k);
  ModelResources& r = *t->res_;
  TESSERA_TRY(r.in_context([&]() -> core::Status {
    TESSERA_ASSIGN_OR_RETURN(t->a_, r.alloc(m * k * 2, "A"));
    TESSERA_ASSIGN_OR_RETURN(t->b_, r.alloc(k * n * 2, "B"));
    TESSERA_ASSIGN_OR_RETURN(t->c_, r.alloc(m * n * 4, "C"));
    TESSERA_ASSIGN_OR_RETURN(t->row_sq_, r.alloc(m * 4, "the row sums of squares"));
    TESSERA_ASSIGN_OR_RETURN(CUdeviceptr workspace,
                             r.alloc(options.gemm.workspace_bytes, "the cuBLASLt workspace"));
    const std::size_t largest = std::max({m * n * 4, k * n * 2, m * 4});
    TESSERA_TRY(r.make_checksum_slots(options.checksums ? largest : 0,
                                      static_cast<int>(kTrainKernels.size())));
    const GemmShape shape{.transpose_a = false,
                          .m = m,
                          .n = n,
                          .k = k,
                          .lda = static_cast<std::int64_t>(m),
                          .ldb = static_cast<std::int64_t>(k),
                          .ldd = static_cast<std::int64_t>(m)};
    TESSERA_ASSIGN_OR_RETURN(
        t->gemm_, LtGemm::create(lt, r.lt_handle(), shape, options.gemm, workspace, "train.gemm"));
    return {};
  }));
  TESSERA_TRY(t->reset(options.seed));
  return t;
}

core::Status CudaTrainingModel::reset(std::uint64_t seed) {
  const auto& s = options_.shape;
  const auto m = static_cast<std::size_t>(s.m);
  const auto n = static_cast<std::size_t>(s.n);
  const auto k = static_cast<std::size_t>(s.k);
  TESSERA_TRY(res_->synchronize());
  TESSERA_TRY(res_->in_context([&]() -> core::Status {
    // A is never written (B is, by every update).
    if (loaded_seed_ != seed) {
      loaded_seed_.reset();
      const auto a = cd::generate_fp16(seed, cd::Tensor::kTrainA, m * k);
      TESSERA_TRY(res_->upload(a_, a.data(), a.size() * 2));
      loaded_seed_ = seed;
    }
    const auto b = cd::generate_fp16(seed, cd::Tensor::kTrainB, k * n);
    return res_->upload(b_, b.data(), b.size() * 2);
  }));
  step_ = 0;
  next_kernel_ = 0;
  return {};
}

core::Status CudaTrainingModel::run_kernel(std::string_view kernel,
                                           const workload::ComputeSite& site) {
  TESSERA_TRY(check_order(kernel, kTrainKernels, next_kernel_, step_, "train"));
  TESSERA_TRY(check_site(kernel_at(*sequence_, next_kernel_), site, "train"));
  const auto& s = options_.shape;
  const auto m = static_cast<std::uint64_t>(s.m);
  const auto n = static_cast<std::uint64_t>(s.n);
  const auto k = static_cast<std::uint64_t>(s.k);
  auto* stream = static_cast<CUstream>(site.stream);
  auto& module = res_->module();
  CUdeviceptr output = 0;
  std::uint64_t output_bytes = 0;
  switch (next_kernel_) {
    case 0:
      TESSERA_TRY(gemm_->run(a_, b_, c_, stream, site.partition_sms));
      output = c_;
      output_bytes = m * n * 4;
      break;
    case 1:
      TESSERA_TRY(module.launch(TESSERA_KERNEL_TRAIN_REDUCE, grid_for(m, TESSERA_TRAIN_REDUCE_ROWS),
                                kThreads, 0, stream,
                                TesseraTrainReduceParams{.c = c_,
                                                         .row_sq = row_sq_,
                                                         .m = static_cast<std::uint32_t>(m),
                                                         .n = static_cast<std::uint32_t>(n)}));
      output = row_sq_;
      output_bytes = m * 4;
      break;
    default:
      TESSERA_TRY(module.launch(TESSERA_KERNEL_TRAIN_UPDATE, grid_for(k * n, kThreads), kThreads, 0,
                                stream,
                                TesseraTrainUpdateParams{.b = b_,
                                                         .c = c_,
                                                         .row_sq = row_sq_,
                                                         .m = static_cast<std::uint32_t>(m),
                                                         .n = static_cast<std::uint32_t>(n),
                                                         .k = static_cast<std::uint32_t>(k),
                                                         .lr = options_.learning_rate}));
      output = b_;
      output_bytes = k * n * 2;
      break;
  }
  if (options_.checksums) TESSERA_TRY(res_->checksum(output, output_bytes, next_kernel_, stream));
  res_->used(stream);
  ++next_kernel_;
  return {};
}

core::Result<workload::StepOutput> CudaTrainingModel::finish_step() {
  if (next_kernel_ != static_cast<int>(kTrainKernels.size())) {
    return core::failf(core::Domain::kCuda, core::Code::kFailedPrecondition,
                       "training step {}: finish_step after {} of its {} kernels (next: {})", step_,
                       next_kernel_, kTrainKernels.size(), kTrainKernels[next_kernel_]);
  }
  TESSERA_TRY(res_->synchronize());
  workload::StepOutput out;
  if (options_.checksums) {
    std::vector<std::uint64_t> sums;
    TESSERA_TRY(res_->in_context([&]() -> core::Status {
      TESSERA_ASSIGN_OR_RETURN(sums, res_->read_slots());
      return {};
    }));
    for (std::size_t i = 0; i < kTrainKernels.size(); ++i) {
      out.kernel_checksums.emplace_back(std::string(kTrainKernels[i]), sums[i]);
    }
  }
  ++step_;
  next_kernel_ = 0;
  return out;
}

}  // namespace tessera::cuda
