// Mutinifni/splitwise-sim's data/perf_model.csv: whole prefill and decode iterations of a model
// on a DGX (ms), the profile behind the Splitwise (ISCA'24) simulator.

#include <array>

#include "tessera/core/try.hpp"
#include "tessera/validation/csv_support.hpp"
#include "tessera/validation/profile_formats.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::validation::detail {

namespace {

constexpr std::array<const char*, 8> kColumns{"model",      "hardware",       "prompt_size",
                                              "batch_size", "token_size",     "prompt_time",
                                              "token_time", "tensor_parallel"};

// Each line gives two rows: the prefill of batch_size prompts of prompt_size tokens
// (prompt_time), and a decode iteration (token_time, the mean over the token_size generated
// tokens) taken at the midpoint context, prompt_size + token_size / 2 tokens per sequence.
core::Result<MeasurementSet> read(const ProfileFile& f) {
  ProfileReader<8> in(f.path);
  in.read_header(io::ignore_extra_column, kColumns[0], kColumns[1], kColumns[2], kColumns[3],
                 kColumns[4], kColumns[5], kColumns[6], kColumns[7]);
  MeasurementSet out;
  SkipTally skips(f.relative);
  std::array<std::string, kColumns.size()> c;
  while (in.read_row(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7])) {
    const unsigned line = in.get_file_line();
    auto cell = [&](std::size_t i) { return Cell{f.relative, line, kColumns[i]}; };
    const std::string& hardware = c[1];
    std::string_view gpu;
    if (hardware == "a100-80gb") {
      gpu = kA100;
    } else if (hardware == "h100-80gb") {
      gpu = kH100;
    } else if (hardware == "h100-80gb-pcap") {
      skips.add("h100-80gb-pcap: a power-capped H100, which the catalog does not model", 2);
      continue;
    } else {
      skips.add(fmt::format("hardware '{}' is not known", hardware), 2);
      continue;
    }
    const std::string key = c[0] == "llama2-70b" ? "llama-2-70b" : c[0];
    const auto model = workload::find_model(key);
    if (!model) {
      skips.add(fmt::format("model '{}' is not in the model catalog", c[0]), 2);
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(const int prompt, parse_int32(cell(2), c[2], 1));
    TESSERA_ASSIGN_OR_RETURN(const int batch, parse_int32(cell(3), c[3], 1));
    TESSERA_ASSIGN_OR_RETURN(const int tokens, parse_int32(cell(4), c[4], 0));
    TESSERA_ASSIGN_OR_RETURN(const auto prefill_ns, parse_time_ns(cell(5), c[5], 6));
    TESSERA_ASSIGN_OR_RETURN(const auto decode_ns, parse_time_ns(cell(6), c[6], 6));
    TESSERA_ASSIGN_OR_RETURN(const int tp, parse_int32(cell(7), c[7], 1));
    const auto step = [&](workload::Phase phase, int length, double ns, const char* column) {
      Measurement r;
      r.source = fmt::format("{}:{} {}", f.relative, line, column);
      r.gpu = gpu;
      r.kind = MeasuredKind::kStep;
      r.precision = workload::Precision::kFp16;
      r.model = *model;
      r.tensor_parallel = tp;
      r.phase = phase;
      r.lengths.assign(static_cast<std::size_t>(batch), length);
      r.measured_ns = ns;
      return r;
    };
    if (prefill_ns) {
      out.rows.push_back(step(workload::Phase::kPrefill, prompt, *prefill_ns, "prompt_time"));
    } else {
      skips.add("prompt_time is not a finite positive time");
    }
    if (decode_ns) {
      out.rows.push_back(
          step(workload::Phase::kDecode, prompt + tokens / 2, *decode_ns, "token_time"));
    } else {
      skips.add("token_time is not a finite positive time");
    }
  }
  skips.append_to(out.skipped);
  return out;
}

}  // namespace

core::Result<MeasurementSet> read_splitwise(const ProfileFile& f) {
  return guard_csv(f.relative, [&] { return read(f); });
}

}  // namespace tessera::validation::detail
