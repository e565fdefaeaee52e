#include "tessera/k8s/bearer_token.hpp"

#include <cstdint>

#include "tessera/core/file_read.hpp"

namespace tessera::k8s {
namespace {

// A service-account token is a JWT of a few KiB; a file far larger is not one.
constexpr std::uint64_t kMaxTokenBytes = core::kMiB;

}  // namespace

core::Result<std::string> read_bearer_token(const std::string& path, std::string_view what,
                                            std::string_view flag) {
  auto text = core::read_file(
      path, {.what = what, .domain = core::Domain::kK8s, .max_bytes = kMaxTokenBytes});
  if (!text) {
    return core::failf(core::Domain::kK8s, text.error().code(), "{}; give {}",
                       text.error().message(), flag);
  }
  std::string token = std::move(*text);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  if (token.empty()) {
    return core::failf(core::Domain::kK8s, core::Code::kInvalidArgument, "the {} '{}' is empty",
                       what, path);
  }
  return token;
}

bool carries_bearer_token(const HttpRequest& request, const std::string& token) {
  constexpr std::string_view kScheme = "Bearer ";
  const std::string header = request.header("Authorization");
  if (header.size() != kScheme.size() + token.size() || !header.starts_with(kScheme)) return false;
  unsigned char differs = 0;
  for (std::size_t i = 0; i < token.size(); ++i) {
    differs |= static_cast<unsigned char>(header[kScheme.size() + i] ^ token[i]);
  }
  return differs == 0;
}

}  // namespace tessera::k8s
