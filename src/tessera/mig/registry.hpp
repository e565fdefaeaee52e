#pragma once
// The one list of MIG schemes: each one's name and summary. The job file's `scheme:`, the
// --scheme options and their help, `tessera list` and the errors that name the known schemes all
// read it; a new scheme is its entry here and its case in the scheduler (policy/scheduler.cpp).

#include <span>
#include <string>
#include <string_view>

#include "tessera/core/enum_table.hpp"
#include "tessera/core/error.hpp"
#include "tessera/mig/policy/scheme.hpp"

namespace tessera::mig {

std::span<const core::EnumName<Scheme>> schemes();
std::string_view to_string(Scheme s);
// Case does not matter ("a", "Sequential").
core::Result<Scheme> parse_scheme(std::string_view text);
// "A, B, sequential or static".
std::string scheme_names();
// One line per scheme with its summary, for `tessera list`.
std::string schemes_listing();

}  // namespace tessera::mig
