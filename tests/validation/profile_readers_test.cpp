#include "tessera/validation/profile_readers.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "tessera/experiment/data_dir.hpp"
#include "tessera/workload/models/transformer.hpp"

namespace tessera::validation {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A perf_profiles/ tree of small files in a fresh temporary directory.
class ProfileReadersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("tessera_profiles_{}_{}", ::getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& relative, std::string_view text) {
    const fs::path p = root_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  core::Result<MeasurementSet> read(const std::string& relative) {
    return read_profile(root_.string(), relative);
  }
  std::string dir() const { return root_.string(); }

 private:
  fs::path root_;
};

const Measurement* find(const MeasurementSet& s, std::string_view source) {
  for (const Measurement& m : s.rows) {
    if (m.source == source) return &m;
  }
  return nullptr;
}

std::int64_t skipped_rows(const MeasurementSet& s, std::string_view reason_part) {
  std::int64_t n = 0;
  for (const Skipped& k : s.skipped) {
    if (k.reason.find(reason_part) != std::string::npos) n += k.rows;
  }
  return n;
}

// The vidur mlp.csv columns the reader uses, plus one it must ignore (emb.min).
constexpr std::string_view kMlpHeader =
    "time_stats.emb.min,time_stats.emb.median,time_stats.input_layernorm.median,"
    "time_stats.attn_pre_proj.median,time_stats.attn_rope.median,"
    "time_stats.attn_post_proj.median,time_stats.post_attention_layernorm.median,"
    "time_stats.mlp_up_proj.median,time_stats.mlp_act.median,time_stats.mlp_down_proj.median,"
    "time_stats.add.median,n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,"
    "num_tokens,num_tensor_parallel_workers\n";
constexpr std::string_view kMlp = "vidur_compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv";

std::string mlp(std::string_view rows) {
  std::string text(kMlpHeader);
  text += rows;
  return text;
}

TEST_F(ProfileReadersTest, VidurMlpGivesOneRowPerOperator) {
  write(std::string(kMlp),
        mlp("0.2,0.234,0.105,1.911,0.149,0.611,0.104,3.3655,0.266,1.604,0.055,32,32,4096,11008,"
            "32768,True,4096,1\n"
            "0.2,0.1,0.1,0.9,0,0.3,0.1,1.6,0.1,0.8,0.03,32,32,4096,11008,32768,True,2048,2\n"));
  auto r = read(std::string(kMlp));
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->rows.size(), 19u);  // 10 + 9: line 3's attn_rope median is 0
  EXPECT_EQ(skipped_rows(*r, "time_stats.attn_rope.median"), 1);

  const Measurement* qkv = find(*r, std::string(kMlp) + ":2 attn_pre_proj");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->gpu, "A100-SXM4-80GB");
  EXPECT_EQ(qkv->kind, MeasuredKind::kLayerKernels);
  EXPECT_EQ(qkv->precision, workload::Precision::kFp16);
  EXPECT_EQ(qkv->measured_ns, 1911000.0);
  EXPECT_THAT(qkv->layer_kernels, ElementsAre("qkv_proj"));
  EXPECT_THAT(qkv->lengths, ElementsAre(4096));
  EXPECT_EQ(qkv->phase, workload::Phase::kPrefill);
  EXPECT_EQ(qkv->tensor_parallel, 1);
  EXPECT_EQ(qkv->model.name, "llama-2-7b-hf");
  EXPECT_EQ(qkv->model.hidden, 4096);
  EXPECT_EQ(qkv->model.heads, 32);
  EXPECT_EQ(qkv->model.kv_heads, 32);
  EXPECT_EQ(qkv->model.head_dim, 128);
  EXPECT_EQ(qkv->model.intermediate, 11008);
  EXPECT_EQ(qkv->model.vocab, 32768);
  EXPECT_EQ(qkv->model.layers, 1);

  const Measurement* up = find(*r, std::string(kMlp) + ":2 mlp_up_proj");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->measured_ns, 3365500.0);
  EXPECT_THAT(up->layer_kernels, ElementsAre("gate_up_proj"));
  const Measurement* add = find(*r, std::string(kMlp) + ":3 add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->measured_ns, 30000.0);
  EXPECT_EQ(add->tensor_parallel, 2);
  EXPECT_THAT(add->lengths, ElementsAre(2048));
  EXPECT_THAT(add->layer_kernels, ElementsAre("residual_add"));
  // The post-attention norm is a plain RMSNorm there (the add is its own operator).
  const Measurement* post = find(*r, std::string(kMlp) + ":2 post_attention_layernorm");
  ASSERT_NE(post, nullptr);
  EXPECT_THAT(post->layer_kernels, ElementsAre("input_rmsnorm"));
  EXPECT_EQ(find(*r, std::string(kMlp) + ":3 attn_rope"), nullptr);
}

TEST_F(ProfileReadersTest, VidurMlpNamesTheBadCell) {
  write(std::string(kMlp),
        mlp("0.2,0.234,0.105,1.911,0.149,0.611,0.104,3.3655,0.266,1.604,0.055,32,32,4096,11008,"
            "32768,True,4096,1\n"
            "0.2,0.234,0.105,1.911,0.149,0.611,0.104,3.3655,0.266,1.604,0.055,32,32,4096,11008,"
            "32768,True,lots,1\n"));
  auto r = read(std::string(kMlp));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(),
            std::string(kMlp) + ":3: column 'num_tokens': 'lots' is not a whole number");

  write(std::string(kMlp), mlp("0.2,0.234,0.105,1.911,0.149,0.611,0.104,3.3655,0.266,1.604,"
                               "0.055,32,32,4096,11008,32768,True,4096\n"));
  r = read(std::string(kMlp));
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("mlp.csv:2: fewer cells than the header"));

  write(std::string(kMlp), "time_stats.emb.median,n_kv_head\n1,2\n");
  r = read(std::string(kMlp));
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("missing column 'n_head'"));
}

TEST_F(ProfileReadersTest, VidurMlpSkipsNonGatedModels) {
  // phi-2's file has no post_attention_layernorm: nine operators a line, all skipped.
  const std::string phi = "vidur_compute/h100/microsoft/phi-2/mlp.csv";
  write(
      phi,
      "time_stats.emb.median,time_stats.input_layernorm.median,time_stats.attn_pre_proj.median,"
      "time_stats.attn_rope.median,time_stats.attn_post_proj.median,"
      "time_stats.mlp_up_proj.median,time_stats.mlp_act.median,time_stats.mlp_down_proj.median,"
      "time_stats.add.median,n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,"
      "num_tokens,num_tensor_parallel_workers\n"
      "0.14,0.043,0.651,0.098,0.236,0.867,0.123,0.79,0.078,32,32,2560,10240,51200,False,4096,1\n"
      "0.14,0.043,0.651,0.098,0.236,0.867,0.123,0.79,0.078,32,32,2560,10240,51200,False,2048,1\n");
  auto r = read(phi);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_TRUE(r->rows.empty());
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_EQ(r->skipped[0].source, phi);
  EXPECT_EQ(r->skipped[0].rows, 18);
  EXPECT_THAT(r->skipped[0].reason, HasSubstr("use_gated_mlp False"));
}

constexpr std::string_view kCollectiveHeader =
    ",time_stats.all_reduce.min,time_stats.all_reduce.median,rank,num_workers,size,collective,"
    "devices_per_node,max_devices_per_node\n";

TEST_F(ProfileReadersTest, VidurCollectivesKeepRankZeroInsideOneNode) {
  std::string text(kCollectiveHeader);
  text +=
      "0,0.01,0.043,0,2,2048,all_reduce,2,8\n"
      "1,0.01,0.056,0,2,10240,all_reduce,1,8\n"  // two nodes
      "2,0.01,0.050,1,2,2048,all_reduce,2,8\n"   // rank 1
      "3,0.01,-1,0,8,4096,all_reduce,8,8\n"      // not a time
      "4,0.01,1.25e-1,0,8,1048576,all_reduce,8,8\n";
  write("vidur_collectives/a100_dgx__all_reduce.csv", text);
  auto r = read("vidur_collectives/a100_dgx__all_reduce.csv");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->rows.size(), 2u);
  const Measurement& m = r->rows[0];
  EXPECT_EQ(m.source, "vidur_collectives/a100_dgx__all_reduce.csv:2");
  EXPECT_EQ(m.kind, MeasuredKind::kCollective);
  EXPECT_EQ(m.collective, Collective::kAllReduce);
  EXPECT_EQ(m.gpu, "A100-SXM4-80GB");
  EXPECT_EQ(m.interconnect, "nvswitch");
  EXPECT_EQ(m.gpus, 2);
  EXPECT_EQ(m.bytes, 2048);
  EXPECT_EQ(m.measured_ns, 43000.0);
  EXPECT_EQ(r->rows[1].measured_ns, 125000.0);
  EXPECT_EQ(r->rows[1].gpus, 8);
  EXPECT_EQ(skipped_rows(*r, "spans nodes"), 1);
  EXPECT_EQ(skipped_rows(*r, "rank other than 0"), 1);
  EXPECT_EQ(skipped_rows(*r, "not a finite positive time"), 1);

  std::string send(
      ",time_stats.send_recv.median,rank,num_workers,size,collective,devices_per_node\n");
  send += "0,0.012,0,2,2048,send_recv,2\n1,0.014,0,2,10240,send_recv,2\n";
  write("vidur_collectives/a100_pairwise_nvlink__send_recv.csv", send);
  write("vidur_collectives/h100_pairwise_nvlink__send_recv.csv", send);
  r = read("vidur_collectives/a100_pairwise_nvlink__send_recv.csv");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->rows.size(), 2u);
  EXPECT_EQ(r->rows[0].collective, Collective::kSendRecv);
  EXPECT_EQ(r->rows[0].interconnect, "nvlink-pairwise");
  r = read("vidur_collectives/h100_pairwise_nvlink__send_recv.csv");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_TRUE(r->rows.empty());
  EXPECT_EQ(skipped_rows(*r, "byte-identical"), 2);
}

TEST_F(ProfileReadersTest, InferenceSimGemmsAreFp8) {
  const std::string gemm = "inference_sim_kernels_h100/gemm/h100/data.csv";
  write(gemm, "m,k,n,latency_us,mfu\n8,2048,6144,8.988,0.011\n16,2048,6144,nan,0\n");
  auto r = read(gemm);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->rows.size(), 1u);
  const Measurement& m = r->rows[0];
  EXPECT_EQ(m.source, gemm + ":2");
  EXPECT_EQ(m.kind, MeasuredKind::kGemm);
  EXPECT_EQ(m.gpu, "H100-SXM5-80GB");
  EXPECT_EQ(m.precision, workload::Precision::kFp8);
  EXPECT_EQ(m.m, 8);
  EXPECT_EQ(m.n, 6144);
  EXPECT_EQ(m.k, 2048);
  EXPECT_EQ(m.measured_ns, 8988.0);
  EXPECT_EQ(skipped_rows(*r, "latency_us"), 1);

  write(gemm, "m,k,n,latency_us,mfu\n8,2048,6144,8.988us,0.011\n");
  r = read(gemm);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), gemm + ":2: column 'latency_us': '8.988us' is not a number");
}

TEST_F(ProfileReadersTest, InferenceSimAttention) {
  const std::string prefill = "inference_sim_kernels_h100/mha/prefill/h100/32-8-128.csv";
  write(prefill, "dtype,seq_len,latency_us,mfu\nbf16,1024,38.098,0.228\n");
  auto r = read(prefill);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->rows.size(), 1u);
  const Measurement& p = r->rows[0];
  EXPECT_EQ(p.kind, MeasuredKind::kLayerKernels);
  EXPECT_THAT(p.layer_kernels, ElementsAre(std::string(kAttentionKernels)));
  EXPECT_EQ(p.phase, workload::Phase::kPrefill);
  EXPECT_THAT(p.lengths, ElementsAre(1024));
  EXPECT_EQ(p.precision, workload::Precision::kBf16);
  EXPECT_EQ(p.model.heads, 32);
  EXPECT_EQ(p.model.kv_heads, 8);
  EXPECT_EQ(p.model.head_dim, 128);
  EXPECT_EQ(p.model.hidden, 4096);
  EXPECT_TRUE(p.model.validate().has_value());
  EXPECT_EQ(p.measured_ns, 38098.0);

  const std::string decode = "inference_sim_kernels_h100/mha/decode/h100/64-8-128-tp4.csv";
  write(decode,
        "dtype,kv_dtype,batch_size,kv_len,latency_us,mfu\nbf16,bf16,3,4096,23.524,0.001\n"
        "bf16,bf16,1,8192,0,0.003\n");
  r = read(decode);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->rows.size(), 1u);
  const Measurement& d = r->rows[0];
  EXPECT_EQ(d.source, decode + ":2");
  EXPECT_EQ(d.phase, workload::Phase::kDecode);
  EXPECT_THAT(d.lengths, ElementsAre(4096, 4096, 4096));
  EXPECT_EQ(d.tensor_parallel, 4);
  EXPECT_EQ(d.model.heads, 64);
  EXPECT_EQ(d.measured_ns, 23524.0);
  EXPECT_EQ(skipped_rows(*r, "latency_us"), 1);

  write(decode, "dtype,kv_dtype,batch_size,kv_len,latency_us\nint3,bf16,3,4096,23.5\n");
  r = read(decode);
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(),
              HasSubstr("tp4.csv:2: column 'dtype': 'int3' is not a precision"));
}

TEST_F(ProfileReadersTest, LlmServingSimLayersAreShardedGemmsAndEagerKernels) {
  const std::string layers = "llmservingsim_h100/meta-llama/Llama-3.1-8B/tp2/layers.csv";
  write(layers,
        "layer_name,input,kv_cache,tp_size,latency(ns)\n"
        "embedding,16,0,2,2915\n"
        "input_layernorm,16,0,2,17701\n"
        "q_proj,16,0,2,10706\n"
        "k_proj,16,0,2,8275\n"
        "o_proj,16,0,2,8541\n"
        "gate_proj,16,0,2,22114\n"
        "down_proj,16,0,2,22000\n"
        "lm_head,16,0,2,176101\n"
        "attn,16,0,2,30000\n"
        "expert.w1,16,0,2,1000\n"
        "mystery,16,0,2,1000\n");
  auto r = read(layers);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->rows.size(), 9u);
  const auto gemm = [&](int line) -> std::array<std::int64_t, 3> {
    const Measurement* m = find(*r, fmt::format("{}:{}", layers, line));
    if (m == nullptr || m->kind != MeasuredKind::kGemm) return {-1, -1, -1};
    return {m->m, m->n, m->k};
  };
  using A = std::array<std::int64_t, 3>;
  EXPECT_EQ(gemm(4), (A{16, 2048, 4096}));   // q_proj: 32 heads x 128 / 2
  EXPECT_EQ(gemm(5), (A{16, 512, 4096}));    // k_proj: 8 kv heads x 128 / 2
  EXPECT_EQ(gemm(6), (A{16, 4096, 2048}));   // o_proj
  EXPECT_EQ(gemm(7), (A{16, 7168, 4096}));   // gate_proj: 14336 / 2
  EXPECT_EQ(gemm(8), (A{16, 4096, 7168}));   // down_proj
  EXPECT_EQ(gemm(9), (A{16, 64128, 4096}));  // lm_head: 128256 / 2
  const Measurement* q = find(*r, layers + ":4");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->precision, workload::Precision::kBf16);
  EXPECT_EQ(q->measured_ns, 10706.0);
  EXPECT_EQ(q->tensor_parallel, 2);

  const Measurement* norm = find(*r, layers + ":3");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->kind, MeasuredKind::kLayerKernels);
  EXPECT_THAT(norm->layer_kernels, ElementsAre("input_rmsnorm"));
  EXPECT_EQ(norm->implementation, Implementation::kHfEager);
  EXPECT_EQ(norm->model.name, "llama-3.1-8b");
  EXPECT_THAT(norm->lengths, ElementsAre(16));
  const Measurement* emb = find(*r, layers + ":2");
  ASSERT_NE(emb, nullptr);
  EXPECT_THAT(emb->layer_kernels, ElementsAre("embedding"));
  const Measurement* attn = find(*r, layers + ":10");
  ASSERT_NE(attn, nullptr);
  EXPECT_THAT(attn->layer_kernels, ElementsAre(std::string(kAttentionKernels)));
  EXPECT_EQ(attn->implementation, Implementation::kHfEager);
  EXPECT_EQ(attn->phase, workload::Phase::kPrefill);
  EXPECT_EQ(skipped_rows(*r, "per-expert modules"), 1);
  EXPECT_EQ(skipped_rows(*r, "'mystery'"), 1);
}

TEST_F(ProfileReadersTest, LlmServingSimAttentionRowsAreReadAndCountedNotCompared) {
  const std::string attention = "llmservingsim_h100/meta-llama/Llama-3.1-70B/tp4/attention.csv";
  const std::string header =
      "time_stats.attn_prefill.median,time_stats.attn_decode.median,n_embd,n_q_head,n_kv_head,"
      "num_tensor_parallel_workers,max_model_len,batch_size,prefill_chunk_size,kv_cache_size,"
      "is_prefill,attention_backend\n";
  write(attention, header +
                       "0.005312000000000001,,8192,64,8,4,131072,1,32,32,True,FLASH_ATTENTION\n"
                       ",0.239521,8192,64,8,4,131072,12,0,65536,False,FLASH_ATTENTION\n");
  auto r = read(attention);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_TRUE(r->rows.empty());
  EXPECT_EQ(skipped_rows(*r, "chunked prefill"), 1);
  EXPECT_EQ(skipped_rows(*r, "FlashAttention-2's varlen forward"), 1);
  // A decode row is still read: a malformed one is an error naming its cell.
  write(attention, header + ",0.239521,8192,60,8,4,131072,12,0,65536,False,FLASH_ATTENTION\n");
  auto bad = read(attention);
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("n_embd 8192 is not a multiple of n_q_head 60"));
}

TEST_F(ProfileReadersTest, SplitwiseGivesPrefillAndDecodeSteps) {
  const std::string perf = "splitwise_sim/perf_model.csv";
  write(perf,
        "model,hardware,prompt_size,batch_size,token_size,peak_power,average_power,prompt_time,"
        "token_time,e2e_time,tensor_parallel\n"
        "llama2-70b,a100-80gb,512,2,128,1.0,0.7,196.25,54.875,7168.9,4\n"
        "llama2-70b,h100-80gb-pcap,512,1,128,1.0,0.7,150,40,5000,8\n"
        "bloom-176b,h100-80gb,512,1,128,1.0,0.7,150,40,5000,8\n");
  auto r = read(perf);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->rows.size(), 2u);
  const Measurement& p = r->rows[0];
  EXPECT_EQ(p.source, perf + ":2 prompt_time");
  EXPECT_EQ(p.kind, MeasuredKind::kStep);
  EXPECT_EQ(p.phase, workload::Phase::kPrefill);
  EXPECT_EQ(p.gpu, "A100-SXM4-80GB");
  EXPECT_EQ(p.model.name, "llama-2-70b");
  EXPECT_EQ(p.tensor_parallel, 4);
  EXPECT_EQ(p.precision, workload::Precision::kFp16);
  EXPECT_THAT(p.lengths, ElementsAre(512, 512));
  EXPECT_EQ(p.measured_ns, 196250000.0);
  const Measurement& d = r->rows[1];
  EXPECT_EQ(d.source, perf + ":2 token_time");
  EXPECT_EQ(d.phase, workload::Phase::kDecode);
  EXPECT_THAT(d.lengths, ElementsAre(576, 576));  // 512 + 128 / 2
  EXPECT_EQ(d.measured_ns, 54875000.0);
  EXPECT_EQ(skipped_rows(*r, "power-capped"), 2);
  EXPECT_EQ(skipped_rows(*r, "bloom-176b"), 2);
}

TEST_F(ProfileReadersTest, UnknownLayoutsAndMissingFiles) {
  auto r = read("elsewhere/x.csv");
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("elsewhere/x.csv: not a known profile format"));
  r = read("splitwise_sim/perf_model.csv");
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message(), HasSubstr("splitwise_sim/perf_model.csv: cannot open"));
}

TEST_F(ProfileReadersTest, SharedProfilesInSortedOrder) {
  write("vidur_collectives/h100_dgx__all_reduce.csv",
        ",time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node\n"
        "0,0.037,0,8,2048,all_reduce,8\n");
  write("inference_sim_kernels_h100/gemm/h100/data.csv", "m,k,n,latency_us\n8,2048,6144,8.988\n");
  write("notes/other.csv", "a,b\n1,2\n");
  write("PROVENANCE.md", "# not a profile\n");
  auto r = read_shared_profiles(dir());
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->rows.size(), 2u);
  EXPECT_EQ(r->rows[0].source, "inference_sim_kernels_h100/gemm/h100/data.csv:2");
  EXPECT_EQ(r->rows[1].source, "vidur_collectives/h100_dgx__all_reduce.csv:2");
  EXPECT_EQ(r->rows[1].gpu, "H100-SXM5-80GB");
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_EQ(r->skipped[0].source, "notes/other.csv");
  EXPECT_EQ(r->skipped[0].reason, "not a known profile format");

  auto missing = read_shared_profiles(dir() + "/absent");
  ASSERT_FALSE(missing.has_value());
  EXPECT_THAT(missing.error().message(), HasSubstr("no such directory"));
}

// Rows from the real profiles, counted from the files by a separate script:
//   gemm: inference_sim 112 + LLMServingSim Llama q/k/v/o/gate/up/down/lm_head 5 files x 8 x 2048
//   layer: vidur gated models 14088 lines x 10 operators, inference_sim attention 30 + 755,
//     LLMServingSim Llama norms/rope/act/attn/embedding 5 x 7 x 2048 (its attention.csv rows are
//     all skipped)
//   step: splitwise llama2-70b on a100 and h100, 630 lines x 2
//   collective: vidur rows inside one node, less the duplicated h100 pairwise send_recv file
// plus Mixtral's layers.csv files (tp1, tp2, tp4): q/k/v/o/lm_head GEMMs and embedding, three
// norms and rope, 5 + 5 rows x 2048 inputs each.
constexpr std::size_t kMixtralRows = 3 * 5 * 2048;
constexpr std::size_t kRealGemmRows = 82032;
constexpr std::size_t kRealLayerRows = 259463 - 46118;
constexpr std::size_t kRealStepRows = 1260;
constexpr std::size_t kRealCollectiveRows = 15430;

// The real profiles beside the checkout (../shared/data/perf_profiles).
TEST(SharedProfilesTest, ReadsTheRealProfiles) {
  const std::string dir = experiment::data_dir() + "/perf_profiles";
  if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " is absent (the shared data set)";
  auto r = read_shared_profiles(dir);
  ASSERT_TRUE(r.has_value()) << r.error().message();

  std::map<MeasuredKind, std::size_t> per_kind;
  std::map<std::string, std::size_t> per_source;
  for (const Measurement& m : r->rows) {
    ++per_kind[m.kind];
    ++per_source[m.source.substr(0, m.source.find('/'))];
  }
  const std::size_t mixtral = kMixtralRows;
  EXPECT_EQ(per_kind[MeasuredKind::kGemm], kRealGemmRows + mixtral);
  EXPECT_EQ(per_kind[MeasuredKind::kLayerKernels], kRealLayerRows + mixtral);
  EXPECT_EQ(per_kind[MeasuredKind::kStep], kRealStepRows);
  EXPECT_EQ(per_kind[MeasuredKind::kCollective], kRealCollectiveRows);

  EXPECT_EQ(per_source["vidur_compute"], 140880u);
  EXPECT_EQ(per_source["vidur_collectives"], 15430u);
  EXPECT_EQ(per_source["inference_sim_kernels_h100"], 112u + 785u);
  EXPECT_EQ(per_source["llmservingsim_h100"], 81920u + 71680u + 2 * mixtral);
  EXPECT_EQ(per_source["splitwise_sim"], 1260u);

  std::map<std::string, std::int64_t> skipped;
  for (const Skipped& k : r->skipped) skipped[k.source] += k.rows;
  EXPECT_EQ(skipped["vidur_compute/a100/microsoft/phi-2/mlp.csv"], 261 * 9);
  EXPECT_EQ(skipped["splitwise_sim/perf_model.csv"], 630 * 2);  // bloom-176b and h100-80gb-pcap
  EXPECT_EQ(skipped["vidur_collectives/h100_pairwise_nvlink__send_recv.csv"], 1988);
  // Every row: 232 chunked prefills and 21,371 decodes.
  EXPECT_EQ(skipped["llmservingsim_h100/meta-llama/Llama-3.1-70B/tp4/attention.csv"], 21603);

  // vidur a100 Llama-2-7b, num_tokens 4096, tp1: attn_pre_proj median 1.911 ms.
  const Measurement* qkv =
      find(*r, "vidur_compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv:2 attn_pre_proj");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->measured_ns, 1911000.0);
  EXPECT_THAT(qkv->lengths, ElementsAre(4096));
  EXPECT_EQ(qkv->tensor_parallel, 1);
  // inference_sim's first GEMM: m 8, k 2048, n 6144 in 8.988 us.
  const Measurement* gemm = find(*r, "inference_sim_kernels_h100/gemm/h100/data.csv:2");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->m, 8);
  EXPECT_EQ(gemm->n, 6144);
  EXPECT_EQ(gemm->k, 2048);
  EXPECT_EQ(gemm->measured_ns, 8988.0);
  // LLMServingSim Llama-3.1-8B tp1, q_proj on 1 token: 16078 ns.
  const Measurement* q = find(*r, "llmservingsim_h100/meta-llama/Llama-3.1-8B/tp1/layers.csv:4");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->kind, MeasuredKind::kGemm);
  EXPECT_EQ(q->m, 1);
  EXPECT_EQ(q->n, 4096);
  EXPECT_EQ(q->k, 4096);
  EXPECT_EQ(q->measured_ns, 16078.0);
}

}  // namespace
}  // namespace tessera::validation
