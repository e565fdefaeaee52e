#include "tessera/daemon/tenant_page.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <string>

namespace tessera::daemon {

core::Result<std::unique_ptr<TenantPage>> TenantPage::create(std::string_view tenant) {
  const std::string name = "tessera-tenant-" + std::string(tenant);
  const int fd = memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    return core::failf(core::Domain::kIo, core::Code::kInternal, "memfd_create for tenant '{}': {}",
                       tenant, std::strerror(errno));
  }
  auto fail = [&](const char* what) -> core::Result<std::unique_ptr<TenantPage>> {
    const int saved = errno;
    close(fd);
    return core::failf(core::Domain::kIo, core::Code::kInternal, "{} for tenant '{}': {}", what,
                       tenant, std::strerror(saved));
  };
  if (ftruncate(fd, daemon_abi::kPageBytes) != 0) return fail("ftruncate of its page");
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return fail("sealing its page");
  }
  void* p = mmap(nullptr, daemon_abi::kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return fail("mmap of its page");
  auto* page = new (p) daemon_abi::AssignmentPage{};
  page->magic = daemon_abi::kPageMagic;
  page->version = daemon_abi::kPageVersion;
  page->assignment.store(daemon_abi::pack({.first_sm = 0, .sms = daemon_abi::kHoldSms}));
  return std::unique_ptr<TenantPage>(new TenantPage(fd, page));
}

TenantPage::~TenantPage() {
  munmap(page_, daemon_abi::kPageBytes);
  close(fd_);
}

}  // namespace tessera::daemon
