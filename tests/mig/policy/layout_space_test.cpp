#include "tessera/mig/policy/layout_space.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "support/csv.hpp"

namespace tessera::mig {
namespace {

using ::testing::HasSubstr;

hw::MigGeometry geometry(std::string_view gpu) {
  auto g = hw::find_mig_geometry(gpu);
  EXPECT_TRUE(g.has_value());
  return g.value();
}

LayoutSpace space_of(const hw::MigGeometry& g, std::vector<int> ids = {}) {
  auto s = LayoutSpace::build(g, std::move(ids));
  EXPECT_TRUE(s.has_value()) << s.error().message();
  return std::move(s.value());
}

// The profiles of NVIDIA's A100 combination chart: 1g, 2g, 3g, 4g, 7g.
const std::vector<int> kChartProfiles{19, 14, 9, 5, 0};

bool contains_all(const Layout& big, const Layout& small) {
  return std::ranges::all_of(small.instances, [&](const Placement& p) {
    return std::ranges::find(big.instances, p) != big.instances.end();
  });
}

// Counts, derived by hand. Memory slices 0-3 and 4-7 are two halves no profile but 7g crosses,
// and the compute slices of any two half-layouts add up to at most 4 + 3 = 7, so a layout other
// than the lone 7g is a left half-layout beside a right one, and it is full when both are.
//
// Chart profiles {1g, 2g, 3g, 4g, 7g}:
//   pair of slices (0-1) or (2-3): states {-, 2g, 1g@a, 1g@b, 1g+1g} = 5, full {2g, 1g+1g} = 2
//   left half: states 5*5 + 4g + 3g = 27, full 2*2 + 2 = 6
//   pair (4-5): 5 states, 2 full; pair (6-7): {-, 1g@6} = 2 states, full {1g@6} = 1
//   right half: states 5*2 + 3g@4 = 11, full 2*1 + 1 = 3
//   states 27*11 + 7g = 298; full 6*3 + 7g = 19 (NVIDIA's 19 A100 combinations)
// Default profiles (all but +me) {1g, 1g with 2 memory slices, 2g, 3g, 4g, 7g}:
//   pair (0-1) or (2-3): states {-, 2g, 1g.2m, 1g@a, 1g@b, 1g+1g} = 6, full {2g, 1g.2m, 1g+1g} = 3
//   left half: states 6*6 + 2 = 38, full 3*3 + 2 = 11
//   pair (4-5): 6 states, 3 full; pair (6-7): {-, 1g.2m@6, 1g@6} = 3 states, 2 full
//   right half: states 6*3 + 1 = 19, full 3*2 + 1 = 7
//   states 38*19 + 1 = 723; full 11*7 + 1 = 78
// All four GPUs share the slice geometry (same IDs, starts and limits), so the counts hold for
// each.
TEST(LayoutSpace, ChartProfilesGiveNvidiasNineteenCombinations) {
  const auto g = geometry("a100-40gb");
  const auto space = space_of(g, kChartProfiles);
  EXPECT_EQ(space.size(), 298u);
  EXPECT_EQ(space.full_states().size(), 19u);
  EXPECT_EQ(space.fcr(space.empty_state()), 19);
  auto seven = space.find(Layout{{{0, 0}}});
  ASSERT_TRUE(seven.has_value());
  EXPECT_TRUE(space.is_full(*seven));
  EXPECT_EQ(space.fcr(*seven), 1);
}

TEST(LayoutSpace, DefaultProfilesCountsPerGpu) {
  for (const hw::MigGeometry& g : hw::mig_catalog()) {
    const auto space = space_of(g);
    EXPECT_EQ(space.profile_ids(), (std::vector<int>{19, 15, 14, 9, 5, 0})) << g.gpu;
    EXPECT_EQ(space.size(), 723u) << g.gpu;
    EXPECT_EQ(space.full_states().size(), 78u) << g.gpu;
    EXPECT_EQ(space.fcr(space.empty_state()), 78) << g.gpu;
  }
}

TEST(LayoutSpace, EveryStateIsValidUniqueAndFoundAgain) {
  const auto g = geometry("h100");
  for (const auto& ids : {std::vector<int>{}, kChartProfiles, std::vector<int>{19, 20, 15}}) {
    const auto space = space_of(g, ids);
    EXPECT_TRUE(space.layout(space.empty_state()).instances.empty());
    for (StateId s = 0; s < space.size(); ++s) {
      const Layout& l = space.layout(s);
      EXPECT_TRUE(check_layout(g, l).has_value()) << describe(g, l);
      EXPECT_TRUE(std::ranges::is_sorted(
          l.instances, {}, [](const Placement& p) { return std::pair(p.start, p.profile_id); }));
      EXPECT_EQ(space.find(l), s) << describe(g, l);
      for (const Placement& p : l.instances) {
        EXPECT_NE(std::ranges::find(space.profile_ids(), p.profile_id), space.profile_ids().end());
      }
    }
  }
}

// Brute force against the precomputed tables: full means no (profile, start) of the space can be
// added; fcr counts the full states that contain the state; transitions match check_layout.
TEST(LayoutSpace, FullnessFcrAndTransitionsMatchBruteForce) {
  const auto g = geometry("a100-80gb");
  for (const auto& ids : {std::vector<int>{}, kChartProfiles}) {
    const auto space = space_of(g, ids);
    const auto full = space.full_states();
    for (StateId s = 0; s < space.size(); ++s) {
      const Layout& l = space.layout(s);
      bool can_add = false;
      for (int id : space.profile_ids()) {
        for (int start : g.find(id)->placement_starts) {
          Layout bigger = l;
          bigger.instances.push_back({id, start});
          const bool valid = check_layout(g, bigger).has_value();
          can_add = can_add || valid;
          auto next = space.after_create(s, {id, start});
          ASSERT_EQ(next.has_value(), valid) << describe(g, bigger);
          if (next) {
            EXPECT_TRUE(contains_all(space.layout(*next), bigger));
            EXPECT_EQ(space.after_destroy(*next, {id, start}), s);
          }
        }
      }
      EXPECT_EQ(space.is_full(s), !can_add) << describe(g, l);
      std::int64_t supersets = 0;
      for (StateId f : full) supersets += contains_all(space.layout(f), l) ? 1 : 0;
      EXPECT_EQ(space.fcr(s), supersets) << describe(g, l);
    }
  }
}

TEST(LayoutSpace, DestroyNeedsTheInstance) {
  const auto space = space_of(geometry("a100-40gb"));
  auto s = space.find(Layout{{{14, 0}, {9, 4}}});
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(space.after_destroy(*s, {14, 2}).has_value());
  EXPECT_FALSE(space.after_destroy(*s, {19, 0}).has_value());
  EXPECT_EQ(space.after_destroy(*s, {14, 0}), space.find(Layout{{{9, 4}}}));
  EXPECT_FALSE(space.after_create(*s, {14, 0}).has_value());
  EXPECT_FALSE(space.find(Layout{{{14, 1}}}).has_value());
  EXPECT_FALSE(space.find(Layout{{{20, 0}}}).has_value());  // +me is not in the default space
}

TEST(LayoutSpace, UnknownProfileIsAnError) {
  auto s = LayoutSpace::build(geometry("a100-40gb"), {19, 42});
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message(), HasSubstr("42"));
}

TEST(CheckLayout, RejectsOverlapsBadStartsComputeAndInstanceLimits) {
  const auto g = geometry("a100-40gb");
  EXPECT_TRUE(check_layout(g, Layout{{{19, 0}, {14, 2}, {9, 4}}}).has_value());
  EXPECT_FALSE(check_layout(g, Layout{{{14, 0}, {19, 1}}}).has_value());  // overlap
  EXPECT_FALSE(check_layout(g, Layout{{{9, 2}}}).has_value());            // bad start
  EXPECT_FALSE(check_layout(g, Layout{{{5, 4}}}).has_value());            // 4g only at 0
  EXPECT_FALSE(check_layout(g, Layout{{{20, 0}, {20, 3}}}).has_value());  // two +me
  // Instance limits: the catalog's equal the number of starts, so lower one.
  hw::MigGeometry two = g;
  for (auto& p : two.profiles) {
    if (p.id == 14) p.max_instances = 2;
  }
  EXPECT_TRUE(check_layout(two, Layout{{{14, 0}, {14, 2}}}).has_value());
  auto limit = check_layout(two, Layout{{{14, 0}, {14, 2}, {14, 4}}});
  ASSERT_FALSE(limit.has_value());
  EXPECT_THAT(limit.error().message(), HasSubstr("at most 2"));
  // The catalog's starts never let compute slices pass 7; with 3g on three memory slices and 2g
  // also at 6, 3g + 3g + 2g fits in memory and needs 8.
  hw::MigGeometry eight = g;
  for (auto& p : eight.profiles) {
    if (p.id == 9) p.memory_slices = 3, p.placement_starts = {0, 3};
    if (p.id == 14) p.placement_starts = {0, 2, 4, 6};
  }
  auto too_many = check_layout(eight, Layout{{{9, 0}, {9, 3}, {14, 6}}});
  ASSERT_FALSE(too_many.has_value());
  EXPECT_THAT(too_many.error().message(), HasSubstr("compute slices"));
}

TEST(Describe, NamesInstancesByStart) {
  const auto g = geometry("a100-40gb");
  EXPECT_EQ(describe(g, Layout{}), "empty");
  EXPECT_EQ(describe(g, Layout{{{9, 4}, {14, 0}}}), "2g.10gb@0 + 3g.20gb@4");
}

TEST(ChoosePlacement, HighestFcrThenHighestStart) {
  const auto g = geometry("a100-40gb");
  const auto space = space_of(g, kChartProfiles);
  // 1g@6 leaves 12 of the 19 full layouts (any left half, right half 2g@4+1g@6 or three 1g);
  // every other start leaves 6.
  auto first = choose_placement(space, space.empty_state(), 19);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->placement, (Placement{19, 6}));
  EXPECT_EQ(first->fcr, 12);
  EXPECT_EQ(space.fcr(first->next), 12);
  // Next, 1g@4 and 1g@5 both leave 6: the tie goes to 5.
  auto second = choose_placement(space, first->next, 19);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->placement, (Placement{19, 5}));
  EXPECT_EQ(second->fcr, 6);
  // 7g fits only in the empty state.
  EXPECT_FALSE(choose_placement(space, first->next, 0).has_value());
  EXPECT_EQ(choose_placement(space, space.empty_state(), 0)->placement, (Placement{0, 0}));
  EXPECT_FALSE(choose_placement(space, space.empty_state(), 42).has_value());
}

// ---- NVIDIA's documented geometries -----------------------------------------------------------

struct DocRow {
  std::string example;
  int order = 0;
  int profile = 0;
  std::string start;  // empty when the request failed
  std::string outcome;
};

std::vector<DocRow> documented_rows() {
  std::vector<DocRow> rows;
  for (auto& f : test::read_csv(TESSERA_SHARED_DATA_DIR "/mig/mig_documented_geometries.csv")) {
    rows.push_back({f["example_id"], std::stoi(f["request_order"]), std::stoi(f["gi_profile_id"]),
                    f["placement_start"], f["outcome"]});
  }
  return rows;
}

TEST(DocumentedGeometries, ReplayAtTheirPlacementsGivesValidStates) {
  const auto g = geometry("A100-SXM4-40GB");
  const auto space = space_of(g);
  auto rows = documented_rows();
  ASSERT_EQ(rows.size(), 13u);
  std::ranges::stable_sort(rows, {}, [](const DocRow& r) { return std::pair(r.example, r.order); });
  std::map<std::string, StateId> state;
  int replayed = 0;
  for (const DocRow& r : rows) {
    if (r.outcome != "success") continue;
    StateId& s = state.try_emplace(r.example, space.empty_state()).first->second;
    auto next = space.after_create(s, {r.profile, std::stoi(r.start)});
    ASSERT_TRUE(next.has_value()) << r.example << " #" << r.order;
    s = *next;
    ++replayed;
  }
  EXPECT_EQ(replayed, 12);
  for (const auto& [example, s] : state) {
    EXPECT_TRUE(check_layout(g, space.layout(s)).has_value()) << example;
  }
  EXPECT_EQ(describe(g, space.layout(state.at("ex2"))),
            "1g.5gb@0 + 1g.5gb@1 + 2g.10gb@2 + 3g.20gb@4");
  EXPECT_TRUE(space.is_full(state.at("ex2")));
}

// ex2_bad_order asks for 1g, 1g, 2g, 3g; the driver then fails the 3g. A 1g+1g+2g+3g layout
// needs the 3g at slice 4 and the others in slices 0-3, but fcr alone cannot know a 3g will
// follow: it puts the first 1g at slice 6 (12 full layouts stay open, 6 elsewhere), which closes
// slice 4 to the 3g. Greedy fcr placement fails this order too; asking for the largest first
// (what mig-parted does, and what the guide advises) succeeds.
TEST(DocumentedGeometries, BadOrderFailsUnderGreedyFcrAndLargestFirstSucceeds) {
  const auto g = geometry("A100-SXM4-40GB");
  for (const auto& ids : {std::vector<int>{}, kChartProfiles}) {
    const auto space = space_of(g, ids);
    StateId s = space.empty_state();
    for (int id : {19, 19, 14}) {
      auto c = choose_placement(space, s, id);
      ASSERT_TRUE(c.has_value());
      s = c->next;
    }
    EXPECT_EQ(describe(g, space.layout(s)), "2g.10gb@2 + 1g.5gb@5 + 1g.5gb@6");
    EXPECT_FALSE(choose_placement(space, s, 9).has_value());

    s = space.empty_state();
    for (int id : {9, 14, 19, 19}) {
      auto c = choose_placement(space, s, id);
      ASSERT_TRUE(c.has_value()) << id;
      s = c->next;
    }
    EXPECT_TRUE(space.is_full(s));
    EXPECT_EQ(describe(g, space.layout(s)), "1g.5gb@0 + 1g.5gb@1 + 2g.10gb@2 + 3g.20gb@4");
  }
}

// ---- mig-parted's named layouts ---------------------------------------------------------------

struct Board {
  std::string gpu;
  std::string pci_id;  // a device ID of the board in mig-parted's device filters
};

bool has_filter(const YAML::Node& entry, const std::string& id) {
  const YAML::Node f = entry["device-filter"];
  auto same = [&](const std::string& x) {
    return std::ranges::equal(x, id, [](char a, char b) {
      return std::tolower(static_cast<unsigned char>(a)) ==
             std::tolower(static_cast<unsigned char>(b));
    });
  };
  if (f.IsScalar()) return same(f.as<std::string>());
  for (const auto& x : f) {
    if (same(x.as<std::string>())) return true;
  }
  return false;
}

TEST(MigParted, EveryNamedLayoutOfTheBoardIsPlacedLargestFirst) {
  const YAML::Node root =
      YAML::LoadFile(TESSERA_SHARED_DATA_DIR "/mig/mig-parted_config-default.yaml");
  const std::vector<Board> boards{{"a100-40gb", "0x20B010DE"},
                                  {"a100-80gb", "0x20B210DE"},
                                  {"h100", "0x233010DE"},
                                  {"h200", "0x233510DE"}};
  for (const Board& b : boards) {
    const auto g = geometry(b.gpu);
    std::vector<int> all;
    for (const auto& p : g.profiles) all.push_back(p.id);
    const auto space = space_of(g, all);
    int placed = 0;
    for (const auto& config : root["mig-configs"]) {
      const std::string name = config.first.as<std::string>();
      for (const auto& entry : config.second) {
        if (!entry["mig-enabled"].as<bool>() || !entry["mig-devices"] ||
            entry["mig-devices"].size() == 0) {
          continue;
        }
        // An entry without a filter applies to every board; it is this board's when all its
        // profile names are.
        std::vector<const hw::MigProfile*> wanted;
        bool ours = true;
        for (const auto& d : entry["mig-devices"]) {
          auto p = g.find(d.first.as<std::string>());
          if (!p) {
            ours = false;
            break;
          }
          for (int i = 0; i < d.second.as<int>(); ++i) wanted.push_back(*p);
        }
        if (entry["device-filter"]) {
          if (!has_filter(entry, b.pci_id)) continue;
          ASSERT_TRUE(ours) << b.gpu << " " << name;
        } else if (!ours) {
          continue;
        }
        std::ranges::stable_sort(wanted, [](const hw::MigProfile* x, const hw::MigProfile* y) {
          return std::pair(x->memory_slices, x->compute_slices) >
                 std::pair(y->memory_slices, y->compute_slices);
        });
        StateId s = space.empty_state();
        for (const hw::MigProfile* p : wanted) {
          auto c = choose_placement(space, s, p->id);
          ASSERT_TRUE(c.has_value()) << b.gpu << " " << name << ": no room for " << p->name
                                     << " in " << describe(g, space.layout(s));
          s = c->next;
        }
        EXPECT_EQ(space.layout(s).instances.size(), wanted.size()) << b.gpu << " " << name;
        ++placed;
      }
    }
    // all-1g, all-1g+me, all-1g (two memory slices), all-2g, all-3g, all-4g, all-7g, balanced.
    EXPECT_EQ(placed, 8) << b.gpu;
  }
}

}  // namespace
}  // namespace tessera::mig
