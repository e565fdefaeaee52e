#include "tessera/report/vega_assets.hpp"

namespace tessera::report {

std::string script_text(const InlineScript& script) {
  std::size_t size = 0;
  for (std::string_view chunk : script.chunks) size += chunk.size();
  std::string text;
  text.reserve(size);
  for (std::string_view chunk : script.chunks) text += chunk;
  return text;
}

}  // namespace tessera::report
