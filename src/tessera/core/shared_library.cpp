#include "tessera/core/shared_library.hpp"

#include <dlfcn.h>

namespace tessera::cuda {

core::Result<std::unique_ptr<SharedLibrary>> SharedLibrary::open(const std::string& path,
                                                                 core::Domain domain,
                                                                 Unload unload) {
  const int flags = RTLD_NOW | RTLD_LOCAL | (unload == Unload::kNever ? RTLD_NODELETE : 0);
  void* handle = dlopen(path.c_str(), flags);
  if (handle == nullptr) {
    const char* why = dlerror();
    return core::failf(domain, core::Code::kNotFound, "cannot load {}: {}", path,
                       why != nullptr ? why : "unknown dlopen error");
  }
  return std::unique_ptr<SharedLibrary>(new SharedLibrary(handle, path, domain));
}

SharedLibrary::~SharedLibrary() {
  dlclose(handle_);
}

void* SharedLibrary::find(const std::string& name) const {
  return dlsym(handle_, name.c_str());
}

}  // namespace tessera::cuda
