#include "tessera/hw/mig_profiles.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/csv.hpp"

namespace tessera::hw {
namespace {

using test::read_csv;
using ::testing::HasSubstr;

constexpr std::int64_t kGiB = 1024 * 1024 * 1024;

std::vector<int> parse_starts(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ';')) out.push_back(std::stoi(item));
  return out;
}

// The CSV's product names for the catalog's boards.
const std::map<std::string, std::string> kCsvGpu{{"A100-SXM4-40GB", "A100-SXM4-40GB"},
                                                 {"A100-SXM4-80GB", "A100-SXM4-80GB"},
                                                 {"H100-80GB", "H100-SXM5-80GB"},
                                                 {"H200-141GB", "H200-SXM-141GB"}};

TEST(MigCatalog, MatchesTheCsvTranscriptionRowByRow) {
  const auto rows = read_csv(TESSERA_SHARED_DATA_DIR "/mig/mig_gpu_instance_profiles.csv");
  ASSERT_EQ(rows.size(), 28u);
  std::map<std::string, int> seen;
  for (const auto& row : rows) {
    const std::string& product = row.at("gpu_product");
    ASSERT_TRUE(kCsvGpu.contains(product)) << product;
    auto geo = find_mig_geometry(kCsvGpu.at(product));
    ASSERT_TRUE(geo.has_value()) << geo.error().message();
    const int id = std::stoi(row.at("nvidia_smi_gi_profile_id"));
    const MigProfile* p = geo->find(id);
    ASSERT_NE(p, nullptr) << product << " " << id;
    SCOPED_TRACE(product + " " + p->name);
    EXPECT_EQ(p->name, row.at("profile_name"));
    EXPECT_EQ(p->compute_slices, std::stoi(row.at("compute_slices_of_7")));
    EXPECT_EQ(p->memory_slices, std::stoi(row.at("memory_slices_of_8")));
    EXPECT_EQ(p->memory_slices, std::stoi(row.at("placement_size_memory_slices")));
    EXPECT_EQ(p->max_instances, std::stoi(row.at("max_instances")));
    EXPECT_EQ(p->placement_starts, parse_starts(row.at("placement_starts")));
    EXPECT_EQ(p->memory_bytes, std::stoll(row.at("nominal_memory_gb")) * kGiB);
    EXPECT_EQ(p->media_extensions, row.at("profile_name").ends_with("+me"));
    ++seen[product];
  }
  for (const auto& [product, n] : seen) {
    EXPECT_EQ(n, 7) << product;
    EXPECT_EQ(find_mig_geometry(kCsvGpu.at(product))->profiles.size(), 7u) << product;
  }
}

TEST(MigCatalog, OneGeometryPerMigCapableBoardInCatalogOrder) {
  const auto& catalog = mig_catalog();
  ASSERT_EQ(catalog.size(), 4u);
  EXPECT_EQ(catalog[0].gpu, "A100-SXM4-40GB");
  EXPECT_EQ(catalog[1].gpu, "A100-SXM4-80GB");
  EXPECT_EQ(catalog[2].gpu, "H100-SXM5-80GB");
  EXPECT_EQ(catalog[3].gpu, "H200-SXM-141GB");
  for (const MigGeometry& g : catalog) {
    for (std::size_t i = 1; i < g.profiles.size(); ++i) {
      const MigProfile& a = g.profiles[i - 1];
      const MigProfile& b = g.profiles[i];
      EXPECT_LT(std::tuple(a.compute_slices, a.memory_slices, a.media_extensions),
                std::tuple(b.compute_slices, b.memory_slices, b.media_extensions))
          << g.gpu;
    }
    for (const MigProfile& p : g.profiles) {
      EXPECT_TRUE(std::ranges::is_sorted(p.placement_starts));
      EXPECT_LE(p.placement_starts.back() + p.memory_slices, kMigMemorySlices) << p.name;
    }
  }
}

TEST(MigCatalog, NvmlIndicesAndSms) {
  auto a100 = find_mig_geometry("a100-40gb");
  ASSERT_TRUE(a100.has_value());
  std::map<int, std::pair<int, int>> expected{{19, {0x0, 14}}, {20, {0x7, 14}}, {15, {0x9, 14}},
                                              {14, {0x1, 28}}, {9, {0x2, 42}},  {5, {0x3, 56}},
                                              {0, {0x4, 98}}};
  for (const auto& [id, want] : expected) {
    EXPECT_EQ(a100->find(id)->nvml_index, want.first) << id;
    EXPECT_EQ(a100->find(id)->sms, want.second) << id;
  }
  auto h100 = find_mig_geometry("h100");
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->find(19)->sms, 16);
  EXPECT_EQ(h100->find(15)->sms, 26);
  EXPECT_EQ(h100->find(9)->sms, 60);
  EXPECT_EQ(h100->find(0)->sms, 132);
}

TEST(MigCatalog, LooksUpByCatalogNameOrAlias) {
  EXPECT_EQ(find_mig_geometry("h200")->gpu, "H200-SXM-141GB");
  EXPECT_EQ(find_mig_geometry("A100-80GB")->gpu, "A100-SXM4-80GB");
  EXPECT_EQ(find_mig_geometry("h100-sxm5-80gb")->gpu, "H100-SXM5-80GB");
  auto bad = find_mig_geometry("rtx4090");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("A100-SXM4-40GB"));
}

TEST(MigGeometry, FindsProfilesByNameOrId) {
  auto g = *find_mig_geometry("a100-40gb");
  EXPECT_EQ((*g.find("3G.20GB"))->id, 9);
  EXPECT_EQ((*g.find("15"))->name, "1g.10gb");
  EXPECT_EQ((*g.find("1g.5gb+me"))->id, 20);
  EXPECT_EQ(g.find(42), nullptr);
  auto bad = g.find("5g.30gb");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("7g.40gb"));
  EXPECT_FALSE(g.find("").has_value());
}

TEST(MigGeometry, SmallestWithMemorySkipsMediaExtensions) {
  auto g = *find_mig_geometry("a100-40gb");
  EXPECT_EQ(g.smallest_with_memory(1)->id, 19);
  EXPECT_EQ(g.smallest_with_memory(5 * kGiB)->id, 19);
  // 10 GiB: 1g.10gb and 2g.10gb both take two memory slices; the one compute slice wins.
  EXPECT_EQ(g.smallest_with_memory(5 * kGiB + 1)->id, 15);
  EXPECT_EQ(g.smallest_with_memory(11 * kGiB)->id, 9);
  EXPECT_EQ(g.smallest_with_memory(40 * kGiB)->id, 0);
  EXPECT_EQ(g.smallest_with_memory(40 * kGiB + 1), nullptr);
}

TEST(CheckMigLayout, AcceptsDocumentedLayoutsAndNamesTheFaultyInstance) {
  auto g = *find_mig_geometry("a100-40gb");
  EXPECT_TRUE(check_mig_layout(g, {}).has_value());
  EXPECT_TRUE(check_mig_layout(g, {{9, 4}, {19, 0}, {14, 2}, {19, 1}}).has_value());
  EXPECT_TRUE(check_mig_layout(g, {{5, 0}, {9, 4}}).has_value());

  auto overlap = check_mig_layout(g, {{14, 0}, {19, 1}});
  ASSERT_FALSE(overlap.has_value());
  EXPECT_THAT(overlap.error().message(), HasSubstr("instance 1"));
  EXPECT_THAT(overlap.error().message(), HasSubstr("overlaps"));

  auto start = check_mig_layout(g, {{9, 2}});
  ASSERT_FALSE(start.has_value());
  EXPECT_THAT(start.error().message(), HasSubstr("instance 0"));

  EXPECT_FALSE(check_mig_layout(g, {{19, 7}}).has_value());
  EXPECT_FALSE(check_mig_layout(g, {{77, 0}}).has_value());
  EXPECT_FALSE(check_mig_layout(g, {{20, 0}, {20, 1}}).has_value());
  EXPECT_FALSE(check_mig_layout(g, {{5, 0}, {5, 0}}).has_value());
}

TEST(CheckMigLayout, CountsComputeSlicesAndInstanceLimits) {
  // The catalog's own starts never let compute slices pass 7; a hand-made geometry does.
  MigGeometry g;
  g.gpu = "test";
  g.profiles = {MigProfile{.id = 1,
                           .nvml_index = 0,
                           .name = "2g.x",
                           .compute_slices = 2,
                           .memory_slices = 1,
                           .memory_bytes = kGiB,
                           .sms = 2,
                           .max_instances = 8,
                           .placement_starts = {0, 1, 2, 3, 4, 5, 6, 7},
                           .media_extensions = false},
                MigProfile{.id = 2,
                           .nvml_index = 0,
                           .name = "1g.x",
                           .compute_slices = 1,
                           .memory_slices = 1,
                           .memory_bytes = kGiB,
                           .sms = 1,
                           .max_instances = 2,
                           .placement_starts = {0, 1, 2, 3, 4, 5, 6, 7},
                           .media_extensions = false}};
  EXPECT_TRUE(check_mig_layout(g, {{1, 0}, {1, 1}, {1, 2}, {2, 3}}).has_value());
  auto compute = check_mig_layout(g, {{1, 0}, {1, 1}, {1, 2}, {1, 3}});
  ASSERT_FALSE(compute.has_value());
  EXPECT_THAT(compute.error().message(), HasSubstr("instance 3"));
  auto many = check_mig_layout(g, {{2, 0}, {2, 1}, {2, 2}});
  ASSERT_FALSE(many.has_value());
  EXPECT_THAT(many.error().message(), HasSubstr("instance 2"));
}

}  // namespace
}  // namespace tessera::hw
