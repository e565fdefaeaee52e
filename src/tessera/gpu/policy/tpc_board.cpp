#include "tessera/gpu/policy/tpc_board.hpp"

#include <bit>
#include <cstdint>

namespace tessera::gpu {

TpcSet lowest_tpcs(const TpcSet& set, int n, int& last) {
  constexpr std::size_t kBits = 64;
  const TpcSet low_word(~std::uint64_t{0});
  TpcSet out;
  last = -1;
  for (std::size_t w = 0; w < kMaxTpcs / kBits && n > 0; ++w) {
    std::uint64_t word = ((set >> (w * kBits)) & low_word).to_ullong();
    if (word == 0) continue;
    if (std::popcount(word) > n) {
      std::uint64_t keep = 0;
      for (; n > 0; --n) {
        const std::uint64_t lowest = word & (~word + 1);
        keep |= lowest;
        word ^= lowest;
      }
      word = keep;
    } else {
      n -= std::popcount(word);
    }
    out |= TpcSet(word) << (w * kBits);
    last = static_cast<int>(w * kBits) + 63 - std::countl_zero(word);
  }
  return out;
}

TpcBoard::TpcBoard(int tpcs, std::size_t tenants)
    : tpcs_(tpcs), pieces_(tenants), running_(tenants), until_(tenants, kUnknownEnd) {
  for (int j = 0; j < tpcs && j < kMaxTpcs; ++j) free_.set(static_cast<std::size_t>(j));
}

void TpcBoard::launch(std::size_t tenant, const TpcSet& tpcs, core::Nanos until) {
  const TpcSet on = tpcs & (free_ | busy_);
  for (std::size_t r = 0; r < running_.size(); ++r) {
    if (r != tenant) running_[r] &= ~on;
  }
  running_[tenant] |= on;
  pieces_[tenant] = on;
  until_[tenant] = until;
  free_ &= ~on;
  busy_ |= on;
}

void TpcBoard::finish(std::size_t tenant) {
  TpcSet left = running_[tenant];
  running_[tenant].reset();
  pieces_[tenant].reset();
  for (std::size_t b = 0; b < running_.size() && left.any(); ++b) {
    const TpcSet back = left & pieces_[b];
    running_[b] |= back;
    left &= ~back;
  }
  busy_ &= ~left;
  free_ |= left;
}

int TpcBoard::runner(int tpc) const {
  const auto j = static_cast<std::size_t>(tpc);
  for (std::size_t r = 0; r < running_.size(); ++r) {
    if (running_[r].test(j)) return static_cast<int>(r);
  }
  return kNoTenant;
}

}  // namespace tessera::gpu
