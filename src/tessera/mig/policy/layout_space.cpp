#include "tessera/mig/policy/layout_space.hpp"

#include <algorithm>
#include <string>

namespace tessera::mig {

namespace {

// A state's key holds, for each memory slice, which profile starts there: 4 bits per slice,
// 0 for none, else 1 + the profile's index in the geometry. Instances never share a first
// memory slice, so the key names the state exactly.
constexpr int kBitsPerSlice = 4;
constexpr std::uint64_t kSliceMask = 0xF;

std::uint64_t nibble(int profile_index, int start) {
  return static_cast<std::uint64_t>(profile_index + 1) << (kBitsPerSlice * start);
}

int index_of(const hw::MigGeometry& g, int profile_id) {
  for (std::size_t i = 0; i < g.profiles.size(); ++i) {
    if (g.profiles[i].id == profile_id) return static_cast<int>(i);
  }
  return -1;
}

std::optional<StateId> lookup(const std::vector<std::uint64_t>& keys, std::uint64_t key) {
  auto it = std::ranges::lower_bound(keys, key);
  if (it == keys.end() || *it != key) return std::nullopt;
  return static_cast<StateId>(it - keys.begin());
}

// One (profile, start) the enumeration may place, with what it uses.
struct Candidate {
  Placement placement;
  int profile_index = 0;
  unsigned memory_mask = 0;
  int compute = 0;
  int max_instances = 0;
  bool media = false;
};

// Depth-first over the candidates in canonical order (profile, then start): each valid subset
// is reached once, by adding candidates in increasing index.
struct Enumerator {
  explicit Enumerator(const std::vector<Candidate>& c) : candidates(c) {}

  const std::vector<Candidate>& candidates;
  std::vector<std::pair<std::uint64_t, Layout>> found;
  std::vector<Placement> current;
  std::vector<int> per_profile = std::vector<int>(16, 0);
  unsigned memory = 0;
  int compute = 0;
  int media = 0;
  std::uint64_t key = 0;

  void run(std::size_t first) {
    Layout layout{current};
    std::ranges::sort(layout.instances, [](const Placement& a, const Placement& b) {
      return std::pair(a.start, a.profile_id) < std::pair(b.start, b.profile_id);
    });
    found.emplace_back(key, std::move(layout));
    for (std::size_t i = first; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      if ((memory & c.memory_mask) != 0 || compute + c.compute > hw::kMigComputeSlices ||
          per_profile[c.profile_index] >= c.max_instances || (c.media && media > 0)) {
        continue;
      }
      memory |= c.memory_mask;
      compute += c.compute;
      ++per_profile[c.profile_index];
      media += c.media ? 1 : 0;
      key |= nibble(c.profile_index, c.placement.start);
      current.push_back(c.placement);
      run(i + 1);
      current.pop_back();
      key &= ~nibble(c.profile_index, c.placement.start);
      media -= c.media ? 1 : 0;
      --per_profile[c.profile_index];
      compute -= c.compute;
      memory &= ~c.memory_mask;
    }
  }
};

}  // namespace

std::string describe(const hw::MigGeometry& g, const Layout& layout) {
  if (layout.instances.empty()) return "empty";
  std::vector<Placement> sorted = layout.instances;
  std::ranges::sort(sorted, [](const Placement& a, const Placement& b) {
    return std::pair(a.start, a.profile_id) < std::pair(b.start, b.profile_id);
  });
  std::string out;
  for (const Placement& p : sorted) {
    const hw::MigProfile* profile = g.find(p.profile_id);
    std::string name = profile ? profile->name : fmt::format("profile {}", p.profile_id);
    out += fmt::format("{}{}@{}", out.empty() ? "" : " + ", name, p.start);
  }
  return out;
}

core::Status check_layout(const hw::MigGeometry& g, const Layout& layout) {
  std::vector<hw::MigSlot> slots;
  slots.reserve(layout.instances.size());
  for (const Placement& p : layout.instances) slots.push_back({p.profile_id, p.start});
  return hw::check_mig_layout(g, slots);
}

core::Result<LayoutSpace> LayoutSpace::build(const hw::MigGeometry& g,
                                             std::vector<int> profile_ids) {
  if (g.profiles.size() >= kSliceMask) {
    return core::failf(core::Domain::kMig, core::Code::kUnsupported,
                       "{} has {} MIG profiles; a layout key holds at most {}", g.gpu,
                       g.profiles.size(), kSliceMask - 1);
  }
  LayoutSpace space;
  space.geometry_ = g;
  std::vector<bool> wanted(g.profiles.size(), profile_ids.empty());
  if (profile_ids.empty()) {
    for (std::size_t i = 0; i < g.profiles.size(); ++i) wanted[i] = !g.profiles[i].media_extensions;
  }
  for (int id : profile_ids) {
    const int i = index_of(g, id);
    if (i < 0) {
      std::string known;
      for (const hw::MigProfile& p : g.profiles) {
        known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", p.name, p.id);
      }
      return core::failf(core::Domain::kMig, core::Code::kNotFound,
                         "{} has no MIG profile ID {}; its profiles: {}", g.gpu, id, known);
    }
    wanted[i] = true;
  }

  std::vector<Candidate> candidates;
  for (std::size_t i = 0; i < g.profiles.size(); ++i) {
    if (!wanted[i]) continue;
    const hw::MigProfile& p = g.profiles[i];
    space.profile_ids_.push_back(p.id);
    for (int start : p.placement_starts) {
      if (start < 0 || start + p.memory_slices > hw::kMigMemorySlices) {
        return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                           "{}: {} starts at memory slice {} and does not fit in {}", g.gpu, p.name,
                           start, hw::kMigMemorySlices);
      }
      candidates.push_back(Candidate{
          .placement = {p.id, start},
          .profile_index = static_cast<int>(i),
          .memory_mask = ((1u << p.memory_slices) - 1u) << start,
          .compute = p.compute_slices,
          .max_instances = p.max_instances,
          .media = p.media_extensions,
      });
    }
  }

  Enumerator e(candidates);
  e.run(0);
  std::ranges::sort(e.found, {}, &std::pair<std::uint64_t, Layout>::first);
  // Each subset is visited once; a repeated key would mean two layouts share one encoding.
  if (std::ranges::adjacent_find(e.found, {}, &std::pair<std::uint64_t, Layout>::first) !=
      e.found.end()) {
    return core::failf(core::Domain::kMig, core::Code::kInternal, "{}: two layouts share one key",
                       g.gpu);
  }
  space.keys_.reserve(e.found.size());
  space.layouts_.reserve(e.found.size());
  for (auto& [key, layout] : e.found) {
    space.keys_.push_back(key);
    space.layouts_.push_back(std::move(layout));
  }
  space.empty_ = 0;  // key 0, the smallest

  const std::size_t n = space.keys_.size();
  space.creates_.assign(n, {});
  space.full_.assign(n, false);
  for (std::size_t s = 0; s < n; ++s) {
    const std::uint64_t key = space.keys_[s];
    for (const Candidate& c : candidates) {
      if (((key >> (kBitsPerSlice * c.placement.start)) & kSliceMask) != 0) continue;
      if (auto next = lookup(space.keys_, key | nibble(c.profile_index, c.placement.start))) {
        space.creates_[s].emplace_back(c.placement, *next);
      }
    }
    space.full_[s] = space.creates_[s].empty();
  }

  // fcr(s) counts the full states that contain s. Every rule is monotone (dropping instances
  // keeps a layout valid), so each such full state is reachable from s by creates, and each
  // subset of a full state is a state: adding 1 to every subset of every full state counts each
  // (state, full superset) pair exactly once.
  space.fcr_.assign(n, 0);
  for (std::size_t f = 0; f < n; ++f) {
    if (!space.full_[f]) continue;
    std::vector<std::uint64_t> parts;
    for (int slice = 0; slice < hw::kMigMemorySlices; ++slice) {
      const std::uint64_t part = space.keys_[f] & (kSliceMask << (kBitsPerSlice * slice));
      if (part != 0) parts.push_back(part);
    }
    for (unsigned subset = 0; subset < (1u << parts.size()); ++subset) {
      std::uint64_t key = 0;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        if ((subset >> i) & 1u) key |= parts[i];
      }
      auto id = lookup(space.keys_, key);
      if (!id) {
        return core::failf(core::Domain::kMig, core::Code::kInternal,
                           "{}: a part of the full layout {} is not a state", g.gpu,
                           describe(g, space.layouts_[f]));
      }
      ++space.fcr_[*id];
    }
  }
  return space;
}

std::optional<StateId> LayoutSpace::find(const Layout& layout) const {
  std::uint64_t key = 0;
  for (const Placement& p : layout.instances) {
    const int i = index_of(geometry_, p.profile_id);
    if (i < 0 || p.start < 0 || p.start >= hw::kMigMemorySlices) return std::nullopt;
    if (((key >> (kBitsPerSlice * p.start)) & kSliceMask) != 0) return std::nullopt;
    key |= nibble(i, p.start);
  }
  return lookup(keys_, key);
}

bool LayoutSpace::is_full(StateId s) const {
  return full_[s];
}

std::int64_t LayoutSpace::fcr(StateId s) const {
  return fcr_[s];
}

std::vector<StateId> LayoutSpace::full_states() const {
  std::vector<StateId> out;
  for (std::size_t s = 0; s < full_.size(); ++s) {
    if (full_[s]) out.push_back(static_cast<StateId>(s));
  }
  return out;
}

std::optional<StateId> LayoutSpace::after_create(StateId s, Placement p) const {
  for (const auto& [placement, next] : creates_[s]) {
    if (placement == p) return next;
  }
  return std::nullopt;
}

std::optional<StateId> LayoutSpace::after_destroy(StateId s, Placement p) const {
  const int i = index_of(geometry_, p.profile_id);
  if (i < 0 || p.start < 0 || p.start >= hw::kMigMemorySlices) return std::nullopt;
  const std::uint64_t part = nibble(i, p.start);
  if ((keys_[s] & (kSliceMask << (kBitsPerSlice * p.start))) != part) return std::nullopt;
  return lookup(keys_, keys_[s] & ~part);
}

std::optional<PlacementChoice> choose_placement(const LayoutSpace& space, StateId s,
                                                int profile_id) {
  const hw::MigProfile* profile = space.geometry().find(profile_id);
  if (profile == nullptr) return std::nullopt;
  std::optional<PlacementChoice> best;
  for (int start : profile->placement_starts) {
    const Placement p{profile_id, start};
    auto next = space.after_create(s, p);
    if (!next) continue;
    const std::int64_t score = space.fcr(*next);
    // Starts ascend, so ">=" hands ties to the highest start.
    if (!best || score >= best->fcr) best = PlacementChoice{p, *next, score};
  }
  return best;
}

}  // namespace tessera::mig
