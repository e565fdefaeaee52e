#pragma once
// MIG layouts as a state machine (MIGM §3.3): a state is a set of placed GPU instances, a
// transition creates or destroys one. Every valid state of a GPU is enumerated once, up front,
// with its reachability score fcr(s): how many fully configured layouts (states to which no
// instance can be added) are still reachable from s by creating instances. Placing a new instance
// where fcr stays highest keeps the most future layouts open.
//
// A layout is valid when its instances' memory slices do not overlap, each starts at one of its
// profile's placement starts, their compute slices add up to at most 7, no profile exceeds its
// instance limit, and at most one instance holds the media extensions.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/hw/mig_profiles.hpp"

namespace tessera::mig {

struct Placement {
  int profile_id = 0;
  int start = 0;  // first memory slice
  auto operator<=>(const Placement&) const = default;
};

// Instances ascending by (start, profile_id).
struct Layout {
  std::vector<Placement> instances;
  bool operator==(const Layout&) const = default;
};

// "2g.10gb@0 + 3g.20gb@4" (empty: "empty"), ascending by start.
std::string describe(const hw::MigGeometry& g, const Layout& layout);

// Checks one layout against the rules above (hw::check_mig_layout); the error names the
// instance at fault.
core::Status check_layout(const hw::MigGeometry& g, const Layout& layout);

using StateId = std::uint32_t;

class LayoutSpace {
 public:
  // Enumerates every valid layout of `g` built from `profile_ids` (empty: every profile without
  // media extensions, the ones a job scheduler hands out), scores each and precomputes the
  // create transitions. Unknown profile IDs are an error.
  static core::Result<LayoutSpace> build(const hw::MigGeometry& g,
                                         std::vector<int> profile_ids = {});

  const hw::MigGeometry& geometry() const { return geometry_; }
  const std::vector<int>& profile_ids() const { return profile_ids_; }

  std::size_t size() const { return layouts_.size(); }
  const Layout& layout(StateId s) const { return layouts_[s]; }
  std::optional<StateId> find(const Layout& layout) const;
  StateId empty_state() const { return empty_; }

  // No instance of any of the space's profiles can be added.
  bool is_full(StateId s) const;
  std::int64_t fcr(StateId s) const;
  // The fully configured states, ascending by id.
  std::vector<StateId> full_states() const;

  // The state after creating / destroying one instance; nullopt if the result is not a valid
  // state of this space (or the instance is absent, for destroy).
  std::optional<StateId> after_create(StateId s, Placement p) const;
  std::optional<StateId> after_destroy(StateId s, Placement p) const;

 private:
  LayoutSpace() = default;

  hw::MigGeometry geometry_;
  std::vector<int> profile_ids_;
  std::vector<Layout> layouts_;
  std::vector<std::int64_t> fcr_;
  std::vector<bool> full_;
  StateId empty_ = 0;
  // Implementation detail (owned by layout_space.cpp): a compact key per state for find() and
  // the create transitions.
  std::vector<std::uint64_t> keys_;
  std::vector<std::vector<std::pair<Placement, StateId>>> creates_;
};

// Where a new instance of `profile_id` goes in state `s`: of the starts where it fits, the one
// whose resulting state has the highest fcr; ties go to the highest start, which keeps the low
// slices, where the larger profiles must start, free. nullopt when it fits nowhere.
struct PlacementChoice {
  Placement placement;
  StateId next = 0;
  std::int64_t fcr = 0;
};
std::optional<PlacementChoice> choose_placement(const LayoutSpace& space, StateId s,
                                                int profile_id);

}  // namespace tessera::mig
