#include "tessera/cli/duration_flag.hpp"

#include "tessera/core/config.hpp"
#include "tessera/core/try.hpp"

namespace tessera::cli {

void add_duration_option(CLI::App& cmd, std::string& text, std::string_view help) {
  cmd.add_option("--duration", text, std::string(help));
}

core::Result<std::optional<core::Nanos>> parse_duration_flag(const std::string& text) {
  if (text.empty()) return std::nullopt;
  TESSERA_ASSIGN_OR_RETURN(const core::Nanos d,
                           core::with_context(core::parse_duration(text), "--duration"));
  if (d <= 0) {
    return core::failf(core::Domain::kConfig, core::Code::kInvalidArgument,
                       "--duration {}: need a positive duration", text);
  }
  return d;
}

}  // namespace tessera::cli
