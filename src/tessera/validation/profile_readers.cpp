// Which reader a file under perf_profiles/ needs, from its path (the layout PROVENANCE.md
// describes), and the walk over all of them.

#include "tessera/validation/profile_readers.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>
#include <system_error>
#include <vector>

#include "tessera/core/text.hpp"
#include "tessera/validation/profile_formats.hpp"

namespace tessera::validation {

namespace {

namespace fs = std::filesystem;
using detail::ProfileFile;

constexpr std::string_view kKnownLayouts =
    "vidur_compute/{a100,h100}/ORG/MODEL/mlp.csv, "
    "vidur_collectives/DIR__{all_reduce,send_recv}.csv, "
    "inference_sim_kernels_h100/gemm/h100/data.csv, "
    "inference_sim_kernels_h100/mha/prefill/h100/NQ-NKV-HD.csv, "
    "inference_sim_kernels_h100/mha/decode/h100/NQ-NKV-HD-tpN.csv, "
    "llmservingsim_h100/ORG/MODEL/tpN/{layers,attention}.csv, splitwise_sim/perf_model.csv";

std::optional<int> positive(std::string_view s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < 1) return std::nullopt;
  return v;
}

std::string_view strip_csv(std::string_view name) {
  return name.ends_with(".csv") ? name.substr(0, name.size() - 4) : std::string_view{};
}

// NQ-NKV-HD[-tpN] from a file name without ".csv".
struct HeadShape {
  int heads = 0, kv_heads = 0, head_dim = 0, tp = 0;
};
std::optional<HeadShape> head_shape(std::string_view stem, bool with_tp) {
  const auto parts = core::split(stem, '-');
  if (parts.size() != (with_tp ? 4u : 3u)) return std::nullopt;
  const auto nq = positive(parts[0]);
  const auto nkv = positive(parts[1]);
  const auto hd = positive(parts[2]);
  if (!nq || !nkv || !hd) return std::nullopt;
  HeadShape s{.heads = *nq, .kv_heads = *nkv, .head_dim = *hd, .tp = 1};
  if (with_tp) {
    if (!parts[3].starts_with("tp")) return std::nullopt;
    const auto tp = positive(parts[3].substr(2));
    if (!tp) return std::nullopt;
    s.tp = *tp;
  }
  return s;
}

// The reader for F, or nullopt when its path is no known layout.
std::optional<core::Result<MeasurementSet>> dispatch(const ProfileFile& f) {
  const auto p = core::split(f.relative, '/');
  const std::string_view top = p[0];
  if (top == "vidur_compute" && p.size() == 5 && p[4] == "mlp.csv") {
    if (p[1] == "a100") return detail::read_vidur_mlp(f, detail::kA100, p[3]);
    // vidur's h100 profiles do not state the SKU; the SXM5 80 GB part is assumed.
    if (p[1] == "h100") return detail::read_vidur_mlp(f, detail::kH100, p[3]);
    return std::nullopt;
  }
  if (top == "vidur_collectives" && p.size() == 2) {
    const std::string_view stem = strip_csv(p[1]);
    const std::size_t sep = stem.find("__");
    if (sep == std::string_view::npos) return std::nullopt;
    const std::string_view op = stem.substr(sep + 2);
    if (op != "all_reduce" && op != "send_recv") return std::nullopt;
    return detail::read_vidur_collective(f, stem.substr(0, sep), op);
  }
  if (top == "inference_sim_kernels_h100") {
    if (p.size() == 4 && p[1] == "gemm" && p[2] == "h100" && p[3] == "data.csv") {
      return detail::read_inference_sim_gemm(f);
    }
    if (p.size() == 5 && p[1] == "mha" && p[3] == "h100") {
      const std::string_view stem = strip_csv(p[4]);
      if (p[2] == "prefill") {
        if (const auto s = head_shape(stem, false)) {
          return detail::read_inference_sim_prefill(f, s->heads, s->kv_heads, s->head_dim);
        }
      } else if (p[2] == "decode") {
        if (const auto s = head_shape(stem, true)) {
          return detail::read_inference_sim_decode(f, s->heads, s->kv_heads, s->head_dim, s->tp);
        }
      }
    }
    return std::nullopt;
  }
  if (top == "llmservingsim_h100" && p.size() == 5 && p[3].starts_with("tp") &&
      positive(p[3].substr(2))) {
    if (p[4] == "layers.csv") return detail::read_llmservingsim_layers(f, p[2]);
    if (p[4] == "attention.csv") return detail::read_llmservingsim_attention(f, p[2]);
    return std::nullopt;
  }
  if (top == "splitwise_sim" && p.size() == 2 && p[1] == "perf_model.csv") {
    return detail::read_splitwise(f);
  }
  return std::nullopt;
}

}  // namespace

core::Result<MeasurementSet> read_profile(const std::string& perf_profiles_dir,
                                          const std::string& relative) {
  const ProfileFile f{.path = (fs::path(perf_profiles_dir) / relative).string(),
                      .relative = relative};
  if (auto r = dispatch(f)) return std::move(*r);
  return core::failf(core::Domain::kIo, core::Code::kNotFound,
                     "{}: not a known profile format (known under perf_profiles/: {})", relative,
                     kKnownLayouts);
}

core::Result<MeasurementSet> read_shared_profiles(const std::string& perf_profiles_dir) {
  std::error_code ec;
  if (!fs::is_directory(perf_profiles_dir, ec)) {
    return core::failf(core::Domain::kIo, core::Code::kNotFound,
                       "{}: no such directory (the data directory's perf_profiles/)",
                       perf_profiles_dir);
  }
  std::vector<std::string> files;
  for (fs::recursive_directory_iterator it(perf_profiles_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".csv") {
      files.push_back(it->path().lexically_relative(perf_profiles_dir).generic_string());
    }
  }
  if (ec) {
    return core::failf(core::Domain::kIo, core::Code::kInternal, "{}: cannot list: {}",
                       perf_profiles_dir, ec.message());
  }
  std::ranges::sort(files);

  MeasurementSet all;
  for (const std::string& relative : files) {
    const ProfileFile f{.path = (fs::path(perf_profiles_dir) / relative).string(),
                        .relative = relative};
    auto r = dispatch(f);
    if (!r) {
      all.skipped.push_back(Skipped{.source = relative, .reason = "not a known profile format"});
      continue;
    }
    if (!*r) return std::unexpected(std::move(*r).error());
    MeasurementSet& one = **r;
    std::ranges::move(one.rows, std::back_inserter(all.rows));
    std::ranges::move(one.skipped, std::back_inserter(all.skipped));
  }
  return all;
}

std::string_view profile_family(std::string_view source) {
  constexpr std::string_view kFamilies[] = {"vidur_compute", "vidur_collectives",
                                            "inference_sim_kernels_h100", "llmservingsim_h100",
                                            "splitwise_sim"};
  for (std::string_view family : kFamilies) {
    if (source.starts_with(family) && source.size() > family.size() &&
        source[family.size()] == '/') {
      return family;
    }
  }
  return {};
}

}  // namespace tessera::validation
