#include "tessera/validation/measurement_csv.hpp"

#include <array>
#include <utility>

#include "tessera/core/try.hpp"
#include "tessera/hw/gpu_spec.hpp"
#include "tessera/validation/csv_support.hpp"
#include "tessera/validation/limits.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::validation {

namespace {

using detail::Cell;
using detail::cell_error;

// The schema's columns (measurement_csv.hpp), in the order kNames lists them.
// clang-format off
enum Col : std::size_t {
  kGpu, kKind, kPrecision, kM, kN, kK, kModel, kHidden, kHeads, kKvHeads, kHeadDim,
  kIntermediate, kVocab, kLayers, kTp, kPhase, kBatch, kSeqLen, kKvLen, kKernels,
  kImplementation, kGemmStreamK, kCollective, kBytes, kGpus, kInterconnect, kValue, kUnit,
  kColumnCount
};
constexpr std::array<const char*, kColumnCount> kNames{
    "gpu", "kind", "precision", "m", "n", "k", "model", "hidden", "heads", "kv_heads", "head_dim",
    "intermediate", "vocab", "layers", "tp", "phase", "batch", "seq_len", "kv_len", "kernels",
    "implementation", "gemm_stream_k", "collective", "bytes", "gpus", "interconnect", "value",
    "unit"};
// clang-format on
constexpr std::array<Col, 4> kRequired{kGpu, kKind, kValue, kUnit};

// The kernel names transformer.cpp's builders give, and @attention (whatever attention kernels
// the step launches).
constexpr std::array<std::string_view, 24> kKernelNames{"embedding",
                                                        "input_rmsnorm",
                                                        "qkv_proj",
                                                        "rotary_embedding",
                                                        "o_proj",
                                                        "post_attention_add_rmsnorm",
                                                        "gate_up_proj",
                                                        "silu_and_mul",
                                                        "down_proj",
                                                        "residual_add",
                                                        "final_rmsnorm",
                                                        "lm_head",
                                                        "sampling",
                                                        "flash_attention_prefill",
                                                        "paged_attention_v1",
                                                        "paged_attention_v2",
                                                        "paged_attention_v2_reduce",
                                                        "moe_router",
                                                        "moe_topk_softmax",
                                                        "moe_align_block_size",
                                                        "moe_gate_up",
                                                        "moe_down",
                                                        "moe_sum",
                                                        kAttentionKernels};

using Reader = detail::CommentedReader<kColumnCount>;
using Row = std::array<std::string, kColumnCount>;

template <std::size_t... I>
void read_header(Reader& in, std::index_sequence<I...>) {
  in.read_header(io::ignore_missing_column, kNames[I]...);
}
template <std::size_t... I>
bool read_row(Reader& in, Row& row, std::index_sequence<I...>) {
  return in.read_row(row[I]...);
}

std::string known_columns() {
  std::string s;
  for (const char* n : kNames) s += s.empty() ? n : fmt::format(", {}", n);
  return s;
}

// Which columns each kind reads (the four required ones are always read).
bool applies(Col c, MeasuredKind kind) {
  switch (c) {
    case kGpu:
    case kKind:
    case kValue:
    case kUnit: return true;
    case kPrecision:
    case kGemmStreamK: return kind != MeasuredKind::kCollective;
    case kM:
    case kN:
    case kK: return kind == MeasuredKind::kGemm;
    case kModel:
    case kHidden:
    case kHeads:
    case kKvHeads:
    case kHeadDim:
    case kIntermediate:
    case kVocab:
    case kLayers:
    case kTp:
    case kPhase:
    case kBatch:
    case kSeqLen:
    case kKvLen:
    case kImplementation: return kind == MeasuredKind::kLayerKernels || kind == MeasuredKind::kStep;
    case kKernels: return kind == MeasuredKind::kLayerKernels;
    case kCollective:
    case kBytes:
    case kGpus:
    case kInterconnect: return kind == MeasuredKind::kCollective;
    case kColumnCount: break;
  }
  return false;
}

class RowParser {
 public:
  RowParser(const std::string& file, unsigned line, const Row& row)
      : file_(file), line_(line), row_(row) {}

  core::Result<Measurement> parse() {
    Measurement m;
    m.source = fmt::format("{}:{}", file_, line_);
    TESSERA_ASSIGN_OR_RETURN(m.kind, kind());
    for (std::size_t c = 0; c < kColumnCount; ++c) {
      if (!row_[c].empty() && !applies(static_cast<Col>(c), m.kind)) {
        return error(static_cast<Col>(c), fmt::format("does not apply to kind '{}'", row_[kKind]));
      }
    }
    TESSERA_ASSIGN_OR_RETURN(m.gpu, gpu());
    TESSERA_ASSIGN_OR_RETURN(m.measured_ns, time());
    if (m.kind != MeasuredKind::kCollective) {
      TESSERA_ASSIGN_OR_RETURN(m.precision, precision());
      if (!cell(kGemmStreamK).empty()) {
        TESSERA_ASSIGN_OR_RETURN(m.gemm_stream_k,
                                 detail::parse_bool(at(kGemmStreamK), cell(kGemmStreamK)));
      }
    }
    switch (m.kind) {
      case MeasuredKind::kGemm: {
        TESSERA_ASSIGN_OR_RETURN(m.m, whole(kM, 1, kMaxGemmDim));
        TESSERA_ASSIGN_OR_RETURN(m.n, whole(kN, 1, kMaxGemmDim));
        TESSERA_ASSIGN_OR_RETURN(m.k, whole(kK, 1, kMaxGemmDim));
        break;
      }
      case MeasuredKind::kLayerKernels:
      case MeasuredKind::kStep: TESSERA_TRY(model_step(m)); break;
      case MeasuredKind::kCollective: TESSERA_TRY(collective(m)); break;
    }
    return m;
  }

 private:
  Cell at(Col c) const { return Cell{file_, line_, kNames[c]}; }
  std::unexpected<core::Error> error(Col c, std::string_view what) const {
    return std::unexpected(cell_error(at(c), what));
  }
  std::unexpected<core::Error> missing(Col c) const {
    return error(c, fmt::format("required for kind '{}'", row_[kKind]));
  }
  const std::string& cell(Col c) const { return row_[c]; }

  core::Result<std::int64_t> whole(Col c, std::int64_t minimum, std::int64_t maximum) const {
    if (cell(c).empty()) return missing(c);
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t v, detail::parse_int(at(c), cell(c), minimum));
    TESSERA_TRY(at_most(c, v, maximum));
    return v;
  }
  core::Result<int> whole32(Col c, int minimum, int maximum, int fallback) const {
    if (cell(c).empty()) return fallback;
    TESSERA_ASSIGN_OR_RETURN(const int v, detail::parse_int32(at(c), cell(c), minimum));
    TESSERA_TRY(at_most(c, v, maximum));
    return v;
  }
  // The limits of limits.hpp: beyond them a row is refused, not simulated.
  core::Status at_most(Col c, std::int64_t value, std::int64_t maximum) const {
    if (value <= maximum) return {};
    return error(
        c, fmt::format("{} is above the largest value tessera simulates here, {}", value, maximum));
  }

  core::Result<MeasuredKind> kind() const {
    const std::string k = detail::lower(cell(kKind));
    if (k == "gemm") return MeasuredKind::kGemm;
    if (k == "layer") return MeasuredKind::kLayerKernels;
    if (k == "step") return MeasuredKind::kStep;
    if (k == "collective") return MeasuredKind::kCollective;
    return error(kKind,
                 fmt::format("'{}' is not a kind (gemm, layer, step, collective)", cell(kKind)));
  }

  core::Result<std::string> gpu() const {
    if (cell(kGpu).empty()) return error(kGpu, "empty; a GPU of the hardware catalog is required");
    auto spec = hw::find_gpu(cell(kGpu));
    if (!spec) return error(kGpu, spec.error().message());
    return spec->name;
  }

  core::Result<double> time() const {
    const std::string u = detail::lower(cell(kUnit));
    int exponent = 0;
    if (u == "ns") {
      exponent = 0;
    } else if (u == "us") {
      exponent = 3;
    } else if (u == "ms") {
      exponent = 6;
    } else if (u == "s") {
      exponent = 9;
    } else {
      return error(kUnit, fmt::format("'{}' is not a unit (ns, us, ms, s)", cell(kUnit)));
    }
    TESSERA_ASSIGN_OR_RETURN(const auto ns,
                             detail::parse_time_ns(at(kValue), cell(kValue), exponent));
    if (!ns) return error(kValue, fmt::format("'{}' is not a finite positive time", cell(kValue)));
    return *ns;
  }

  core::Result<workload::Precision> precision() const {
    if (cell(kPrecision).empty()) return workload::Precision::kBf16;
    if (const auto p = workload::parse_precision(cell(kPrecision))) return *p;
    return error(kPrecision, fmt::format("'{}' is not a precision (fp8, bf16, fp16, tf32, fp32)",
                                         cell(kPrecision)));
  }

  core::Result<workload::ModelConfig> model(MeasuredKind kind) const {
    workload::ModelConfig m{.name = "custom",
                            .layers = 0,
                            .hidden = 0,
                            .heads = 0,
                            .kv_heads = 0,
                            .head_dim = 0,
                            .intermediate = 0,
                            .vocab = 0,
                            .bytes_per_param = 2,
                            .kv_bytes_per_elem = 2};
    const bool catalog = !cell(kModel).empty();
    if (catalog) {
      auto found = workload::find_model(cell(kModel));
      if (!found) return error(kModel, found.error().message());
      m = *found;
    }
    struct Field {
      Col col;
      int workload::ModelConfig::*field;
      int maximum;
    };
    const std::array<Field, 7> fields{{
        {kHidden, &workload::ModelConfig::hidden, kMaxModelWidth},
        {kHeads, &workload::ModelConfig::heads, kMaxHeads},
        {kKvHeads, &workload::ModelConfig::kv_heads, kMaxHeads},
        {kHeadDim, &workload::ModelConfig::head_dim, kMaxHeads},
        {kIntermediate, &workload::ModelConfig::intermediate, kMaxModelWidth},
        {kVocab, &workload::ModelConfig::vocab, kMaxVocab},
        {kLayers, &workload::ModelConfig::layers, kMaxLayers},
    }};
    for (const auto& [col, field, maximum] : fields) {
      if (!cell(col).empty()) {
        TESSERA_ASSIGN_OR_RETURN(m.*field, detail::parse_int32(at(col), cell(col), 1));
        TESSERA_TRY(at_most(col, m.*field, maximum));
      } else if (!catalog) {
        if (col == kHidden || col == kHeads || col == kIntermediate || col == kVocab) {
          return error(col, fmt::format("required for kind '{}' without a model", cell(kKind)));
        }
        if (col == kLayers && kind == MeasuredKind::kStep) {
          return error(col, "required for kind 'step' without a model");
        }
      }
    }
    if (!catalog) {
      if (cell(kKvHeads).empty()) m.kv_heads = m.heads;
      if (cell(kHeadDim).empty()) {
        if (m.hidden % m.heads != 0) {
          return error(kHeadDim, fmt::format("required: hidden {} is not a multiple of heads {}",
                                             m.hidden, m.heads));
        }
        m.head_dim = m.hidden / m.heads;
      }
      if (cell(kLayers).empty()) m.layers = 1;
    }
    if (auto ok = m.validate(); !ok) {
      return std::unexpected(
          ok.error().with_context(fmt::format("{}:{}: model shape", file_, line_)));
    }
    return m;
  }

  core::Status model_step(Measurement& m) const {
    TESSERA_ASSIGN_OR_RETURN(m.model, model(m.kind));
    TESSERA_ASSIGN_OR_RETURN(m.tensor_parallel, whole32(kTp, 1, kMaxTensorParallel, 1));
    TESSERA_ASSIGN_OR_RETURN(const int batch, whole32(kBatch, 1, kMaxBatch, 1));
    const std::string phase = detail::lower(cell(kPhase));
    int length = 0;
    if (phase == "prefill") {
      m.phase = workload::Phase::kPrefill;
      if (!cell(kKvLen).empty()) return error(kKvLen, "applies to phase decode only");
      if (cell(kSeqLen).empty()) return error(kSeqLen, "required for phase prefill");
      TESSERA_ASSIGN_OR_RETURN(length, detail::parse_int32(at(kSeqLen), cell(kSeqLen), 1));
      TESSERA_TRY(at_most(kSeqLen, length, kMaxTokens));
    } else if (phase == "decode") {
      m.phase = workload::Phase::kDecode;
      if (!cell(kSeqLen).empty()) return error(kSeqLen, "applies to phase prefill only");
      if (cell(kKvLen).empty()) return error(kKvLen, "required for phase decode");
      TESSERA_ASSIGN_OR_RETURN(length, detail::parse_int32(at(kKvLen), cell(kKvLen), 0));
      TESSERA_TRY(at_most(kKvLen, length, kMaxTokens));
    } else if (phase.empty()) {
      return missing(kPhase);
    } else {
      return error(kPhase, fmt::format("'{}' is not a phase (prefill, decode)", cell(kPhase)));
    }
    m.lengths.assign(static_cast<std::size_t>(batch), length);

    const std::string impl = detail::lower(cell(kImplementation));
    if (impl.empty() || impl == "vllm") {
      m.implementation = Implementation::kVllm;
    } else if (impl == "hf-eager") {
      m.implementation = Implementation::kHfEager;
    } else {
      return error(kImplementation, fmt::format("'{}' is not an implementation (vllm, hf-eager)",
                                                cell(kImplementation)));
    }
    if (m.kind == MeasuredKind::kLayerKernels) TESSERA_TRY(kernels(m));
    return {};
  }

  core::Status kernels(Measurement& m) const {
    if (cell(kKernels).empty()) return missing(kKernels);
    std::string_view rest = cell(kKernels);
    for (;;) {
      const std::size_t plus = rest.find('+');
      std::string_view name = rest.substr(0, plus);
      while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
      while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
      if (std::ranges::find(kKernelNames, name) == kKernelNames.end()) {
        std::string known;
        for (std::string_view k : kKernelNames)
          known += known.empty() ? std::string(k) : fmt::format(", {}", k);
        return error(kKernels, fmt::format("'{}' is not a kernel name (known: {})", name, known));
      }
      m.layer_kernels.emplace_back(name);
      if (plus == std::string_view::npos) break;
      rest.remove_prefix(plus + 1);
    }
    return {};
  }

  core::Status collective(Measurement& m) const {
    const std::string c = detail::lower(cell(kCollective));
    if (c == "all_reduce") {
      m.collective = Collective::kAllReduce;
    } else if (c == "send_recv") {
      m.collective = Collective::kSendRecv;
    } else if (c.empty()) {
      return missing(kCollective);
    } else {
      return error(kCollective, fmt::format("'{}' is not a collective (all_reduce, send_recv)",
                                            cell(kCollective)));
    }
    TESSERA_ASSIGN_OR_RETURN(m.bytes, whole(kBytes, 1, kMaxCollectiveBytes));
    if (cell(kGpus).empty()) return missing(kGpus);
    TESSERA_ASSIGN_OR_RETURN(m.gpus, detail::parse_int32(at(kGpus), cell(kGpus), 2));
    TESSERA_TRY(at_most(kGpus, m.gpus, kMaxCollectiveGpus));
    const std::string link = detail::lower(cell(kInterconnect));
    if (link.empty()) return missing(kInterconnect);
    if (link != "nvswitch" && link != "nvlink-pairwise") {
      return error(kInterconnect,
                   fmt::format("'{}' is not an interconnect (nvswitch, nvlink-pairwise)",
                               cell(kInterconnect)));
    }
    m.interconnect = link;
    return {};
  }

  const std::string& file_;
  unsigned line_;
  const Row& row_;
};

core::Result<MeasurementSet> read(Reader& in, const std::string& path) {
  try {
    read_header(in, std::make_index_sequence<kColumnCount>{});
  } catch (const io::error::extra_column_in_header& e) {
    return core::failf(core::Domain::kIo, core::Code::kParse,
                       "{}: header: unknown column '{}' (known columns: {})", path, e.column_name,
                       known_columns());
  }
  for (Col c : kRequired) {
    if (!in.has_column(kNames[c])) {
      return core::failf(core::Domain::kIo, core::Code::kParse,
                         "{}: header: missing required column '{}' (gpu, kind, value and unit are "
                         "always required)",
                         path, kNames[c]);
    }
  }
  MeasurementSet out;
  Row row;
  for (;;) {
    for (std::string& cell : row) cell.clear();
    if (!read_row(in, row, std::make_index_sequence<kColumnCount>{})) break;
    TESSERA_ASSIGN_OR_RETURN(Measurement m, RowParser(path, in.get_file_line(), row).parse());
    out.rows.push_back(std::move(m));
  }
  return out;
}

}  // namespace

core::Result<MeasurementSet> read_measurement_csv(const std::string& path) {
  return detail::guard_csv(path, [&] {
    Reader in(path);
    return read(in, path);
  });
}

core::Result<MeasurementSet> parse_measurement_csv(std::string_view text,
                                                   const std::string& source) {
  return detail::guard_csv(source, [&] {
    Reader in(source.c_str(), text.data(), text.data() + text.size());
    return read(in, source);
  });
}

}  // namespace tessera::validation
