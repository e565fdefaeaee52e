#pragma once
// A set of SMs a launch may use. Partitions, TPC masks and MIG slices all reduce to this.

#include <bitset>
#include <cstddef>
#include <cstdint>

namespace tessera::device {

inline constexpr int kMaxSms = 256;

class SmMask {
 public:
  SmMask() = default;
  static SmMask first(int n);               // SMs [0, n)
  static SmMask range(int begin, int end);  // SMs [begin, end)

  bool test(int sm) const { return bits_.test(static_cast<std::size_t>(sm)); }
  void set(int sm) { bits_.set(static_cast<std::size_t>(sm)); }
  void reset(int sm) { bits_.reset(static_cast<std::size_t>(sm)); }
  int count() const { return static_cast<int>(bits_.count()); }
  bool empty() const { return bits_.none(); }
  bool overlaps(const SmMask& o) const { return (bits_ & o.bits_).any(); }
  // The lowest SM in the set at or above `sm`; kMaxSms when there is none.
  int first_from(int sm) const {
    if (sm <= 0) return static_cast<int>(bits_._Find_first());
    return static_cast<int>(bits_._Find_next(static_cast<std::size_t>(sm - 1)));
  }
  // SMs [64 w, 64 w + 64) as a word, SM 64 w in its lowest bit; w in [0, kMaxSms / 64).
  std::uint64_t word(int w) const {
    return ((bits_ >> (64 * static_cast<std::size_t>(w))) & std::bitset<kMaxSms>(~0ULL))
        .to_ullong();
  }

  SmMask operator&(const SmMask& o) const { return SmMask(bits_ & o.bits_); }
  SmMask operator|(const SmMask& o) const { return SmMask(bits_ | o.bits_); }
  bool operator==(const SmMask& o) const = default;

 private:
  explicit SmMask(std::bitset<kMaxSms> b) : bits_(b) {}
  std::bitset<kMaxSms> bits_;
};

inline SmMask SmMask::first(int n) {
  return range(0, n);
}
inline SmMask SmMask::range(int begin, int end) {
  if (begin < 0) begin = 0;
  if (end > kMaxSms) end = kMaxSms;
  if (begin >= end) return SmMask();
  const std::size_t width = static_cast<std::size_t>(end - begin);
  return SmMask((~std::bitset<kMaxSms>() >> (kMaxSms - width)) << static_cast<std::size_t>(begin));
}

}  // namespace tessera::device
