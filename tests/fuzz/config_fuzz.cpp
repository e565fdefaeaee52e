// libFuzzer target for the config loader: arbitrary bytes go to ConfigNode::parse, and whatever
// parses is walked with every accessor. Library code must return errors, never crash, throw or
// hang; the walk also checks a few invariants (has agrees with find, errors say where they are).
//
// Build (clang 19+: clang 14 cannot compile libstdc++'s std::expected):
//   apt-get install clang-19 libclang-rt-19-dev
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DTESSERA_BUILD_FUZZ=ON
//   cmake --build build-fuzz --target tessera_config_fuzz
// Run for 60 s from the example scenarios, keeping what it learns in a scratch corpus:
//   mkdir -p /tmp/config-corpus
//   build-fuzz/tests/fuzz/tessera_config_fuzz -max_total_time=60 -max_len=4096 \
//       /tmp/config-corpus examples
// A crash leaves crash-<hash> in the working directory; rerun it with the file as the argument.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "tessera/core/config.hpp"

namespace {

using tessera::fuzz::require;

using tessera::core::ConfigNode;

// Aliases make a document a graph whose unfolding can be exponential ("billion laughs"); the
// bounds keep the walk finite. Consumers read a fixed schema, so they never unfold it all.
constexpr int kMaxDepth = 48;
constexpr int kMaxVisits = 2'000;
constexpr std::string_view kSource = "fuzz.yaml";

// Every error a node reports must start with its location.
template <typename R>
void check_located(const R& r) {
  if (!r) require(r.error().message().starts_with(kSource));
}

void walk(const ConfigNode& n, int depth, int& visits) {
  if (depth > kMaxDepth || ++visits > kMaxVisits) return;
  require(n.source() == kSource);
  require(n.line() >= 0 && n.column() >= 0);
  (void)n.path();

  check_located(n.as_string());
  check_located(n.as_double());
  check_located(n.as_int());
  check_located(n.as_bool());
  check_located(n.as_duration());
  check_located(n.items());
  check_located(n.at("name"));
  check_located(n.check_keys({"name", "gpu", "tenants"}));
  check_located(n.string_or("name", "x"));
  check_located(n.double_or("rate", 1.0));
  check_located(n.int_or("seed", 1));
  check_located(n.bool_or("enabled", false));
  check_located(n.duration_or("duration", 0));
  require(n.error("fuzz").message().starts_with(kSource));
  require(n.has("name") == n.find("name").has_value());
  if (n.is_scalar()) {
    const std::string text = n.as_string().value();
    (void)tessera::core::parse_duration(text);
  }

  for (const std::string& key : n.keys()) {
    require(n.is_map());
    require(n.has(key) == n.find(key).has_value());
    if (auto child = n.find(key)) {
      require(n.at(key).has_value());
      walk(*child, depth + 1, visits);
    }
  }
  if (auto items = n.items()) {
    require(n.is_sequence());
    for (const ConfigNode& item : *items) walk(item, depth + 1, visits);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)tessera::core::parse_duration(text);
  auto root = ConfigNode::parse(text, std::string(kSource));
  if (!root) {
    require(root.error().message().starts_with(kSource));
    return 0;
  }
  int visits = 0;
  walk(*root, 0, visits);
  return 0;
}
