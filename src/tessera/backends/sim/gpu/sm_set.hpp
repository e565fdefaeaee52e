#pragma once
// The simulator's own SM set: four 64-bit words, with the two operations its block scheduler does
// on every kernel start (count what is free in a mask, take the lowest k of those) done word by
// word. device::SmMask is the interface type; it is converted once, when a stream is configured.

#include <array>
#include <bit>
#include <cstdint>

#include "tessera/device/sm_mask.hpp"

namespace tessera::sim {

class SmSet {
 public:
  static constexpr int kWords = device::kMaxSms / 64;

  SmSet() = default;
  // SMs [0, n).
  static SmSet first(int n) {
    SmSet s;
    for (int w = 0; w < kWords && n > 0; ++w, n -= 64) {
      s.words_[w] = n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
    }
    return s;
  }
  static SmSet from_mask(const device::SmMask& mask) {
    SmSet s;
    for (int w = 0; w < kWords; ++w) s.words_[w] = mask.word(w);
    return s;
  }

  int count() const {
    int c = 0;
    for (auto w : words_) c += popcount(w);
    return c;
  }
  bool none() const { return (words_[0] | words_[1] | words_[2] | words_[3]) == 0; }
  bool overlaps(const SmSet& o) const { return !(*this & o).none(); }
  bool contains(const SmSet& o) const { return (o & ~*this).none(); }
  bool test(int i) const { return (words_[i / 64] >> (i % 64) & 1) != 0; }
  // The lowest SM of the set; -1 when it is empty.
  int first_index() const {
    for (int w = 0; w < kWords; ++w) {
      if (words_[w] != 0) return w * 64 + std::countr_zero(words_[w]);
    }
    return -1;
  }

  // The lowest `k` SMs of this set (all of them if it has fewer).
  SmSet lowest(int k) const {
    int taken = 0;
    return lowest(k, taken);
  }
  // The same, also counting the SMs taken (saves a count() when the set may have fewer than k).
  SmSet lowest(int k, int& taken) const {
    SmSet out;
    taken = 0;
    for (int w = 0; w < kWords && k > 0; ++w) {
      const std::uint64_t word = words_[w];
      const int c = popcount(word);
      if (c <= k) {
        out.words_[w] = word;
        k -= c;
        taken += c;
        continue;
      }
      taken += k;
      out.words_[w] = word & below(select(word, k));
      k = 0;
    }
    return out;
  }

  SmSet operator&(const SmSet& o) const {
    SmSet s;
    for (int w = 0; w < kWords; ++w) s.words_[w] = words_[w] & o.words_[w];
    return s;
  }
  SmSet operator|(const SmSet& o) const {
    SmSet s;
    for (int w = 0; w < kWords; ++w) s.words_[w] = words_[w] | o.words_[w];
    return s;
  }
  SmSet operator~() const {
    SmSet s;
    for (int w = 0; w < kWords; ++w) s.words_[w] = ~words_[w];
    return s;
  }
  SmSet& operator|=(const SmSet& o) { return *this = *this | o; }
  SmSet& operator&=(const SmSet& o) { return *this = *this & o; }

 private:
  // std::popcount compiles to a library call unless the build targets a CPU with POPCNT, and
  // Debian's baseline does not; the scheduler counts SMs on every kernel start, so the
  // instruction is used when the CPU has it (every x86-64 since 2008) and bit slicing otherwise.
  static int popcount(std::uint64_t x) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (kHasPopcnt) {
      std::uint64_t n;
      asm("popcntq %1, %0" : "=r"(n) : "rm"(x));
      return static_cast<int>(n);
    }
#endif
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
  }
#if defined(__x86_64__) && defined(__GNUC__)
  static inline const bool kHasPopcnt = (__builtin_cpu_init(), __builtin_cpu_supports("popcnt"));
#endif

  // Bits [0, n) for n in [0, 64).
  static std::uint64_t below(int n) {
    return (std::uint64_t{1} << n) - 1;
  }
  // The fewest low bits of `word` that hold `k` of its set bits, for 0 < k < popcount(word):
  // the k-th set bit's position plus one, found bit by bit for small k and by a binary search on
  // the count below a bit position (six steps) otherwise.
  static int select(std::uint64_t word, int k) {
    constexpr int kFewBits = 4;
    if (k <= kFewBits) {
      for (; k > 1; --k) word &= word - 1;  // clears the lowest set bit
      return std::countr_zero(word) + 1;
    }
    int lo = 0;   // popcount(word & below(lo)) < k
    int hi = 64;  // popcount(word & below(hi)) >= k, taking below(64) as every bit
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      if (popcount(word & below(mid)) >= k) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return hi;
  }

  std::array<std::uint64_t, kWords> words_{};
};

static_assert(device::kMaxSms % 64 == 0, "SmSet stores whole 64-bit words");

}  // namespace tessera::sim
