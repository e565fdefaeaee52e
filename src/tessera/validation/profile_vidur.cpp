// microsoft/vidur's profiles: per-operator times of one layer (compute/GPU/ORG/MODEL/mlp.csv)
// and NCCL collectives (network/DIR/{all_reduce,send_recv}.csv, renamed DIR__OP.csv here).

#include <array>

#include "tessera/core/try.hpp"
#include "tessera/validation/csv_support.hpp"
#include "tessera/validation/profile_formats.hpp"

namespace tessera::validation::detail {

namespace {

// vidur's operator names and the kernels the builders emit for them (transformer.cpp). Its
// post-attention norm is a plain RMSNorm like the input one (the residual add is an operator of
// its own, and the two norms measure the same time on every row), so it is compared with the
// builders' plain RMSNorm of the same shape, not with their fused add-and-norm.
struct Operator {
  const char* median;  // column
  std::string_view name;
  std::string_view kernel;
};
constexpr std::array<Operator, 10> kOperators{{
    {"time_stats.emb.median", "emb", "embedding"},
    {"time_stats.input_layernorm.median", "input_layernorm", "input_rmsnorm"},
    {"time_stats.attn_pre_proj.median", "attn_pre_proj", "qkv_proj"},
    {"time_stats.attn_rope.median", "attn_rope", "rotary_embedding"},
    {"time_stats.attn_post_proj.median", "attn_post_proj", "o_proj"},
    {"time_stats.post_attention_layernorm.median", "post_attention_layernorm", "input_rmsnorm"},
    {"time_stats.mlp_up_proj.median", "mlp_up_proj", "gate_up_proj"},
    {"time_stats.mlp_act.median", "mlp_act", "silu_and_mul"},
    {"time_stats.mlp_down_proj.median", "mlp_down_proj", "down_proj"},
    {"time_stats.add.median", "add", "residual_add"},
}};
constexpr std::array<const char*, 8> kShape{
    "n_head",     "n_kv_head",     "n_embd",     "n_expanded_embd",
    "vocab_size", "use_gated_mlp", "num_tokens", "num_tensor_parallel_workers"};
constexpr int kMs = 6;  // ms -> ns: the decimal point moves 6 places

core::Result<MeasurementSet> read_mlp(const ProfileFile& f, std::string_view gpu,
                                      std::string_view model_dir) {
  ProfileReader<18> in(f.path);
  in.read_header(io::ignore_extra_column | io::ignore_missing_column, kOperators[0].median,
                 kOperators[1].median, kOperators[2].median, kOperators[3].median,
                 kOperators[4].median, kOperators[5].median, kOperators[6].median,
                 kOperators[7].median, kOperators[8].median, kOperators[9].median, kShape[0],
                 kShape[1], kShape[2], kShape[3], kShape[4], kShape[5], kShape[6], kShape[7]);
  for (const char* c : kShape) {
    if (!in.has_column(c)) {
      return core::failf(core::Domain::kIo, core::Code::kParse, "{}: header: missing column '{}'",
                         f.relative, c);
    }
  }
  std::array<bool, kOperators.size()> present{};
  int present_count = 0;
  for (std::size_t i = 0; i < kOperators.size(); ++i) {
    present[i] = in.has_column(kOperators[i].median);
    present_count += present[i] ? 1 : 0;
  }

  MeasurementSet out;
  SkipTally skips(f.relative);
  std::array<std::string, kOperators.size()> t;
  std::array<std::string, kShape.size()> s;
  while (in.read_row(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], s[0], s[1], s[2],
                     s[3], s[4], s[5], s[6], s[7])) {
    const unsigned line = in.get_file_line();
    auto cell = [&](const char* column) { return Cell{f.relative, line, column}; };
    TESSERA_ASSIGN_OR_RETURN(const int heads, parse_int32(cell(kShape[0]), s[0], 1));
    TESSERA_ASSIGN_OR_RETURN(const int kv_heads, parse_int32(cell(kShape[1]), s[1], 1));
    TESSERA_ASSIGN_OR_RETURN(const int hidden, parse_int32(cell(kShape[2]), s[2], 1));
    TESSERA_ASSIGN_OR_RETURN(const int intermediate, parse_int32(cell(kShape[3]), s[3], 1));
    TESSERA_ASSIGN_OR_RETURN(const int vocab, parse_int32(cell(kShape[4]), s[4], 1));
    TESSERA_ASSIGN_OR_RETURN(const bool gated, parse_bool(cell(kShape[5]), s[5]));
    TESSERA_ASSIGN_OR_RETURN(const int tokens, parse_int32(cell(kShape[6]), s[6], 1));
    TESSERA_ASSIGN_OR_RETURN(const int tp, parse_int32(cell(kShape[7]), s[7], 1));
    if (!gated) {
      skips.add(
          "use_gated_mlp False: a non-gated GELU MLP with LayerNorm, not what the builders build",
          present_count);
      continue;
    }
    if (hidden % heads != 0) {
      return std::unexpected(cell_error(
          cell(kShape[2]), fmt::format("n_embd {} is not a multiple of n_head {}", hidden, heads)));
    }
    const workload::ModelConfig model{.name = lower(model_dir),
                                      .layers = 1,
                                      .hidden = hidden,
                                      .heads = heads,
                                      .kv_heads = kv_heads,
                                      .head_dim = hidden / heads,
                                      .intermediate = intermediate,
                                      .vocab = vocab,
                                      .bytes_per_param = 2,
                                      .kv_bytes_per_elem = 2};
    if (auto ok = model.validate(); !ok) {
      return std::unexpected(ok.error().with_context(fmt::format("{}:{}", f.relative, line)));
    }
    for (std::size_t i = 0; i < kOperators.size(); ++i) {
      const Operator& op = kOperators[i];
      if (!present[i]) {
        return core::failf(core::Domain::kIo, core::Code::kParse,
                           "{}: header: missing column '{}' (a gated-MLP profile has it)",
                           f.relative, op.median);
      }
      TESSERA_ASSIGN_OR_RETURN(const auto ns, parse_time_ns(cell(op.median), t[i], kMs));
      if (!ns) {
        skips.add(fmt::format("{} is not a finite positive time", op.median));
        continue;
      }
      // vidur times the operators on a batch of num_tokens tokens: one prompt of that length.
      // sarathi-serve runs them in FP16 (vidur's MlpWrapper casts the model to torch.float16).
      Measurement r;
      r.source = fmt::format("{}:{} {}", f.relative, line, op.name);
      r.gpu = std::string(gpu);
      r.kind = MeasuredKind::kLayerKernels;
      r.precision = workload::Precision::kFp16;
      r.model = model;
      r.tensor_parallel = tp;
      r.phase = workload::Phase::kPrefill;
      r.lengths = {tokens};
      r.layer_kernels = {std::string(op.kernel)};
      r.measured_ns = *ns;
      out.rows.push_back(std::move(r));
    }
  }
  skips.append_to(out.skipped);
  return out;
}

struct Machine {
  std::string_view gpu;
  std::string_view interconnect;
};
std::optional<Machine> machine(std::string_view dir) {
  Machine m;
  if (dir.starts_with("a100_")) {
    m.gpu = kA100;
  } else if (dir.starts_with("h100_")) {
    // The SKU is not stated upstream; a DGX H100 holds the SXM5 80 GB part.
    m.gpu = kH100;
  } else {
    return std::nullopt;
  }
  const std::string_view rest = dir.substr(5);
  if (rest == "dgx") {
    m.interconnect = "nvswitch";
  } else if (rest == "pairwise_nvlink") {
    m.interconnect = "nvlink-pairwise";
  } else {
    return std::nullopt;
  }
  return m;
}

core::Result<MeasurementSet> read_collective(const ProfileFile& f, std::string_view dir,
                                             std::string_view op) {
  const std::string median = fmt::format("time_stats.{}.median", op);
  ProfileReader<6> in(f.path);
  in.read_header(io::ignore_extra_column, median, "rank", "num_workers", "size", "collective",
                 "devices_per_node");
  const auto where = machine(dir);
  // Upstream's h100_pairwise_nvlink/send_recv.csv is the a100 file byte for byte
  // (PROVENANCE.md): its rows are counted, not used.
  const bool duplicate = dir == "h100_pairwise_nvlink" && op == "send_recv";

  MeasurementSet out;
  SkipTally skips(f.relative);
  std::int64_t lines = 0;
  std::string time, rank, workers, size, collective, per_node;
  while (in.read_row(time, rank, workers, size, collective, per_node)) {
    ++lines;
    if (duplicate || !where) continue;
    const unsigned line = in.get_file_line();
    auto cell = [&](std::string_view column) { return Cell{f.relative, line, column}; };
    if (collective != op) {
      return std::unexpected(cell_error(
          cell("collective"), fmt::format("'{}' but the file name says '{}'", collective, op)));
    }
    TESSERA_ASSIGN_OR_RETURN(const int rank_number, parse_int32(cell("rank"), rank, 0));
    TESSERA_ASSIGN_OR_RETURN(const int gpus, parse_int32(cell("num_workers"), workers, 1));
    TESSERA_ASSIGN_OR_RETURN(const std::int64_t bytes, parse_int(cell("size"), size, 1));
    TESSERA_ASSIGN_OR_RETURN(const int local, parse_int32(cell("devices_per_node"), per_node, 1));
    TESSERA_ASSIGN_OR_RETURN(const auto ns, parse_time_ns(cell(median), time, kMs));
    // vidur can record every rank's time; one collective is one row, rank 0's (the files here
    // hold rank 0 only).
    if (rank_number != 0) {
      skips.add("rank other than 0 (one row per collective: rank 0's)");
      continue;
    }
    if (local < gpus) {
      skips.add(
          "spans nodes (devices_per_node < num_workers): the network between nodes is not "
          "modelled");
      continue;
    }
    if (!ns) {
      skips.add(fmt::format("{} is not a finite positive time", median));
      continue;
    }
    Measurement r;
    r.source = fmt::format("{}:{}", f.relative, line);
    r.gpu = std::string(where->gpu);
    r.kind = MeasuredKind::kCollective;
    r.collective = op == "all_reduce" ? Collective::kAllReduce : Collective::kSendRecv;
    r.bytes = bytes;
    r.gpus = gpus;
    r.interconnect = std::string(where->interconnect);
    r.measured_ns = *ns;
    out.rows.push_back(std::move(r));
  }
  if (duplicate) {
    skips.add(
        "byte-identical to a100_pairwise_nvlink__send_recv.csv upstream (PROVENANCE.md): not an "
        "H100 measurement",
        lines);
  } else if (!where) {
    skips.add(fmt::format("unknown machine directory '{}' (known: {{a100,h100}}_{{dgx,"
                          "pairwise_nvlink}})",
                          dir),
              lines);
  }
  skips.append_to(out.skipped);
  return out;
}

}  // namespace

core::Result<MeasurementSet> read_vidur_mlp(const ProfileFile& f, std::string_view gpu,
                                            std::string_view model_dir) {
  return guard_csv(f.relative, [&] { return read_mlp(f, gpu, model_dir); });
}

core::Result<MeasurementSet> read_vidur_collective(const ProfileFile& f, std::string_view dir,
                                                   std::string_view op) {
  return guard_csv(f.relative, [&] { return read_collective(f, dir, op); });
}

}  // namespace tessera::validation::detail
