#include "tessera/workload/models/training.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string_view>

namespace tessera::workload {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.ends_with(suffix);
}

// FLOPs of kernels whose name ends with one of `suffixes`, counting repeats.
double flops_named(const KernelSequence& s, std::initializer_list<std::string_view> suffixes) {
  double sum = 0;
  for (const auto& g : s.groups) {
    for (const auto& k : g.kernels) {
      for (auto suffix : suffixes) {
        if (ends_with(k.name, suffix)) sum += k.total_flops() * g.repeat;
      }
    }
  }
  return sum;
}

const Kernel* last_kernel(const KernelSequence& s) {
  return &s.groups.back().kernels.back();
}

TEST(ResNet50Test, ParametersMatchTheReferenceModel) {
  // torchvision's resnet50 (the v1.5 layout): 25,557,032 parameters.
  EXPECT_DOUBLE_EQ(resnet50_parameters(), 25'557'032.0);
}

TEST(ResNet50Test, ForwardIsAbout4Point1GigaMultiplyAddsPerImage) {
  // torchvision reports 4.09 GMACs per 224x224 image for ResNet-50 v1.5; at 2 FLOPs per
  // multiply-add that is 8.18 GFLOP. Convolutions and the classifier, within 1%.
  const KernelSequence s = resnet50_iteration(1);
  const double forward = flops_named(s, {"_fprop", "fc_fwd"});
  EXPECT_NEAR(forward / (2 * 4.089e9), 1.0, 0.01);
}

TEST(ResNet50Test, BackwardIsAboutTwiceTheForward) {
  const KernelSequence s = resnet50_iteration(4);
  const double forward = flops_named(s, {"_fprop", "fc_fwd"});
  const double backward = flops_named(s, {"_dgrad", "_wgrad"});
  // Twice, less the stem convolution's data gradient (its input is the image): ~3% of forward.
  EXPECT_GT(backward / forward, 1.94);
  EXPECT_LT(backward / forward, 2.0);
}

TEST(ResNet50Test, IterationScalesWithBatchExceptTheOptimizer) {
  const KernelSequence one = resnet50_iteration(1);
  const KernelSequence eight = resnet50_iteration(8);
  const double opt = last_kernel(one)->total_flops();
  EXPECT_DOUBLE_EQ(last_kernel(eight)->total_flops(), opt);
  EXPECT_NEAR((eight.total_flops() - opt) / (one.total_flops() - opt), 8.0, 1e-9);
  EXPECT_EQ(one.kernel_count(), eight.kernel_count());
}

TEST(ResNet50Test, IdenticalBottlenecksAreRepeatGroups) {
  const KernelSequence s = resnet50_iteration(2);
  std::vector<int> repeats;
  for (const auto& g : s.groups) {
    if (g.repeat > 1) repeats.push_back(g.repeat);
  }
  // Stages of 3, 4, 6, 3 blocks: the last 2, 3, 5, 2 of each repeat, forward and backward.
  const std::vector<int> expected = {2, 3, 5, 2, 2, 5, 3, 2};
  EXPECT_EQ(repeats, expected);
}

TEST(ResNet50Test, EndsWithSgdOverEveryParameter) {
  const KernelSequence s = resnet50_iteration(32);
  const Kernel* opt = last_kernel(s);
  EXPECT_EQ(opt->kind, KernelClass::kOptimizer);
  EXPECT_EQ(opt->name, "sgd_momentum_step");
  // FP32 master weight and momentum read and written, FP16 gradient read, FP16 copy written.
  EXPECT_NEAR(opt->total_bytes(), 20 * 25'557'032.0, 1.0);
}

TEST(ResNet50Test, ConvolutionsRunOnTensorCoresAndBatchNormStatisticsSpanBlocks) {
  const KernelSequence s = resnet50_iteration(16);
  bool saw_conv = false;
  bool saw_bn = false;
  for (const auto& g : s.groups) {
    for (const auto& k : g.kernels) {
      if (k.kind == KernelClass::kConv) {
        saw_conv = true;
        EXPECT_EQ(k.pipe, ComputePipe::kTensorFp16) << k.name;
      }
      if (k.name == "batchnorm_stats" || k.name == "batchnorm_bwd_reduce") {
        saw_bn = true;
        EXPECT_FALSE(k.block_independent);  // partial sums combined across blocks
      }
      if (k.name == "batchnorm_apply") {
        EXPECT_TRUE(k.block_independent);
      }
    }
  }
  EXPECT_TRUE(saw_conv);
  EXPECT_TRUE(saw_bn);
}

TEST(ResNet50Test, NonPositiveBatchCountsAsOne) {
  EXPECT_DOUBLE_EQ(resnet50_iteration(0).total_flops(), resnet50_iteration(1).total_flops());
}

TEST(BertBaseTest, ParametersMatchTheReferenceModel) {
  // Hugging Face BertForPreTraining (bert-base-uncased): 110,106,428 parameters; Devlin et al.
  // quote 110M.
  EXPECT_DOUBLE_EQ(bert_base_parameters(), 110'106'428.0);
  EXPECT_NEAR(bert_base_parameters() / 110e6, 1.0, 0.01);
}

TEST(BertLargeTest, ParametersAndWorkScaleWithTheLargerShape) {
  // The count of bert-base's test above, for L=24, H=1024, A=16, FFN 4096: embeddings
  // (30522 + 512 + 2) x 1024 + LayerNorm, 24 layers of 12,596,224, the pooler, and the MLM and
  // NSP heads; Devlin et al. quote 340M.
  EXPECT_DOUBLE_EQ(bert_large_parameters(), 336'226'108.0);
  // The encoder's GEMMs do 2 x 6 x parameters FLOPs per token forward and backward, so a
  // BERT-large iteration is about 3x a BERT-base one at the same batch.
  const double ratio = bert_large_iteration(8).total_flops() / bert_base_iteration(8).total_flops();
  EXPECT_GT(ratio, 2.8);
  EXPECT_LT(ratio, 3.4);
  EXPECT_TRUE(find_training_model("bert-large").has_value());
}

TEST(BertBaseTest, ForwardMatchesTheClosedForm) {
  const int batch = 8;
  const int seq = 128;
  const KernelSequence s = bert_base_iteration(batch, seq);
  const double h = 768;
  const double f = 3072;
  const double v = 30522;
  const double tokens = batch * seq;
  const double per_token_macs = 12 * (4 * h * h + 2 * h * f) + h * h + h * v;  // + MLM head
  const double per_sequence_macs = h * h + 2 * h;                              // pooler + NSP
  const double gemm = 2 * (tokens * per_token_macs + batch * per_sequence_macs);
  const double attention = 12 * 4.0 * batch * seq * seq * h;  // QK^T and PV, all heads
  const double forward_matmul =
      flops_named(s, {"_proj_fwd", "ffn_in_fwd", "ffn_out_fwd", "pooler_fwd", "nsp_classifier_fwd",
                      "mlm_transform_fwd", "mlm_decoder_fwd", "flash_attention_fwd"});
  // Bias epilogues add about 0.1%.
  EXPECT_NEAR(forward_matmul / (gemm + attention), 1.0, 0.002);
  const double backward_matmul = flops_named(s, {"_dgrad", "_wgrad", "flash_attention_bwd"});
  EXPECT_NEAR(backward_matmul / (2 * gemm + 2.5 * attention), 1.0, 0.002);
}

TEST(BertBaseTest, EncoderLayersAreOneRepeatGroup) {
  const KernelSequence s = bert_base_iteration(2);
  int layer_groups = 0;
  for (const auto& g : s.groups) {
    if (g.repeat == 12) ++layer_groups;
  }
  EXPECT_EQ(layer_groups, 2);  // forward and backward
  const Kernel* opt = last_kernel(s);
  EXPECT_EQ(opt->name, "adamw_step");
  EXPECT_NEAR(opt->total_bytes(), 28 * 110'106'428.0, 1.0);
}

TEST(BertBaseTest, SequenceLengthIsClampedToThePositionTable) {
  EXPECT_DOUBLE_EQ(bert_base_iteration(1, 4096).total_flops(),
                   bert_base_iteration(1, 512).total_flops());
  EXPECT_LT(bert_base_iteration(1, 128).total_flops(), bert_base_iteration(1, 512).total_flops());
}

TEST(TrainingCatalogTest, ModelsAreFoundByNameIgnoringCase) {
  auto r = find_training_model("ResNet-50");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->name, "resnet-50");
  EXPECT_DOUBLE_EQ(r->parameters, resnet50_parameters());
  EXPECT_GT(r->default_batch, 0);
  EXPECT_DOUBLE_EQ(r->iteration(4, Precision::kBf16).total_flops(),
                   resnet50_iteration(4).total_flops());

  auto b = find_training_model("bert-base");
  ASSERT_TRUE(b.has_value());
  EXPECT_DOUBLE_EQ(b->iteration(2, Precision::kBf16).total_flops(),
                   bert_base_iteration(2, 128).total_flops());
  EXPECT_DOUBLE_EQ(b->iteration(2, Precision::kTf32).total_bytes(),
                   bert_base_iteration(2, 128, Precision::kTf32).total_bytes());
}

// The pipe of every kernel that is not memory-bound (GEMMs, convolutions, attention).
std::set<ComputePipe> math_pipes(const KernelSequence& s) {
  std::set<ComputePipe> out;
  for (const auto& g : s.groups) {
    for (const Kernel& k : g.kernels) {
      if (k.kind == KernelClass::kGemm || k.kind == KernelClass::kConv ||
          k.kind == KernelClass::kAttention) {
        out.insert(k.pipe);
      }
    }
  }
  return out;
}

TEST(TrainingPrecisionTest, TheFormatSetsThePipeAndTheBytesNotTheWork) {
  for (const auto& [build, name] :
       {std::pair{+[](Precision p) { return resnet50_iteration(8, p); }, "resnet-50"},
        std::pair{+[](Precision p) { return bert_base_iteration(4, 128, p); }, "bert-base"}}) {
    SCOPED_TRACE(name);
    const KernelSequence bf16 = build(Precision::kBf16);
    const KernelSequence fp16 = build(Precision::kFp16);
    const KernelSequence tf32 = build(Precision::kTf32);
    const KernelSequence fp32 = build(Precision::kFp32);
    EXPECT_EQ(math_pipes(bf16), std::set{ComputePipe::kTensorFp16});
    EXPECT_EQ(math_pipes(fp16), std::set{ComputePipe::kTensorFp16});
    EXPECT_EQ(math_pipes(tf32), std::set{ComputePipe::kTensorTf32});
    EXPECT_EQ(math_pipes(fp32), std::set{ComputePipe::kFp32});
    // The same arithmetic; 4-byte storage moves more bytes (the optimizer's FP32 state does not
    // double, so less than twice).
    EXPECT_DOUBLE_EQ(tf32.total_flops(), bf16.total_flops());
    EXPECT_DOUBLE_EQ(fp32.total_flops(), bf16.total_flops());
    EXPECT_DOUBLE_EQ(fp16.total_bytes(), bf16.total_bytes());
    EXPECT_DOUBLE_EQ(fp32.total_bytes(), tf32.total_bytes());
    EXPECT_GT(tf32.total_bytes(), 1.2 * bf16.total_bytes());
    EXPECT_LT(tf32.total_bytes(), 2 * bf16.total_bytes());
  }
}

TEST(TrainingPrecisionTest, Fp8IsRefusedNamingTheFormatsThatTrain) {
  EXPECT_TRUE(check_training_precision(Precision::kTf32).has_value());
  const auto fp8 = check_training_precision(Precision::kFp8);
  ASSERT_FALSE(fp8.has_value());
  EXPECT_NE(fp8.error().message().find("bf16, fp16, tf32 or fp32"), std::string::npos);
  EXPECT_TRUE(mixed_precision(Precision::kBf16));
  EXPECT_FALSE(mixed_precision(Precision::kTf32));
}

TEST(TrainingCatalogTest, UnknownNameListsTheKnownOnes) {
  auto r = find_training_model("vgg-16");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), core::Code::kNotFound);
  EXPECT_NE(r.error().message().find("resnet-50"), std::string::npos);
  EXPECT_NE(r.error().message().find("bert-base"), std::string::npos);
}

}  // namespace
}  // namespace tessera::workload
