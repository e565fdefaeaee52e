#include "tessera/gpu/policy/tpc_board.hpp"

namespace tessera::gpu {

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
