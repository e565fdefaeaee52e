#pragma once
// A set of SMs a launch may use. Partitions, TPC masks and MIG slices all reduce to this.

#include <bitset>
#include <cstddef>

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
  SmMask m;
  for (int i = begin; i < end; ++i) m.set(i);
  return m;
}

}  // namespace tessera::device
