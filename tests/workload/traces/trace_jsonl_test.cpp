#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tessera/core/random.hpp"
#include "tessera/workload/arrivals.hpp"

namespace tessera::workload {
namespace {

const std::string kMooncake =
    std::string(TESSERA_SHARED_DATA_DIR) + "/llm_traces/mooncake_fast25/conversation_trace.jsonl";

std::string message_of(std::string_view text) {
  auto r = parse_trace_jsonl(text, "t.jsonl", {});
  EXPECT_FALSE(r.has_value()) << text;
  return r ? std::string() : r.error().message();
}

TEST(TraceJsonlTest, LoadsTheMooncakeConversationTrace) {
  auto r = load_trace(kMooncake, {});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  // PROVENANCE.md: 12,031 requests from 0 to 3,536,999 ms; mean input 12,035, mean output 343.
  ASSERT_EQ(r->size(), 12031u);
  EXPECT_EQ(r->front().arrival, 0);
  EXPECT_EQ(r->back().arrival, core::millis(3'536'999));
  EXPECT_EQ(r->front().input_tokens, 6758);
  EXPECT_EQ(r->front().output_tokens, 500);
  double in = 0;
  double out = 0;
  for (std::size_t i = 0; i < r->size(); ++i) {
    EXPECT_EQ((*r)[i].id, i);
    in += (*r)[i].input_tokens;
    out += (*r)[i].output_tokens;
  }
  EXPECT_NEAR(in / 12031, 12035, 1);
  EXPECT_NEAR(out / 12031, 343, 1);
}

TEST(TraceJsonlTest, ParsesFractionsZeroTokensBlankLinesAndOptions) {
  const std::string text =
      "{\"timestamp\": 1000, \"input_length\": 10, \"output_length\": 0, \"hash_ids\": [1]}\n"
      "\n"
      "{\"output_length\": 4, \"timestamp\": 1000.5, \"input_length\": 20}\r\n"
      "{\"timestamp\": 3000, \"input_length\": 30, \"output_length\": 5}";
  auto r = parse_trace_jsonl(text, "t.jsonl", {});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].arrival, 0);  // offsets from the first row
  EXPECT_EQ((*r)[0].output_tokens, 1);
  EXPECT_EQ((*r)[1].arrival, 500'000);
  EXPECT_EQ((*r)[2].arrival, core::seconds(2));
  auto cut = parse_trace_jsonl(text, "t.jsonl", {.horizon = core::seconds(1), .time_scale = 0.5});
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->size(), 2u);  // 2 s at half scale is 1 s: at the horizon, so left out
  auto two = parse_trace_jsonl(text, "t.jsonl", {.max_requests = 2});
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->size(), 2u);
}

TEST(TraceJsonlTest, MalformedRowsNameFileLineAndField) {
  EXPECT_EQ(message_of("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\nnope\n"),
            "t.jsonl:2: expected one JSON object per line, like {\"timestamp\": 0, "
            "\"input_length\": 512, \"output_length\": 64}");
  EXPECT_EQ(message_of("[1, 2]"),
            "t.jsonl:1: expected one JSON object per line, like {\"timestamp\": 0, "
            "\"input_length\": 512, \"output_length\": 64}");
  EXPECT_EQ(message_of("{\"timestamp\": 0, \"output_length\": 1}"),
            "t.jsonl:1: no 'input_length' field; a Mooncake trace row holds timestamp, "
            "input_length and output_length");
  EXPECT_EQ(message_of("{\"timestamp\": \"0\", \"input_length\": 1, \"output_length\": 1}"),
            "t.jsonl:1: 'timestamp' must be a number, got \"0\"");
  EXPECT_EQ(message_of("{\"timestamp\": 0, \"input_length\": 1.5, \"output_length\": 1}"),
            "t.jsonl:1: 'input_length' must be a whole number of tokens, got 1.5");
  EXPECT_EQ(message_of("{\"timestamp\": 0, \"input_length\": -3, \"output_length\": 1}"),
            "t.jsonl:1: 'input_length' must not be negative, got -3");
  EXPECT_EQ(message_of("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 3000000000}"),
            "t.jsonl:1: 'output_length' of 3000000000 tokens is larger than 2147483647");
  EXPECT_EQ(message_of("{\"timestamp\": -1, \"input_length\": 1, \"output_length\": 1}"),
            "t.jsonl:1: 'timestamp' must be milliseconds from the trace's start, from 0 to under "
            "9.2e12, got -1");
  EXPECT_EQ(message_of("{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n"
                       "{\"timestamp\": 4, \"input_length\": 1, \"output_length\": 1}"),
            "t.jsonl:2: 'timestamp' 4 is earlier than the row before it; the trace must be "
            "sorted by time");
  EXPECT_EQ(message_of("\n \n"),
            "t.jsonl: no request rows; a Mooncake trace holds one JSON object per line");
}

TEST(TraceJsonlTest, TheFileNameChoosesTheFormat) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("tessera_trace_jsonl_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "t.jsonl")
      << "{\"timestamp\": 0, \"input_length\": 7, \"output_length\": 2}\n";
  std::ofstream(dir / "t.csv") << "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                  "2023-11-16 18:17:03,7,2\n";
  auto jsonl = load_trace((dir / "t.jsonl").string(), {});
  auto csv = load_trace((dir / "t.csv").string(), {});
  auto missing = load_trace((dir / "absent.jsonl").string(), {});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(jsonl.has_value()) << jsonl.error().message();
  ASSERT_TRUE(csv.has_value()) << csv.error().message();
  EXPECT_EQ(jsonl->front().input_tokens, 7);
  EXPECT_EQ(csv->front().input_tokens, 7);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), core::Code::kNotFound);
}

// Robustness: random edits of a valid trace never crash the parser; every outcome is a value or
// an error that names the source.
TEST(TraceJsonlTest, MutatedInputNeverCrashes) {
  const std::string valid =
      "{\"timestamp\": 0, \"input_length\": 6758, \"output_length\": 500, \"hash_ids\": [0, 1]}\n"
      "{\"timestamp\": 12, \"input_length\": 7322, \"output_length\": 490}\n";
  const std::string alphabet = "0123456789-.:,{}[]\" \n\teE";
  core::RandomStream rng(2025);
  for (int trial = 0; trial < 5000; ++trial) {
    std::string text = valid;
    const int edits = 1 + static_cast<int>(rng.below(6));
    for (int e = 0; e < edits; ++e) {
      const auto at = rng.below(text.size() + 1);
      const char c = alphabet[rng.below(alphabet.size())];
      if (rng.below(2) == 0) {
        text.insert(text.begin() + static_cast<long>(at), c);
      } else if (at < text.size()) {
        text[at] = c;
      }
    }
    auto r = parse_trace_jsonl(text, "fuzz.jsonl", {});
    if (!r) {
      EXPECT_NE(r.error().message().find("fuzz.jsonl"), std::string::npos) << text;
    }
  }
}

}  // namespace
}  // namespace tessera::workload
