// `tessera simulate --report`'s page: the thinned CDFs are exact quantiles, the plots' data are the
// report's figures (as its JSON gives them), a tenant out of memory is in the table and absent
// from that mode's plots, and a page that cannot be written names its path.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "headless_chromium.hpp"
#include "run_cli.hpp"
#include "small_run.hpp"
#include "tessera/report/html_page.hpp"
#include "tessera/scenario/html_report.hpp"

namespace tessera::scenario {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

const metrics::TenantReport& tenant(const metrics::ModeReport& m, std::string_view name) {
  const auto it = std::ranges::find(m.tenants, name, &metrics::TenantReport::name);
  EXPECT_NE(it, m.tenants.end()) << name;
  return *it;
}

// A CDF spec's points of one mode, in order.
std::vector<json> points_of(const json& spec, std::string_view mode) {
  std::vector<json> out;
  for (const json& p : spec["layer"][0]["data"]["values"]) {
    if (p["mode"] == mode) out.push_back(p);
  }
  return out;
}

// A bar chart's value per mode.
std::map<std::string, double> bars_of(const json& chart) {
  std::map<std::string, double> out;
  for (const json& v : chart["data"]["values"]) out[v["mode"]] = v["value"];
  return out;
}

TEST(SimulateReportPage, AShortCdfKeepsEverySample) {
  const std::vector<CdfPoint> cdf = thin_cdf({3, 1, 2, 2});
  ASSERT_EQ(cdf.size(), 3u);
  EXPECT_EQ(cdf[0].value, 1);
  EXPECT_EQ(cdf[0].fraction, 0.25);
  EXPECT_EQ(cdf[1].value, 2);
  EXPECT_EQ(cdf[1].fraction, 0.75);  // the step is at the last of equal samples
  EXPECT_EQ(cdf[2].value, 3);
  EXPECT_EQ(cdf[2].fraction, 1.0);
  EXPECT_TRUE(thin_cdf({}).empty());
}

TEST(SimulateReportPage, ALongCdfIsExactQuantilesAtEvenlySpacedRanks) {
  constexpr std::size_t n = 10007;
  std::vector<double> samples;
  for (std::size_t i = 0; i < n; ++i) samples.push_back(0.5 * static_cast<double>(i) + 1);
  std::vector<double> shuffled = samples;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(1));
  const std::vector<CdfPoint> cdf = thin_cdf(shuffled);
  ASSERT_EQ(cdf.size(), kMaxCdfPoints);
  EXPECT_EQ(cdf.front().value, samples.front());
  EXPECT_EQ(cdf.front().fraction, 1.0 / n);
  EXPECT_EQ(cdf.back().value, samples.back());
  EXPECT_EQ(cdf.back().fraction, 1.0);
  // Sample i (0-based) is the (i + 1)-th smallest; the ranks step by (n - 1) / 499, rounded.
  const double step = static_cast<double>(n - 1) / static_cast<double>(kMaxCdfPoints - 1);
  for (std::size_t k = 0; k < cdf.size(); ++k) {
    const auto i = static_cast<std::size_t>((cdf[k].value - 1) / 0.5);
    EXPECT_EQ(samples[i], cdf[k].value);
    EXPECT_EQ(cdf[k].fraction, static_cast<double>(i + 1) / n);
    EXPECT_LE(std::abs(static_cast<double>(i) - step * static_cast<double>(k)), 0.5) << k;
  }
}

TEST(SimulateReportPage, KeptSamplesAreWhatTheSummariesCountAndChangeNoOutput) {
  const metrics::RunReport without = test::run_on_sim(test::kSmallRun, false);
  const metrics::RunReport with = test::run_on_sim(test::kSmallRun, true);
  EXPECT_EQ(metrics::to_json(with).dump(2), metrics::to_json(without).dump(2));
  EXPECT_EQ(metrics::format_table(with), metrics::format_table(without));
  for (const metrics::ModeReport& m : with.modes) {
    EXPECT_FALSE(tenant(without.modes[0], "chat").samples.has_value());
    const metrics::TenantReport& chat = tenant(m, "chat");
    ASSERT_TRUE(chat.samples && chat.inference) << m.mode;
    EXPECT_FALSE(tenant(m, "trainer").samples.has_value());
    const auto& s = *chat.samples;
    ASSERT_GT(s.tpot_ms.size(), 10u) << m.mode;
    EXPECT_EQ(s.ttft_ms.size(), chat.inference->ttft_ms.count);
    EXPECT_EQ(s.tpot_ms.size(), chat.inference->tpot_ms.count);
    EXPECT_EQ(std::ranges::max(s.ttft_ms), chat.inference->ttft_ms.max);
    EXPECT_EQ(std::ranges::max(s.tpot_ms), chat.inference->tpot_ms.max);
    EXPECT_EQ(metrics::summarize(s.tpot_ms).p50, chat.inference->tpot_ms.p50);
    // The scenario's single-token outputs.
    EXPECT_EQ(std::ranges::min(s.tpot_ms), 0.0) << m.mode;
  }
}

TEST(SimulateReportPage, ThePlotsDataAreTheReportsFigures) {
  const metrics::RunReport r = test::run_on_sim(test::kSmallRun, true);
  const json j = metrics::to_json(r);
  ASSERT_EQ(r.modes.size(), 2u);

  const json ttft = latency_cdf_spec(r, "chat", Latency::kTtft);
  const json tpot = latency_cdf_spec(r, "chat", Latency::kTpot);
  ASSERT_FALSE(ttft.is_null());
  ASSERT_FALSE(tpot.is_null());
  EXPECT_EQ(ttft["layer"][1]["data"]["values"][0]["target_ms"], 200.0);
  EXPECT_EQ(tpot["layer"][1]["data"]["values"][0]["target_ms"], 30.0);
  EXPECT_EQ(ttft["layer"][0]["encoding"]["x"]["scale"]["type"], "log");
  EXPECT_TRUE(latency_cdf_spec(r, "trainer", Latency::kTtft).is_null());
  for (const metrics::ModeReport& m : r.modes) {
    const metrics::TenantReport& chat = tenant(m, "chat");
    for (const auto& [spec, samples] :
         {std::pair{&ttft, &chat.samples->ttft_ms}, std::pair{&tpot, &chat.samples->tpot_ms}}) {
      const std::vector<json> points = points_of(*spec, m.mode);
      ASSERT_FALSE(points.empty()) << m.mode;
      EXPECT_LE(points.size(), kMaxCdfPoints);
      EXPECT_EQ(points.back()["ms"], std::ranges::max(*samples));
      EXPECT_EQ(points.back()["fraction"], 1.0);
      // The log axis starts at the smallest positive sample; the zeros below it count.
      double positive = std::numeric_limits<double>::infinity();
      std::size_t zeros = 0;
      for (double v : *samples) {
        if (v > 0) {
          positive = std::min(positive, v);
        } else {
          ++zeros;
        }
      }
      EXPECT_EQ(points.front()["ms"], positive);
      EXPECT_GT(points.front()["fraction"].get<double>(),
                static_cast<double>(zeros) / static_cast<double>(samples->size()));
    }
  }

  // The bars, as the JSON's figures.
  const json throughput = throughput_spec(r);
  ASSERT_EQ(throughput["hconcat"].size(), 2u);
  EXPECT_EQ(throughput["hconcat"][0]["title"], "chat");
  EXPECT_EQ(throughput["hconcat"][1]["title"], "trainer");
  const json slo = slo_attainment_spec(r);
  ASSERT_FALSE(slo.is_null());
  ASSERT_EQ(slo["hconcat"].size(), 1u);
  const json memory = memory_spec(r);
  ASSERT_FALSE(memory.is_null());
  std::map<std::string, double> parts;
  for (const json& p : memory["layer"][0]["data"]["values"])
    parts[p["bar"].get<std::string>() + " " + p["part"].get<std::string>()] = p["gib"];
  for (std::size_t i = 0; i < r.modes.size(); ++i) {
    const json& mode = j["modes"][i];
    const std::string name = mode["mode"];
    const json& chat = mode["tenants"][0];
    const json& trainer = mode["tenants"][1];
    EXPECT_EQ(bars_of(throughput["hconcat"][0]).at(name), chat["inference"]["output_tokens_per_s"]);
    EXPECT_EQ(bars_of(throughput["hconcat"][1]).at(name), trainer["training"]["samples_per_s"]);
    EXPECT_NEAR(bars_of(slo["hconcat"][0]).at(name),
                100 * chat["inference"]["slo_attainment"].get<double>(), 1e-3);
    EXPECT_EQ(parts.at(name + " / chat weights"), chat["memory"]["weights_gib"]);
    EXPECT_EQ(parts.at(name + " / chat activations"), chat["memory"]["activations_gib"]);
    EXPECT_EQ(parts.at(name + " / chat KV cache"), chat["memory"]["kv_cache_gib"]);
    EXPECT_EQ(memory["layer"][1]["data"]["values"][i]["budget_gib"], chat["memory"]["budget_gib"]);
  }

  // The terminal's table, as HTML: a row per mode and tenant, the device and memory lines.
  const std::string html = format_html_report(r);
  for (const metrics::ModeReport& m : r.modes) {
    const metrics::InferenceSummary& s = *tenant(m, "chat").inference;
    EXPECT_THAT(html, HasSubstr(fmt::format("<tr><td>{}</td><td>chat</td><td>inference</td><td "
                                            "class=\"num\">{}/{}</td>",
                                            m.mode, s.completed, s.arrived)));
    EXPECT_THAT(html,
                HasSubstr(fmt::format("<tr><td>{}</td><td>trainer</td><td>training</td>", m.mode)));
    EXPECT_THAT(html, HasSubstr(fmt::format("<tr><td>{}</td><td class=\"num\">{:.1f}%</td>", m.mode,
                                            100 * m.device.sm_busy_fraction)));
  }
  EXPECT_THAT(html, HasSubstr("Memory of the tenants whose KV cache was sized"));
  EXPECT_THAT(html, Not(HasSubstr("Out of memory")));
  EXPECT_EQ(test::plot_elements(html).size(), 5u);  // two CDFs, throughput, SLO, memory
}

// Two engines of 0.6 of the GPU: under mps the second does not fit beside the first.
constexpr const char* kOutOfMemory = R"(
name: out-of-memory
gpu: H100-SXM5-80GB
seed: 3
duration: 2s
modes: [exclusive, mps]
tenants:
  - name: chat
    kind: inference
    model: llama-3-8b
    kv_cache: {gpu_memory_utilization: 0.6}
    arrivals: {process: poisson, rate: 4, input_tokens: {min: 16, max: 64},
               output_tokens: {min: 4, max: 8}}
  - name: chat2
    kind: inference
    model: llama-3-8b
    slo: {ttft: 100ms}
    kv_cache: {gpu_memory_utilization: 0.6}
    arrivals: {process: poisson, rate: 4, input_tokens: {min: 16, max: 64},
               output_tokens: {min: 4, max: 8}}
)";

TEST(SimulateReportPage, ATenantOutOfMemoryIsInTheTableAndAbsentFromThatModesPlots) {
  const metrics::RunReport r = test::run_on_sim(kOutOfMemory, true);
  ASSERT_EQ(r.modes.size(), 2u);
  ASSERT_TRUE(tenant(r.modes[1], "chat2").out_of_memory.has_value());
  ASSERT_FALSE(tenant(r.modes[0], "chat2").out_of_memory.has_value());

  for (const Latency latency : {Latency::kTtft, Latency::kTpot}) {
    const json cdf = latency_cdf_spec(r, "chat2", latency);
    EXPECT_FALSE(points_of(cdf, "exclusive").empty());
    EXPECT_TRUE(points_of(cdf, "mps").empty());
    EXPECT_FALSE(points_of(latency_cdf_spec(r, "chat", latency), "mps").empty());
  }
  const json throughput = throughput_spec(r);
  ASSERT_EQ(throughput["hconcat"].size(), 2u);
  EXPECT_EQ(bars_of(throughput["hconcat"][0]).size(), 2u);
  EXPECT_EQ(bars_of(throughput["hconcat"][1]).count("mps"), 0u);
  EXPECT_EQ(bars_of(throughput["hconcat"][1]).count("exclusive"), 1u);
  const json slo = slo_attainment_spec(r);
  ASSERT_EQ(slo["hconcat"].size(), 1u);
  EXPECT_EQ(bars_of(slo["hconcat"][0]).count("mps"), 0u);
  std::set<std::string> memory_bars;
  const json memory = memory_spec(r);
  for (const json& p : memory["layer"][0]["data"]["values"]) memory_bars.insert(p["bar"]);
  EXPECT_EQ(memory_bars,
            (std::set<std::string>{"exclusive / chat", "exclusive / chat2", "mps / chat"}));

  const std::string html = format_html_report(r);
  EXPECT_THAT(html, HasSubstr("<tr><td>mps</td><td>chat2</td><td>inference</td>"));
  EXPECT_THAT(html, HasSubstr("<td>out of memory</td>"));
  EXPECT_THAT(html, HasSubstr(report::escape_html(*tenant(r.modes[1], "chat2").out_of_memory)));
  EXPECT_THAT(html, HasSubstr("it is absent from that mode&#39;s plots"));
}

TEST(SimulateReportPage, AReportThatCannotBeWrittenNamesThePath) {
  const std::filesystem::path dir = TESSERA_REPORT_TEST_DIR;
  std::filesystem::create_directories(dir);
  const std::filesystem::path yaml = dir / "small-run.yaml";
  std::ofstream(yaml) << test::kSmallRun;
  for (const char* command : {"simulate", "demo"}) {
    std::vector<const char*> argv = {"tessera", command};
    if (std::string_view(command) == "simulate") argv.push_back(yaml.c_str());
    for (const char* arg : {"-q", "--duration", "1s", "--report", "/nonexistent/dir/run.html"})
      argv.push_back(arg);
    const test::CliRun run = test::run_cli(argv);
    EXPECT_EQ(run.status, 1) << command;
    EXPECT_THAT(run.err, HasSubstr("cannot write '/nonexistent/dir/run.html'")) << command;
  }
}

}  // namespace
}  // namespace tessera::scenario
