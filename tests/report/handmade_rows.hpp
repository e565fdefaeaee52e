#pragma once
// A few hand-made measurements for the report's tests: GEMMs on an H100, one layer's QKV
// projection on an A100 and an all-reduce over an H100 DGX's NVSwitch, with made-up times (the
// tests check the page, not the model), and a source name that tries to end the page's <script>
// elements.

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>

#include "tessera/validation/measurement.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::test {

inline constexpr std::string_view kHostileSource =
    "mine</script><script>console.error('ERROR injected')</script><!--.csv";

inline validation::MeasurementSet handmade_rows() {
  validation::MeasurementSet set;
  const auto gemm = [&](std::int64_t m, double measured_us, int line) {
    validation::Measurement r;
    r.source = fmt::format("{}:{}", kHostileSource, line);
    r.gpu = "H100-SXM5-80GB";
    r.kind = validation::MeasuredKind::kGemm;
    r.m = m;
    r.n = 4096;
    r.k = 4096;
    r.measured_ns = measured_us * 1e3;
    set.rows.push_back(std::move(r));
  };
  gemm(16, 12, 2);
  gemm(64, 14, 3);
  gemm(512, 40, 4);
  gemm(4096, 190, 5);
  gemm(8192, 420, 6);
  validation::Measurement layer;
  layer.source = "layers.csv:2";
  layer.gpu = "A100-SXM4-80GB";
  layer.kind = validation::MeasuredKind::kLayerKernels;
  layer.model = *workload::find_model("llama-3-8b");
  layer.lengths = {512};
  layer.layer_kernels = {"qkv_proj"};
  layer.measured_ns = 180e3;
  set.rows.push_back(std::move(layer));
  validation::Measurement all_reduce;
  all_reduce.source = "collectives.csv:2";
  all_reduce.gpu = "H100-SXM5-80GB";
  all_reduce.kind = validation::MeasuredKind::kCollective;
  all_reduce.collective = validation::Collective::kAllReduce;
  all_reduce.bytes = 64 << 20;
  all_reduce.gpus = 8;
  all_reduce.interconnect = "nvswitch";
  all_reduce.measured_ns = 500e3;
  set.rows.push_back(std::move(all_reduce));
  return set;
}

}  // namespace tessera::test
