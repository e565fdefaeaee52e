#pragma once
// A shared library opened at run time (dlopen) and its symbols (dlsym). The real-GPU backends
// load NVIDIA's libraries this way, so tessera builds and runs without them, and a missing
// library or symbol is an error value instead of a failure to start.

#include <memory>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"

namespace tessera::cuda {

class SharedLibrary {
 public:
  enum class Unload {
    kOnClose,  // dlclose when this object goes
    // Never unmapped (RTLD_NODELETE): for a library that keeps allocations and destructors of
    // its own past its handles, so nothing points into unmapped code and a leak report can
    // still name the library.
    kNever,
  };
  // dlopen(path, RTLD_NOW | RTLD_LOCAL); the error carries dlerror()'s text. `domain` is the
  // error domain of the library's user (core::Domain::kNvml for NVML).
  static core::Result<std::unique_ptr<SharedLibrary>> open(const std::string& path,
                                                           core::Domain domain,
                                                           Unload unload = Unload::kOnClose);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  const std::string& path() const { return path_; }
  // nullptr when the library does not export `name`.
  void* find(const std::string& name) const;
  // Resolves `name` into `fn`; the error names the symbol and the library.
  template <typename Fn>
  core::Status resolve(const std::string& name, Fn& fn) const {
    void* p = find(name);
    if (p == nullptr) {
      return core::failf(domain_, core::Code::kNotFound,
                         "{} does not export {}: it is not the library tessera expects, or it "
                         "is older than the call",
                         path_, name);
    }
    fn = reinterpret_cast<Fn>(p);
    return {};
  }

 private:
  SharedLibrary(void* handle, std::string path, core::Domain domain)
      : handle_(handle), path_(std::move(path)), domain_(domain) {}
  void* handle_;
  std::string path_;
  core::Domain domain_;
};

}  // namespace tessera::cuda
