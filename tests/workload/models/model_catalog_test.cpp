#include <gtest/gtest.h>

#include "tessera/workload/models/transformer.hpp"

namespace tessera::workload {
namespace {

TEST(ModelCatalogTest, Llama3_8bMatchesItsConfigJson) {
  auto m = find_model("llama-3-8b");
  ASSERT_TRUE(m.has_value()) << m.error().message();
  EXPECT_EQ(m->layers, 32);
  EXPECT_EQ(m->hidden, 4096);
  EXPECT_EQ(m->heads, 32);
  EXPECT_EQ(m->kv_heads, 8);
  EXPECT_EQ(m->head_dim, 128);
  EXPECT_EQ(m->intermediate, 14336);
  EXPECT_EQ(m->vocab, 128256);
  EXPECT_EQ(m->bytes_per_param, 2);
  // The safetensors total on the Hugging Face model page: 8,030,261,248 parameters.
  EXPECT_DOUBLE_EQ(m->parameters(), 8'030'261'248.0);
  EXPECT_DOUBLE_EQ(m->weight_bytes(), 2 * 8'030'261'248.0);
  // K and V, 32 layers x 8 heads x 128 dims x 2 bytes.
  EXPECT_DOUBLE_EQ(m->kv_bytes_per_token(), 2.0 * 32 * 8 * 128 * 2);
}

TEST(ModelCatalogTest, Qwen2_7bMatchesItsConfigJson) {
  auto m = find_model("qwen2-7b");
  ASSERT_TRUE(m.has_value()) << m.error().message();
  EXPECT_EQ(m->layers, 28);
  EXPECT_EQ(m->hidden, 3584);
  EXPECT_EQ(m->heads, 28);
  EXPECT_EQ(m->kv_heads, 4);
  EXPECT_EQ(m->head_dim, 128);
  EXPECT_EQ(m->intermediate, 18944);
  EXPECT_EQ(m->vocab, 152064);
  EXPECT_TRUE(m->qkv_bias);
  // The safetensors total on the Hugging Face model page: 7,615,616,512 parameters.
  EXPECT_DOUBLE_EQ(m->parameters(), 7'615'616'512.0);
}

TEST(ModelCatalogTest, Qwen25_14bMatchesItsConfigJson) {
  auto m = find_model("qwen2.5-14b");
  ASSERT_TRUE(m.has_value()) << m.error().message();
  EXPECT_EQ(m->layers, 48);
  EXPECT_EQ(m->hidden, 5120);
  EXPECT_EQ(m->heads, 40);
  EXPECT_EQ(m->kv_heads, 8);
  EXPECT_EQ(m->head_dim, 128);
  EXPECT_EQ(m->intermediate, 13824);
  EXPECT_EQ(m->vocab, 152064);
  EXPECT_TRUE(m->qkv_bias);
  // The safetensors total on the Hugging Face model page: 14,770,033,664 parameters.
  EXPECT_DOUBLE_EQ(m->parameters(), 14'770'033'664.0);
  // Its BF16 weights do not fit one 24 GiB board; half of them do.
  EXPECT_GT(m->weight_bytes(), 24.0 * (1 << 30));
  EXPECT_LT(m->weight_bytes() / 2, 24.0 * (1 << 30));
}

TEST(ModelCatalogTest, LookupIgnoresCase) {
  auto m = find_model("Llama-3-8B");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->name, "llama-3-8b");
  EXPECT_TRUE(find_model("QWEN2-7B").has_value());
}

TEST(ModelCatalogTest, UnknownNameListsTheKnownOnes) {
  auto m = find_model("gpt-5");
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code(), core::Code::kNotFound);
  EXPECT_NE(m.error().message().find("gpt-5"), std::string::npos);
  EXPECT_NE(m.error().message().find("llama-3-8b"), std::string::npos);
  EXPECT_NE(m.error().message().find("qwen2-7b"), std::string::npos);
}

TEST(ModelCatalogTest, EveryEntryValidates) {
  ASSERT_GE(model_catalog().size(), 2u);
  for (const auto& m : model_catalog()) {
    auto s = m.validate();
    EXPECT_TRUE(s.has_value()) << m.name << ": " << s.error().message();
  }
}

TEST(ModelConfigTest, ValidateNamesTheBadField) {
  ModelConfig m = *find_model("llama-3-8b");
  m.intermediate = 0;
  auto s = m.validate();
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("intermediate"), std::string::npos);

  m = *find_model("llama-3-8b");
  m.kv_heads = 5;
  s = m.validate();
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("kv_heads"), std::string::npos);

  m.name.clear();
  EXPECT_FALSE(m.validate().has_value());
}

TEST(ModelConfigTest, TiedEmbeddingsCountTheMatrixOnce) {
  ModelConfig m = *find_model("llama-3-8b");
  const double untied = m.parameters();
  m.tied_embeddings = true;
  EXPECT_DOUBLE_EQ(untied - m.parameters(), 128256.0 * 4096);
}

}  // namespace
}  // namespace tessera::workload
