#pragma once
// Who runs where on a GPU's TPCs now: the state TpcScheduler decides from, kept as sets so that a
// decision, a launch and a finished piece cost a few word operations each instead of a pass over
// every TPC.
//
// A tenant has at most one piece in flight (the scheduler's rule), so its TPCs share that piece's
// predicted end: the per-TPC timers of LithOS are one timer per tenant here. A TPC runs at most
// one tenant's piece as far as scheduling goes: the last launched there. An owner that takes a TPC
// back launches at once, and the borrowed atom still running there finishes beside it; when the
// owner's piece ends first, the TPC goes back to that atom until it ends.

#include <bitset>
#include <cstddef>
#include <vector>

#include "tessera/core/time.hpp"
#include "tessera/device/sm_mask.hpp"

namespace tessera::gpu {

inline constexpr int kMaxTpcs = device::kMaxSms;  // a TPC has at least one SM
using TpcSet = std::bitset<kMaxTpcs>;
inline constexpr int kNoTenant = -1;
// A piece's end when its duration could not be predicted.
inline constexpr core::Nanos kUnknownEnd = -1;

// The TPCs of a set in ascending order: for (int j = first_tpc(s); j < kMaxTpcs; j = next_tpc(s,
// j)). libstdc++'s bitset scans a word at a time, where testing each of 256 bits costs an iteration
// per bit.
inline int first_tpc(const TpcSet& set) {
  return static_cast<int>(set._Find_first());
}
inline int next_tpc(const TpcSet& set, int tpc) {
  return static_cast<int>(set._Find_next(static_cast<std::size_t>(tpc)));
}

// The lowest `n` TPCs of `set` (all of it if it has fewer), a word at a time; `last` is set to
// the highest of them (-1 when none).
TpcSet lowest_tpcs(const TpcSet& set, int n, int& last);
inline TpcSet lowest_tpcs(const TpcSet& set, int n) {
  int last = 0;
  return lowest_tpcs(set, n, last);
}

class TpcBoard {
 public:
  TpcBoard() = default;
  TpcBoard(int tpcs, std::size_t tenants);

  int tpcs() const { return tpcs_; }
  std::size_t tenants() const { return pieces_.size(); }

  // `tenant`'s piece starts on `tpcs` (TPCs past the GPU's are ignored), predicted to end at
  // `until` (kUnknownEnd: unknown). Tenants that ran there lose those TPCs to it.
  void launch(std::size_t tenant, const TpcSet& tpcs, core::Nanos until);
  // `tenant`'s piece ended. Each TPC it ran goes to the first other tenant (by index) whose piece
  // in flight also holds it, or is free.
  void finish(std::size_t tenant);

  const TpcSet& free() const { return free_; }
  const TpcSet& busy() const { return busy_; }
  // The TPCs whose running piece is `tenant`'s.
  const TpcSet& running(std::size_t tenant) const { return running_[tenant]; }
  // When `tenant`'s piece in flight is predicted to end (kUnknownEnd: unknown); meaningful while
  // running(tenant) is not empty.
  core::Nanos until(std::size_t tenant) const { return until_[tenant]; }
  // The tenant whose piece runs on `tpc`, or kNoTenant.
  int runner(int tpc) const;

 private:
  int tpcs_ = 0;
  TpcSet free_;
  TpcSet busy_;
  std::vector<TpcSet> pieces_;   // per tenant: every TPC of its piece in flight
  std::vector<TpcSet> running_;  // per tenant: those not taken over by a later launch
  std::vector<core::Nanos> until_;
};

}  // namespace tessera::gpu
