#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tessera/core/file_read.hpp"
#include "tessera/core/random.hpp"
#include "tessera/workload/arrivals.hpp"

namespace tessera::workload {
namespace {

const std::string kAzureCode = std::string(TESSERA_SHARED_DATA_DIR) +
                               "/llm_traces/azure_llm_2023/AzureLLMInferenceTrace_code.csv";

constexpr std::string_view kHeader = "TIMESTAMP,ContextTokens,GeneratedTokens\n";

// The header and `rows`. Appended, not string + "literal": GCC 12 at -O3 flags that falsely
// (-Warray-bounds, PR105651).
std::string with_header(std::string_view rows) {
  std::string text(kHeader);
  text += rows;
  return text;
}

TEST(TraceCsvTest, LoadsTheAzureCodeTrace) {
  auto r = load_trace_csv(kAzureCode, {});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  // PROVENANCE.md: 8,819 requests from 18:17:03.9799600 to 19:14:19.9280160; ContextTokens
  // mean 2,048, GeneratedTokens mean 27.9.
  ASSERT_EQ(r->size(), 8819u);
  EXPECT_EQ(r->front().arrival, 0);
  EXPECT_EQ(r->back().arrival, core::Nanos{3'435'948'056'000});  // 57 min 15.948056 s
  EXPECT_EQ(r->front().input_tokens, 4808);
  EXPECT_EQ(r->front().output_tokens, 10);
  double in = 0;
  double out = 0;
  for (std::size_t i = 0; i < r->size(); ++i) {
    EXPECT_EQ((*r)[i].id, i);
    if (i > 0) {
      EXPECT_GE((*r)[i].arrival, (*r)[i - 1].arrival);
    }
    in += (*r)[i].input_tokens;
    out += (*r)[i].output_tokens;
  }
  EXPECT_NEAR(in / 8819, 2048, 1);
  EXPECT_NEAR(out / 8819, 27.9, 0.05);
}

TEST(TraceCsvTest, OptionsScaleAndCutTheTrace) {
  auto full = load_trace_csv(kAzureCode, {});
  ASSERT_TRUE(full.has_value());
  auto stretched = load_trace_csv(kAzureCode, {.time_scale = 2.0});
  ASSERT_TRUE(stretched.has_value());
  EXPECT_EQ(stretched->back().arrival, 2 * full->back().arrival);

  auto first_ten_min = load_trace_csv(kAzureCode, {.horizon = core::seconds(600)});
  ASSERT_TRUE(first_ten_min.has_value());
  EXPECT_GT(first_ten_min->size(), 0u);
  EXPECT_LT(first_ten_min->size(), full->size());
  EXPECT_LT(first_ten_min->back().arrival, core::seconds(600));
  EXPECT_GE((*full)[first_ten_min->size()].arrival, core::seconds(600));

  auto hundred = load_trace_csv(kAzureCode, {.max_requests = 100});
  ASSERT_TRUE(hundred.has_value());
  EXPECT_EQ(hundred->size(), 100u);
  auto none = load_trace_csv(kAzureCode, {.max_requests = 0});
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

TEST(TraceCsvTest, ParsesFractionsColumnOrderAndZeroTokens) {
  const std::string text =
      "GeneratedTokens, TIMESTAMP ,ContextTokens,Extra\r\n"
      "5,2024-02-29 23:59:59,100,x\r\n"
      "\n"
      "0,2024-03-01 00:00:00.5,0,y\r\n"
      "7,2024-03-01 00:00:00.500000001,3,z";
  auto r = parse_trace_csv(text, "inline.csv", {});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].arrival, 0);
  EXPECT_EQ((*r)[0].input_tokens, 100);
  EXPECT_EQ((*r)[0].output_tokens, 5);
  EXPECT_EQ((*r)[1].arrival, 1'500'000'000);  // across a leap day's midnight
  EXPECT_EQ((*r)[1].input_tokens, 1);         // 0 reads as 1
  EXPECT_EQ((*r)[1].output_tokens, 1);
  EXPECT_EQ((*r)[2].arrival, 1'500'000'001);
}

struct Malformed {
  std::string body;
  std::string expect;  // in the message, after "bad.csv:LINE:"
  int line;
};

TEST(TraceCsvTest, MalformedRowsNameFileLineAndColumn) {
  const Malformed cases[] = {
      {"2023-11-16 18:17:03.97,4808\n", "expected 3 comma-separated columns", 2},
      {"2023-11-16 18:17:03.97,4808,10\n2023-11-16 18:17:04,abc,8\n", "column ContextTokens", 3},
      {"2023-11-16 18:17:03.97,4808,-1\n", "column GeneratedTokens", 2},
      {"2023-11-16 18:17:03.97,4808,99999999999\n", "column GeneratedTokens", 2},
      {"2023/11/16 18:17:03,1,1\n", "column TIMESTAMP", 2},
      {"2023-02-30 18:17:03,1,1\n", "column TIMESTAMP", 2},
      {"2023-11-16 25:17:03,1,1\n", "column TIMESTAMP", 2},
      {"2023-11-16 18:17:03.1234567890,1,1\n", "column TIMESTAMP", 2},
      {"2023-11-16 18:17:03.,1,1\n", "column TIMESTAMP", 2},
      {"2023-11-16 18:17:05,1,1\n2023-11-16 18:17:04,1,1\n", "sorted by time", 3},
      {"2023-11-16 18:17:05,1,1.5\n", "column GeneratedTokens", 2},
  };
  for (const auto& c : cases) {
    auto r = parse_trace_csv(with_header(c.body), "bad.csv", {});
    ASSERT_FALSE(r.has_value()) << c.body;
    EXPECT_EQ(r.error().code(), core::Code::kParse);
    const std::string& msg = r.error().message();
    EXPECT_EQ(msg.rfind("bad.csv:" + std::to_string(c.line) + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
  }
}

TEST(TraceCsvTest, BadHeadersAndEmptyFilesAreRejected) {
  auto no_col = parse_trace_csv("TIMESTAMP,ContextTokens\n2023-11-16 18:17:03,1\n", "h.csv", {});
  ASSERT_FALSE(no_col.has_value());
  EXPECT_NE(no_col.error().message().find("h.csv:1:"), std::string::npos);
  EXPECT_NE(no_col.error().message().find("GeneratedTokens"), std::string::npos);

  auto empty = parse_trace_csv("", "e.csv", {});
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message().find("e.csv"), std::string::npos);

  auto header_only = parse_trace_csv(kHeader, "e.csv", {});
  ASSERT_FALSE(header_only.has_value());
  EXPECT_NE(header_only.error().message().find("no request rows"), std::string::npos);
}

TEST(TraceCsvTest, BadOptionsAreRejected) {
  const std::string ok = with_header("2023-11-16 18:17:03,1,1\n");
  EXPECT_FALSE(parse_trace_csv(ok, "o.csv", {.time_scale = 0}).has_value());
  EXPECT_FALSE(parse_trace_csv(ok, "o.csv", {.time_scale = -1}).has_value());
  EXPECT_FALSE(parse_trace_csv(ok, "o.csv", {.max_requests = -2}).has_value());
  EXPECT_FALSE(parse_trace_csv(ok, "o.csv", {.horizon = -1}).has_value());
  auto r = parse_trace_csv(ok, "o.csv", {.time_scale = NAN});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("time_scale"), std::string::npos);
}

// Found by tests/fuzz/trace_csv_fuzz.cpp: nanoseconds since 1970 overflowed int64 (undefined
// behaviour) for times after 2262-04-11, and offsets between rows did for times before 1970.
TEST(TraceCsvTest, TimesOutsideTheNanosecondRangeAreErrors) {
  const std::string cases[] = {
      "2023-11-16 18:17:03,1,1\n4046-11-16 18:17:04,1,1\n",
      "9999-12-31 23:59:59.999999999,1,1\n",
      "2262-04-11 23:47:16.854775808,1,1\n",  // one nanosecond past INT64_MAX
      "1969-12-31 23:59:59.999999999,1,1\n",
      "0000-01-01 00:00:00,1,1\n",
  };
  for (const std::string& body : cases) {
    auto r = parse_trace_csv(with_header(body), "range.csv", {});
    ASSERT_FALSE(r.has_value()) << body;
    EXPECT_EQ(r.error().code(), core::Code::kParse);
    EXPECT_EQ(r.error().message().rfind("range.csv:", 0), 0u) << r.error().message();
    EXPECT_NE(r.error().message().find("1970-01-01 to 2262-04-11"), std::string::npos)
        << r.error().message();
  }
  // The ends of the range are times a trace may hold. (An offset of kNever itself would be cut by
  // the default horizon, which drops arrivals at or after it, so the first row starts 1 ns in.)
  auto ends = parse_trace_csv(with_header("1970-01-01 00:00:00.000000001,1,1\n"
                                          "2262-04-11 23:47:16.854775807,1,1\n"),
                              "range.csv", {});
  ASSERT_TRUE(ends.has_value()) << ends.error().message();
  ASSERT_EQ(ends->size(), 2u);
  EXPECT_EQ((*ends)[1].arrival, core::kNever - 1);
  EXPECT_TRUE(parse_trace_csv(with_header("1970-01-01 00:00:00,1,1\n"), "range.csv", {}));
}

// Found by tests/fuzz/trace_csv_fuzz.cpp: a time_scale that stretched an offset past the int64
// range turned it into a large negative arrival (llround out of range), ahead of every other row.
TEST(TraceCsvTest, StretchingPastTheNanosecondRangeEndsTheTrace) {
  const std::string text = with_header(
      "2023-11-16 18:17:03,1,1\n"
      "2023-11-16 18:17:04,2,2\n"
      "2023-11-16 18:17:33,3,3\n");  // 30 s: 3e19 ns at time_scale 1e9
  auto r = parse_trace_csv(text, "s.csv", {.time_scale = 1e9});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].arrival, 0);
  EXPECT_EQ((*r)[1].arrival, core::Nanos{1'000'000'000'000'000'000});
}

TEST(TraceCsvTest, ReadsFromDiskAndReportsMissingFiles) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tessera_trace_" +
                     std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".csv");
  {
    std::ofstream f(path);
    f << kHeader << "2023-11-16 18:17:03.5,12,3\n2023-11-16 18:17:04,x,3\n";
  }
  auto bad = load_trace_csv(path.string(), {});
  std::filesystem::remove(path);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find(path.string() + ":3:"), std::string::npos)
      << bad.error().message();

  auto missing = load_trace_csv("/nonexistent/trace.csv", {});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), core::Code::kNotFound);
  EXPECT_NE(missing.error().message().find("/nonexistent/trace.csv"), std::string::npos);
}

// A trace past the 1 GiB cap is refused without being read (a sparse file: its size is all there
// is), and a folder is named as one.
TEST(TraceCsvTest, FilesPastTheCapAndFoldersAreRefused) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("tessera_trace_cap_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const auto huge = dir / "huge.csv";
  std::ofstream(huge) << kHeader;
  std::filesystem::resize_file(huge, core::kMaxTableBytes + 1);
  auto big = load_trace_csv(huge.string(), {});
  auto folder = load_trace_csv(dir.string(), {});
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(big.has_value());
  EXPECT_EQ(big.error().message(), "trace file '" + huge.string() +
                                       "' is larger than 1 GiB, the most tessera reads from one "
                                       "trace file");
  ASSERT_FALSE(folder.has_value());
  EXPECT_EQ(folder.error().message(),
            "cannot read trace file '" + dir.string() + "': it is a directory");
}

// Robustness: random edits of a valid trace never crash the parser; every outcome is a value or
// an error that names the source.
TEST(TraceCsvTest, MutatedInputNeverCrashes) {
  const std::string valid = with_header(
      "2023-11-16 18:17:03.9799600,4808,10\n"
      "2023-11-16 18:17:04.0319600,3180,8\n"
      "2023-11-16 18:17:04.0781490,110,27\n");
  const std::string alphabet = "0123456789-:., \n\r\tTxX\xEF\xBB\xBF\"";
  core::RandomStream rng(2024);
  int errors = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    std::string text = valid;
    const int edits = 1 + static_cast<int>(rng.below(6));
    for (int e = 0; e < edits; ++e) {
      const auto at = rng.below(text.size() + 1);
      const char c = alphabet[rng.below(alphabet.size())];
      switch (rng.below(3)) {
        case 0: text.insert(text.begin() + static_cast<long>(at), c); break;
        case 1:
          if (at < text.size()) text.erase(at, 1);
          break;
        default:
          if (at < text.size()) text[at] = c;
          break;
      }
    }
    auto r = parse_trace_csv(text, "fuzz.csv", {});
    if (!r) {
      ++errors;
      EXPECT_EQ(r.error().message().rfind("fuzz.csv", 0), 0u) << r.error().message();
    } else {
      for (const auto& q : *r) {
        EXPECT_GE(q.arrival, 0);
        EXPECT_GE(q.input_tokens, 1);
        EXPECT_GE(q.output_tokens, 1);
      }
    }
  }
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace tessera::workload
