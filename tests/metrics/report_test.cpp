#include "tessera/metrics/report.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace tessera::metrics {
namespace {

using ::testing::HasSubstr;

TenantReport inference_tenant() {
  TenantReport t;
  t.name = "chat";
  t.kind = "inference";
  t.model = "llama-3-8b";
  t.slo = {.ttft = core::millis(200), .tpot = 0};
  InferenceSummary s;
  s.arrived = 120;
  s.completed = 118;
  s.ttft_ms = {.count = 118, .mean = 40.1234567, .p50 = 35.31, .p90 = 60, .p99 = 81.5, .max = 90};
  s.tpot_ms = {.count = 118, .mean = 12, .p50 = 11.5, .p90 = 13, .p99 = 14.3, .max = 15};
  s.e2e_ms = {.count = 118, .mean = 900, .p50 = 850, .p90 = 1500, .p99 = 2345.678, .max = 2500};
  s.slo_attainment = 0.95;
  s.output_tokens_per_s = 1234.4;
  t.inference = s;
  return t;
}

TenantReport training_tenant() {
  TenantReport t;
  t.name = "resnet";
  t.kind = "training";
  t.model = "resnet-50";
  TrainingSummary s;
  s.iterations = 30;
  s.iterations_per_s = 3.1;
  s.samples_per_s = 400;
  s.iteration_ms = {.count = 30, .mean = 320, .p50 = 318, .p90 = 330, .p99 = 341, .max = 341};
  t.training = s;
  return t;
}

RunReport small_report() {
  RunReport r;
  r.scenario = "demo";
  r.gpu = "H100-SXM5-80GB";
  r.seed = 42;
  ModeReport exclusive;
  exclusive.mode = "exclusive";
  exclusive.simulated = core::seconds(10);
  exclusive.gpus = 2;
  exclusive.device = {.elapsed = core::seconds(10),
                      .sm_busy_fraction = 0.6234,
                      .energy_joules = 7000.123456789,
                      .average_power_watts = 350.0061728,
                      .kernels_completed = 12345};
  exclusive.tenants = {inference_tenant(), training_tenant()};
  ModeReport partitions = exclusive;
  partitions.mode = "static-partitions";
  partitions.gpus = 1;
  partitions.device.sm_busy_fraction = 0.9;
  r.modes = {exclusive, partitions};
  return r;
}

TEST(ReportJson, RoundTripKeepsKeysAndValues) {
  const nlohmann::json parsed = nlohmann::json::parse(to_json(small_report()).dump());
  EXPECT_EQ(parsed["scenario"], "demo");
  EXPECT_EQ(parsed["gpu"], "H100-SXM5-80GB");
  EXPECT_EQ(parsed["seed"], 42);
  EXPECT_EQ(parsed["backend"], "simulator");
  ASSERT_EQ(parsed["modes"].size(), 2u);

  const auto& mode = parsed["modes"][0];
  EXPECT_EQ(mode["mode"], "exclusive");
  EXPECT_EQ(mode["gpus"], 2);
  EXPECT_DOUBLE_EQ(mode["simulated_s"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(mode["device"]["sm_utilization_pct"].get<double>(), 62.34);
  EXPECT_DOUBLE_EQ(mode["device"]["energy_j"].get<double>(), 7000.12);  // 6 significant digits
  EXPECT_DOUBLE_EQ(mode["device"]["average_power_w"].get<double>(), 350.006);
  EXPECT_EQ(mode["device"]["kernels_completed"], 12345);

  const auto& chat = mode["tenants"][0];
  EXPECT_EQ(chat["name"], "chat");
  EXPECT_EQ(chat["kind"], "inference");
  EXPECT_EQ(chat["model"], "llama-3-8b");
  EXPECT_DOUBLE_EQ(chat["slo"]["ttft_ms"].get<double>(), 200);
  EXPECT_TRUE(chat["slo"]["tpot_ms"].is_null());  // unset target
  EXPECT_EQ(chat["inference"]["arrived"], 120);
  EXPECT_EQ(chat["inference"]["completed"], 118);
  EXPECT_DOUBLE_EQ(chat["inference"]["ttft_ms"]["p50"].get<double>(), 35.31);
  EXPECT_DOUBLE_EQ(chat["inference"]["ttft_ms"]["mean"].get<double>(), 40.1235);
  EXPECT_DOUBLE_EQ(chat["inference"]["tpot_ms"]["p99"].get<double>(), 14.3);
  EXPECT_DOUBLE_EQ(chat["inference"]["e2e_ms"]["p99"].get<double>(), 2345.68);
  EXPECT_DOUBLE_EQ(chat["inference"]["slo_attainment"].get<double>(), 0.95);
  EXPECT_DOUBLE_EQ(chat["inference"]["output_tokens_per_s"].get<double>(), 1234.4);
  EXPECT_FALSE(chat.contains("training"));

  const auto& resnet = mode["tenants"][1];
  EXPECT_EQ(resnet["training"]["iterations"], 30);
  EXPECT_DOUBLE_EQ(resnet["training"]["iterations_per_s"].get<double>(), 3.1);
  EXPECT_DOUBLE_EQ(resnet["training"]["samples_per_s"].get<double>(), 400);
  EXPECT_DOUBLE_EQ(resnet["training"]["iteration_ms"]["p99"].get<double>(), 341);
  EXPECT_FALSE(resnet.contains("inference"));

  EXPECT_EQ(parsed["modes"][1]["mode"], "static-partitions");
}

TEST(ReportJson, SameReportGivesIdenticalText) {
  EXPECT_EQ(to_json(small_report()).dump(2), to_json(small_report()).dump(2));
}

TEST(ReportJson, RoundedValuesPrintShort) {
  // 6 significant digits keep golden files free of floating-point noise.
  const std::string text = to_json(small_report()).dump();
  EXPECT_THAT(text, HasSubstr("\"energy_j\":7000.12"));
  EXPECT_THAT(text, Not(HasSubstr("7000.123")));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(ReportTable, OneRowPerModeAndTenant) {
  const std::string table = format_table(small_report());
  const auto lines = lines_of(table);
  auto row = [&](std::string_view mode, std::string_view tenant) {
    int found = 0;
    for (const auto& line : lines) {
      if (line.starts_with(mode) && line.find(tenant) != std::string::npos) ++found;
    }
    return found;
  };
  EXPECT_EQ(row("exclusive ", " chat "), 1);
  EXPECT_EQ(row("exclusive ", " resnet "), 1);
  EXPECT_EQ(row("static-partitions ", " chat "), 1);
  EXPECT_EQ(row("static-partitions ", " resnet "), 1);
  EXPECT_THAT(table, HasSubstr("118/120"));
  EXPECT_THAT(table, HasSubstr("35.3/81.5"));  // TTFT p50/p99 ms
  EXPECT_THAT(table, HasSubstr("11.5/14.3"));
  EXPECT_THAT(table, HasSubstr("95.0"));
  EXPECT_THAT(table, HasSubstr("1234 tok/s"));
  EXPECT_THAT(table, HasSubstr("3.10 it/s 400 smp/s"));
  EXPECT_THAT(table,
              HasSubstr("exclusive device: SM util 62.3%, energy 7000 J, avg power 350 W, GPUs 2"));
  EXPECT_THAT(table, HasSubstr("static-partitions device: SM util 90.0%"));
  EXPECT_THAT(table, HasSubstr("nearest-rank"));
}

TEST(ReportTable, ColumnsLineUpAndFit120Columns) {
  const auto lines = lines_of(format_table(small_report()));
  std::size_t header = 0;
  while (header < lines.size() && !lines[header].starts_with("mode ")) ++header;
  ASSERT_LT(header + 2, lines.size());
  // The throughput column starts at the same offset in the header and in every tenant row.
  const std::size_t column = lines[header].find("throughput");
  ASSERT_NE(column, std::string::npos);
  for (const auto& line : lines) {
    EXPECT_LE(line.size(), 120u) << line;
    if (line.find("tok/s") != std::string::npos || line.find("it/s") != std::string::npos) {
      EXPECT_NE(line[column], ' ') << line;
      EXPECT_EQ(line[column - 1], ' ') << line;
    }
  }
}

TEST(ReportTable, DashesForWhatDoesNotApply) {
  RunReport r = small_report();
  r.modes.resize(1);
  r.modes[0].tenants[0].slo = {};  // no targets: SLO % would only restate done/arr
  r.modes[0].tenants[0].inference->ttft_ms = {};
  const auto lines = lines_of(format_table(r));
  for (const auto& line : lines) {
    if (!line.starts_with("exclusive ")) continue;
    if (line.find(" chat ") != std::string::npos) {
      EXPECT_THAT(line, HasSubstr("118/120"));
      EXPECT_THAT(line, Not(HasSubstr("95.0")));
      EXPECT_THAT(line, HasSubstr(" - "));
    }
  }
}

}  // namespace
}  // namespace tessera::metrics
