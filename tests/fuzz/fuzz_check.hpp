#pragma once
// A broken invariant must stop the fuzzer with a crash it records, in every build mode (assert
// is compiled out under NDEBUG).

namespace tessera::fuzz {

inline void require(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace tessera::fuzz
