#include "tessera/gpu/policy/atomizer.hpp"

#include <algorithm>

#include "tessera/device/occupancy.hpp"

namespace tessera::gpu {

std::int64_t wave_blocks(const hw::GpuSpec& spec, const workload::Kernel& kernel, int tpcs) {
  const std::int64_t per_sm = device::blocks_per_sm(spec.sm, kernel.block);
  return std::max<std::int64_t>(1, std::int64_t{tpcs} * spec.sms_per_tpc * per_sm);
}

Atom next_atom(const hw::GpuSpec& spec, const AtomRequest& request) {
  const workload::Kernel& kernel = *request.kernel;
  const std::int64_t begin = request.next_block;
  const device::BlockRange rest{.begin = begin, .end = kernel.blocks};
  if (!kernel.block_independent) {
    // Grid-wide synchronisation or cross-block reductions: a block range of such a kernel would
    // deadlock or compute something else, so it always runs as one launch.
    return Atom{.range = rest, .reason = AtomReason::kNotSplittable, .predicted = std::nullopt};
  }
  if (!request.whole_latency) {
    // Launched whole the first time: the run gives the profile that sizes later atoms.
    return Atom{.range = rest, .reason = AtomReason::kUnknownLatency, .predicted = std::nullopt};
  }
  const std::int64_t wave = wave_blocks(spec, kernel, request.tpcs);
  const std::int64_t grid_waves = (kernel.blocks + wave - 1) / wave;
  const double per_wave =
      static_cast<double>(*request.whole_latency) / static_cast<double>(grid_waves);
  const std::int64_t fit =
      per_wave > 0 ? static_cast<std::int64_t>(static_cast<double>(request.target) / per_wave)
                   : grid_waves;
  const std::int64_t waves = std::clamp<std::int64_t>(fit, 1, grid_waves);
  const std::int64_t end = std::min(kernel.blocks, begin + waves * wave);
  const std::int64_t run_waves = (end - begin + wave - 1) / wave;
  return Atom{.range = {.begin = begin, .end = end},
              .reason = end == kernel.blocks ? AtomReason::kRestFits : AtomReason::kSplit,
              .predicted = core::round_to_nanos(per_wave * static_cast<double>(run_waves))};
}

}  // namespace tessera::gpu
