#pragma once
// Bearer tokens: read from a file (a Kubernetes Secret or service-account token mounted in the
// pod), and checked on requests that change state.

#include <string>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/k8s/http_server.hpp"

namespace tessera::k8s {

// The token in `path`, without trailing newlines and spaces. Fails (kK8s) naming `what` and the
// flag that gives the file when it cannot be read, is larger than a token can be, or is empty.
core::Result<std::string> read_bearer_token(const std::string& path, std::string_view what,
                                            std::string_view flag);

// Whether `request` carries "Authorization: Bearer <token>". The comparison takes the same time
// wherever the first difference lies, so a client cannot find the token byte by byte.
bool carries_bearer_token(const HttpRequest& request, const std::string& token);

}  // namespace tessera::k8s
