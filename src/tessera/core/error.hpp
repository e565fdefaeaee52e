#pragma once
// Errors are values. Every fallible call returns Result<T>; libraries and servers never exit or
// abort on bad input. An Error carries a domain, a small code and a message written for the user:
// it says what is wrong and what to fix.

#include <fmt/format.h>

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace tessera::core {

enum class Domain {
  kCore,
  kConfig,    // scenario / YAML / JSON input
  kHardware,  // GPU catalog lookups
  kWorkload,  // models, traces, arrivals
  kDevice,    // launches rejected by a device backend
  kSim,
  kGpu,  // sharing modes and policies
  kScenario,
  kIo,
  kMig,       // MIG layouts, placement, job scheduling
  kNvml,      // the NVML library and what it returns
  kTopology,  // host topology discovery and topology files
  kCluster,   // cluster scheduling: pods, nodes, placement, preemption
  kK8s,       // the Kubernetes extender and agent protocols
  kCuda,      // the CUDA driver, cuBLASLt and the real-GPU backend
};

enum class Code {
  kInvalidArgument,  // a value is out of range or inconsistent
  kNotFound,         // a name or file that does not exist
  kParse,            // malformed input text
  kUnsupported,      // a capability the backend does not have
  kResourceExhausted,
  kFailedPrecondition,
  kInternal,
};

std::string_view to_string(Domain d);
std::string_view to_string(Code c);

class [[nodiscard]] Error {
 public:
  Error(Domain domain, Code code, std::string message)
      : domain_(domain), code_(code), message_(std::move(message)) {}

  Domain domain() const { return domain_; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes context ("while loading examples/demo.yaml: ...") and keeps domain and code.
  Error with_context(std::string_view context) const {
    return Error(domain_, code_, fmt::format("{}: {}", context, message_));
  }

 private:
  Domain domain_;
  Code code_;
  std::string message_;
};

template <typename T>
using Result = std::expected<T, Error>;

using Status = std::expected<void, Error>;

inline std::unexpected<Error> fail(Domain domain, Code code, std::string message) {
  return std::unexpected(Error(domain, code, std::move(message)));
}

template <typename... Args>
std::unexpected<Error> failf(Domain domain, Code code, fmt::format_string<Args...> f,
                             Args&&... args) {
  return std::unexpected(Error(domain, code, fmt::format(f, std::forward<Args>(args)...)));
}

// GCC 12's std::expected has no monadic members (and_then, transform_error); these stand in.
template <typename T, typename F>
Result<T> map_error(Result<T> r, F&& f) {
  if (r) return r;
  return std::unexpected(std::forward<F>(f)(r.error()));
}

template <typename T>
Result<T> with_context(Result<T> r, std::string_view context) {
  if (r) return r;
  return std::unexpected(r.error().with_context(context));
}

}  // namespace tessera::core

template <>
struct fmt::formatter<tessera::core::Error> : fmt::formatter<std::string_view> {
  // Formats the message through the string_view formatter so width and fill specs apply.
  auto format(const tessera::core::Error& e, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(e.message(), ctx);
  }
};
