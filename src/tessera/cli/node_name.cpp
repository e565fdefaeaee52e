#include "tessera/cli/node_name.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace tessera::cli {

std::string node_name_or_default(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("NODE_NAME"); env != nullptr && *env != '\0') return env;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return {};
  std::string name(host);
  std::ranges::transform(name, name.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

}  // namespace tessera::cli
