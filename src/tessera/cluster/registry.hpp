#pragma once
// The one list of preemption methods: each one's name and summary. The cluster scenario's
// `preemption.method`, the --method options and their help, `tessera list` and the errors that
// name the known methods all read it; a new method is its entry here and its search in
// policy/preemption.cpp.

#include <span>
#include <string>
#include <string_view>

#include "tessera/cluster/policy/preemption_method.hpp"
#include "tessera/core/enum_table.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cluster {

std::span<const core::EnumName<PreemptionMethod>> preemption_methods();
std::string_view to_string(PreemptionMethod m);
core::Result<PreemptionMethod> parse_preemption_method(std::string_view s);
// "incremental, exhaustive or default-k8s".
std::string preemption_method_names();
// One line per method with its summary, for `tessera list`.
std::string preemption_methods_listing();

}  // namespace tessera::cluster
