#include "tessera/cli/strict_numbers.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <system_error>

namespace tessera::cli {
namespace {

// Rewrites the text as the number it reads in decimal, so that CLI11's base-0 conversion cannot
// read "010" as octal 8.
template <class T>
std::string whole_number(std::string& text) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || at != end) {
    return fmt::format("'{}' is not a whole number from {} to {}", text,
                       std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  }
  text = fmt::format("{}", value);
  return {};
}

std::string finite_number(const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || at != end || !std::isfinite(value)) {
    return fmt::format("'{}' is not a finite decimal number", text);
  }
  return {};
}

}  // namespace

void add_strict_number_checks(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    // The type name of a vector option is its element's; "INT:..." where a default is shown.
    const std::string type = option->get_type_name();
    if (type.starts_with("INT")) {
      option->transform(CLI::Validator(
          [](std::string& text) { return whole_number<std::int64_t>(text); }, "", "WHOLE"));
    } else if (type.starts_with("UINT")) {
      option->transform(CLI::Validator(
          [](std::string& text) { return whole_number<std::uint64_t>(text); }, "", "WHOLE"));
    } else if (type.starts_with("FLOAT")) {
      option->check(CLI::Validator(finite_number, "", "FINITE"));
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    add_strict_number_checks(*sub);
  }
}

}  // namespace tessera::cli
