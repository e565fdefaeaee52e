#include "tessera/validation/measurement_csv.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tessera::validation {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class MeasurementCsvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() /
             fmt::format("tessera_measurements_{}_{}.csv", ::getpid(),
                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
  }
  void TearDown() override { fs::remove(path_); }

  core::Result<MeasurementSet> read(std::string_view text) {
    std::ofstream(path_) << text;
    return read_measurement_csv(path_);
  }
  // The error of reading TEXT, or "" if it read.
  std::string error(std::string_view text) {
    auto r = read(text);
    return r ? std::string() : r.error().message();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST_F(MeasurementCsvTest, ReadsEachKind) {
  auto r = read(
      "# measured on one H100\n"
      "kind,gpu,precision,m,n,k,model,heads,tp,phase,batch,seq_len,kv_len,kernels,"
      "implementation,collective,bytes,gpus,interconnect,value,unit\n"
      "\n"
      "gemm,H100-SXM5-80GB,fp8,4096,4096,4096,,,,,,,,,,,,,,0.162,ms\n"
      "# a comment between rows\n"
      "layer,H100-SXM5-80GB,,,,,llama-3-8b,,2,prefill,3,512,,qkv_proj + o_proj,hf-eager,,,,,41.3,"
      "us\n"
      "step,A100-SXM4-80GB,fp16,,,,llama-2-70b,,4,decode,2,,1000,,,,,,,54.875,ms\n"
      "collective,H100-SXM5-80GB,,,,,,,,,,,,,,all_reduce,1048576,8,nvswitch,125000,ns\n"
      "layer,H100-SXM5-80GB,,,,,llama-3-8b,,,decode,1,,0,@attention,,,,,,2,s\n");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->rows.size(), 5u);
  EXPECT_TRUE(r->skipped.empty());

  const Measurement& g = r->rows[0];
  EXPECT_EQ(g.source, path() + ":4");
  EXPECT_EQ(g.kind, MeasuredKind::kGemm);
  EXPECT_EQ(g.gpu, "H100-SXM5-80GB");
  EXPECT_EQ(g.precision, workload::Precision::kFp8);
  EXPECT_EQ(g.m, 4096);
  EXPECT_EQ(g.n, 4096);
  EXPECT_EQ(g.k, 4096);
  EXPECT_EQ(g.measured_ns, 162000.0);

  const Measurement& l = r->rows[1];
  EXPECT_EQ(l.source, path() + ":6");
  EXPECT_EQ(l.kind, MeasuredKind::kLayerKernels);
  EXPECT_EQ(l.precision, workload::Precision::kBf16);  // the default
  EXPECT_EQ(l.model.name, "llama-3-8b");
  EXPECT_EQ(l.model.hidden, 4096);
  EXPECT_EQ(l.tensor_parallel, 2);
  EXPECT_EQ(l.phase, workload::Phase::kPrefill);
  EXPECT_THAT(l.lengths, ElementsAre(512, 512, 512));
  EXPECT_THAT(l.layer_kernels, ElementsAre("qkv_proj", "o_proj"));
  EXPECT_EQ(l.implementation, Implementation::kHfEager);
  EXPECT_EQ(l.measured_ns, 41300.0);

  const Measurement& s = r->rows[2];
  EXPECT_EQ(s.kind, MeasuredKind::kStep);
  EXPECT_EQ(s.gpu, "A100-SXM4-80GB");
  EXPECT_EQ(s.model.name, "llama-2-70b");
  EXPECT_EQ(s.phase, workload::Phase::kDecode);
  EXPECT_THAT(s.lengths, ElementsAre(1000, 1000));
  EXPECT_EQ(s.implementation, Implementation::kVllm);
  EXPECT_EQ(s.measured_ns, 54875000.0);

  const Measurement& c = r->rows[3];
  EXPECT_EQ(c.kind, MeasuredKind::kCollective);
  EXPECT_EQ(c.collective, Collective::kAllReduce);
  EXPECT_EQ(c.bytes, 1048576);
  EXPECT_EQ(c.gpus, 8);
  EXPECT_EQ(c.interconnect, "nvswitch");
  EXPECT_EQ(c.measured_ns, 125000.0);

  const Measurement& a = r->rows[4];
  EXPECT_THAT(a.layer_kernels, ElementsAre(std::string(kAttentionKernels)));
  EXPECT_THAT(a.lengths, ElementsAre(0));
  EXPECT_EQ(a.measured_ns, 2e9);
}

TEST_F(MeasurementCsvTest, TheGemmLibraryMayBeSaidToHaveStreamK) {
  auto r = read(
      "gpu,kind,m,n,k,gemm_stream_k,value,unit\n"
      "H100-SXM5-80GB,gemm,520,4096,4096,true,27.2,us\n"
      "H100-SXM5-80GB,gemm,520,4096,4096,False,48,us\n"
      "H100-SXM5-80GB,gemm,520,4096,4096,,48,us\n");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->rows.size(), 3u);
  EXPECT_EQ(r->rows[0].gemm_stream_k, std::optional(true));
  EXPECT_EQ(r->rows[1].gemm_stream_k, std::optional(false));
  EXPECT_EQ(r->rows[2].gemm_stream_k, std::nullopt);  // the simulator's own setting

  EXPECT_THAT(error("gpu,kind,m,n,k,gemm_stream_k,value,unit\n"
                    "H100-SXM5-80GB,gemm,1,1,1,maybe,1,ns\n"),
              HasSubstr(":2: column 'gemm_stream_k': 'maybe' is not True or False"));
  EXPECT_THAT(error("gpu,kind,collective,bytes,gpus,interconnect,gemm_stream_k,value,unit\n"
                    "H100-SXM5-80GB,collective,all_reduce,1024,2,nvswitch,true,1,us\n"),
              HasSubstr("column 'gemm_stream_k': does not apply to kind 'collective'"));
}

TEST_F(MeasurementCsvTest, ShapeWithoutAModel) {
  auto r = read(
      "gpu,kind,hidden,heads,kv_heads,intermediate,vocab,phase,seq_len,kernels,value,unit\n"
      "H100-SXM5-80GB,layer,2048,16,4,8192,32000,prefill,128,gate_up_proj,10,us\n");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->rows.size(), 1u);
  const workload::ModelConfig& m = r->rows[0].model;
  EXPECT_EQ(m.hidden, 2048);
  EXPECT_EQ(m.heads, 16);
  EXPECT_EQ(m.kv_heads, 4);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.intermediate, 8192);
  EXPECT_EQ(m.vocab, 32000);
  EXPECT_EQ(m.layers, 1);

  EXPECT_THAT(error("gpu,kind,hidden,heads,phase,seq_len,kernels,value,unit\n"
                    "H100-SXM5-80GB,layer,2048,16,prefill,128,gate_up_proj,10,us\n"),
              HasSubstr(":2: column 'intermediate': required for kind 'layer' without a model"));
  EXPECT_THAT(error("gpu,kind,hidden,heads,intermediate,vocab,phase,seq_len,value,unit\n"
                    "H100-SXM5-80GB,step,2048,16,8192,32000,prefill,128,10,us\n"),
              HasSubstr(":2: column 'layers': required for kind 'step' without a model"));
}

TEST_F(MeasurementCsvTest, UnknownColumnIsAnErrorListingTheKnownOnes) {
  const std::string e = error("gpu,kind,m,n,k,valu,value,unit\nH100-SXM5-80GB,gemm,1,1,1,,1,ns\n");
  EXPECT_THAT(e, HasSubstr("header: unknown column 'valu'"));
  EXPECT_THAT(e, HasSubstr("known columns: gpu, kind, precision, m, n, k, model"));
}

TEST_F(MeasurementCsvTest, MissingRequiredColumn) {
  EXPECT_THAT(error("gpu,kind,m,n,k,value\nH100-SXM5-80GB,gemm,1,1,1,1\n"),
              HasSubstr("header: missing required column 'unit'"));
  // A column the kind needs may be left out of the header, then it is empty: an error for gemm.
  EXPECT_EQ(error("gpu,kind,m,n,value,unit\nH100-SXM5-80GB,gemm,1,1,1,ns\n"),
            path() + ":2: column 'k': required for kind 'gemm'");
}

TEST_F(MeasurementCsvTest, BadCellsNameFileLineAndColumn) {
  const std::string header = "gpu,kind,m,n,k,model,phase,seq_len,kernels,value,unit\n";
  auto bad = [&](std::string_view row) {
    std::string text = header;
    text += "# comment\n";
    text += row;
    return error(text);
  };
  EXPECT_EQ(bad("H100-SXM5-80GB,gemm,1,1,1,,,,,5,minutes\n"),
            path() + ":3: column 'unit': 'minutes' is not a unit (ns, us, ms, s)");
  EXPECT_EQ(bad("H100-SXM5-80GB,gemm,1,1,1,,,,,-5,ns\n"),
            path() + ":3: column 'value': '-5' is not a finite positive time");
  EXPECT_EQ(bad("H100-SXM5-80GB,gemm,1,x,1,,,,,5,ns\n"),
            path() + ":3: column 'n': 'x' is not a whole number");
  EXPECT_EQ(bad("H100-SXM5-80GB,gemv,1,1,1,,,,,5,ns\n"),
            path() + ":3: column 'kind': 'gemv' is not a kind (gemm, layer, step, collective)");
  EXPECT_EQ(bad("H100-SXM5-80GB,gemm,1,1,1,llama-3-8b,,,,5,ns\n"),
            path() + ":3: column 'model': does not apply to kind 'gemm'");
  EXPECT_THAT(bad("H100-SXM5-80GB,layer,,,,llama-3-8b,prefill,128,qkv_prj,5,ns\n"),
              HasSubstr(":3: column 'kernels': 'qkv_prj' is not a kernel name (known: embedding"));
  EXPECT_THAT(bad("H100-SXM5-80GB,layer,,,,no-such-model,prefill,128,qkv_proj,5,ns\n"),
              HasSubstr(":3: column 'model': "));
  EXPECT_EQ(bad("H100-SXM5-80GB,layer,,,,llama-3-8b,prefill,,qkv_proj,5,ns\n"),
            path() + ":3: column 'seq_len': required for phase prefill");
  EXPECT_THAT(bad("Z900,gemm,1,1,1,,,,,5,ns\n"), HasSubstr(":3: column 'gpu': "));
  EXPECT_EQ(bad("H100-SXM5-80GB,gemm,1,1\n"),
            path() + ":3: fewer cells than the header has columns");
}

TEST_F(MeasurementCsvTest, SizesBeyondTheLimitsAreRefusedNamingTheLimit) {
  const std::string header = "gpu,kind,m,n,k,model,phase,batch,seq_len,kernels,value,unit\n";
  EXPECT_EQ(error(header + "h100,gemm,16777217,1,1,,,,,,5,ns\n"),
            path() +
                ":2: column 'm': 16777217 is above the largest value tessera simulates "
                "here, 16777216");
  EXPECT_THAT(error(header + "h100,layer,,,,llama-3-8b,prefill,65537,128,qkv_proj,5,ns\n"),
              HasSubstr(":2: column 'batch': 65537 is above the largest value"));
  EXPECT_THAT(error(header + "h100,layer,,,,llama-3-8b,prefill,1,4194305,qkv_proj,5,ns\n"),
              HasSubstr(":2: column 'seq_len': 4194305 is above the largest value"));
}

TEST_F(MeasurementCsvTest, TextInMemoryReadsAsTheFileDoes) {
  const std::string text =
      "gpu,kind,m,n,k,value,unit\n"
      "h100,gemm,64,4096,4096,15,us\n";
  const auto r = parse_measurement_csv(text, "pasted");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0].source, "pasted:2");
  EXPECT_EQ(r->rows[0].measured_ns, 15000.0);
  const auto bad = parse_measurement_csv("gpu,kind\n", "pasted");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("pasted: header: missing required column"));
}

TEST_F(MeasurementCsvTest, EmptyAndMissingFiles) {
  EXPECT_THAT(error("# only a comment\n"), HasSubstr("no header row"));
  auto r = read_measurement_csv(path() + ".absent");
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr(".absent: cannot open the file"));
}

}  // namespace
}  // namespace tessera::validation
