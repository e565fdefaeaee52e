#pragma once
// CLI11 2.1 converts numbers with strtoll/strtoull/strtold and checks neither overflow nor sign:
// "--seed 99999999999999999999" became INT64_MAX, "-1" for an unsigned option 2^64-1, "010" an
// octal 8, "nan" a number. These checks run on the text before CLI11 converts it: whole numbers
// must be decimal and fit 64 bits (they are handed on in plain decimal, so "010" is 10), other
// numbers finite; every numeric option of every command refuses the rest with a message naming
// the range. A narrower option type (int) is then checked by CLI11's own conversion.

#include <CLI/CLI.hpp>

namespace tessera::cli {

// Adds the check that fits each numeric option's type (CLI11's INT, UINT or FLOAT type names) to
// every option of `app` and of its subcommands, recursively.
void add_strict_number_checks(CLI::App& app);

}  // namespace tessera::cli
