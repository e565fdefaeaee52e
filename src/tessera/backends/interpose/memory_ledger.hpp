#pragma once
// A tenant's device memory as the interposer counts it: every allocation the driver made for the
// process through a wrapped entry point, against the tenant's limit. An allocation that would pass
// the limit is refused before it reaches the driver, and cuMemGetInfo answers with the limit and
// the use, so an allocator that sizes itself from it (vLLM's gpu_memory_utilization, PyTorch's
// caching allocator) stays inside. Thread-safe. libc and the C++ library only: the interposer
// links nothing else, and the tests build it without a CUDA toolkit.

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace tessera::interpose {

// A byte count: a whole number with an optional unit, B, KB, MB, GB, TB (powers of 1000) or KiB,
// MiB, GiB, TiB (powers of 1024), e.g. "20GiB", "512MiB", "1000000". False when `text` is not
// one, is 0, or does not fit in 64 bits.
bool parse_bytes(const char* text, std::uint64_t& out);

// What names an allocation: a device address (cuMemAlloc, cuMemAllocAsync) or a physical
// allocation's handle (cuMemCreate), two spaces of numbers that may overlap.
enum class Named { kAddress, kHandle };

class MemoryLedger {
 public:
  // `limit` 0: no limit, the ledger only counts.
  explicit MemoryLedger(std::uint64_t limit) : limit_(limit) {}

  std::uint64_t limit() const;
  // A new limit (0: none) for the allocations from now on. Use above it stays held: later
  // allocations are refused until frees bring the use under it.
  void set_limit(std::uint64_t limit);
  // Holds `bytes` for an allocation about to be made; false, holding nothing, when the tenant's
  // use would pass its limit.
  bool reserve(std::uint64_t bytes);
  // The driver made the reserved allocation, named `name`: the reservation becomes use. A driver
  // may round an allocation up (a pitched one's rows): `actual` bytes are then held, even past
  // the limit by that rounding.
  void commit(Named kind, std::uint64_t name, std::uint64_t reserved, std::uint64_t actual);
  // The driver failed the reserved allocation: the bytes are given back.
  void cancel(std::uint64_t bytes);
  // `name` was freed: the bytes it held, or 0 for one the ledger never saw (allocated before the
  // interposer was loaded, or through an entry point it does not wrap).
  std::uint64_t release(Named kind, std::uint64_t name);

  struct Info {
    std::uint64_t free;
    std::uint64_t total;
  };
  // What cuMemGetInfo tells the tenant, given the device's own answer: with a limit, the limit as
  // the total and what is left of it as free (no more than the device has free); without one,
  // the device's answer.
  Info info(std::uint64_t device_free, std::uint64_t device_total) const;

  struct Totals {
    std::uint64_t used = 0;  // bytes held, reservations in flight included
    std::uint64_t peak = 0;
    std::uint64_t allocations = 0;  // committed
    std::uint64_t refused = 0;      // reservations past the limit
    std::uint64_t untracked_frees = 0;
  };
  Totals totals() const;

 private:
  mutable std::mutex mutex_;
  std::uint64_t limit_;
  Totals totals_;
  std::unordered_map<std::uint64_t, std::uint64_t> sizes_[2];  // by name, per Named
};

}  // namespace tessera::interpose
