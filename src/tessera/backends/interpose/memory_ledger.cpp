#include "memory_ledger.hpp"

#include <algorithm>
#include <cstring>

namespace tessera::interpose {

bool parse_bytes(const char* text, std::uint64_t& out) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  std::uint64_t n = 0;
  const char* p = text;
  for (; *p >= '0' && *p <= '9'; ++p) {
    const std::uint64_t digit = static_cast<std::uint64_t>(*p - '0');
    if (n > (UINT64_MAX - digit) / 10) return false;
    n = n * 10 + digit;
  }
  struct Unit {
    const char* name;
    std::uint64_t bytes;
  };
  static constexpr Unit kUnits[] = {
      {"", 1},
      {"B", 1},
      {"KB", 1000},
      {"MB", 1000 * 1000},
      {"GB", 1000 * 1000 * 1000},
      {"TB", 1000ULL * 1000 * 1000 * 1000},
      {"KiB", 1ULL << 10},
      {"MiB", 1ULL << 20},
      {"GiB", 1ULL << 30},
      {"TiB", 1ULL << 40},
  };
  for (const Unit& u : kUnits) {
    if (std::strcmp(p, u.name) != 0) continue;
    if (n == 0 || n > UINT64_MAX / u.bytes) return false;
    out = n * u.bytes;
    return true;
  }
  return false;
}

std::uint64_t MemoryLedger::limit() const {
  std::lock_guard lock(mutex_);
  return limit_;
}

void MemoryLedger::set_limit(std::uint64_t limit) {
  std::lock_guard lock(mutex_);
  limit_ = limit;
}

bool MemoryLedger::reserve(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (limit_ > 0 && (bytes > limit_ || totals_.used > limit_ - bytes)) {
    ++totals_.refused;
    return false;
  }
  totals_.used += bytes;
  totals_.peak = std::max(totals_.peak, totals_.used);
  return true;
}

void MemoryLedger::commit(Named kind, std::uint64_t name, std::uint64_t reserved,
                          std::uint64_t actual) {
  std::lock_guard lock(mutex_);
  ++totals_.allocations;
  totals_.used = totals_.used - std::min(reserved, totals_.used) + actual;
  totals_.peak = std::max(totals_.peak, totals_.used);
  // A driver never hands out a live name twice; if it did, the older entry's bytes are released
  // rather than counted twice.
  auto [it, fresh] = sizes_[static_cast<int>(kind)].try_emplace(name, actual);
  if (!fresh) {
    totals_.used -= std::min(it->second, totals_.used);
    it->second = actual;
  }
}

void MemoryLedger::cancel(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  totals_.used -= std::min(bytes, totals_.used);
}

std::uint64_t MemoryLedger::release(Named kind, std::uint64_t name) {
  std::lock_guard lock(mutex_);
  auto& sizes = sizes_[static_cast<int>(kind)];
  const auto it = sizes.find(name);
  if (it == sizes.end()) {
    ++totals_.untracked_frees;
    return 0;
  }
  const std::uint64_t bytes = it->second;
  totals_.used -= std::min(bytes, totals_.used);
  sizes.erase(it);
  return bytes;
}

MemoryLedger::Info MemoryLedger::info(std::uint64_t device_free, std::uint64_t device_total) const {
  if (limit_ == 0) return {device_free, device_total};
  std::lock_guard lock(mutex_);
  const std::uint64_t left = limit_ > totals_.used ? limit_ - totals_.used : 0;
  return {std::min(left, device_free), limit_};
}

MemoryLedger::Totals MemoryLedger::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

}  // namespace tessera::interpose
