#pragma once
// The daemon's side of one tenant's assignment page: a sealed memfd of kPageBytes, mapped shared.
// Sealed against shrinking and growing, so a client that maps it cannot truncate it under the
// daemon (a truncated mapping would fault the daemon on its next read).

#include <memory>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/daemon/assignment_page.hpp"

namespace tessera::daemon {

class TenantPage {
 public:
  // A fresh page: magic and version set, hold as its assignment, counters zero.
  static core::Result<std::unique_ptr<TenantPage>> create(std::string_view tenant);
  ~TenantPage();
  TenantPage(const TenantPage&) = delete;
  TenantPage& operator=(const TenantPage&) = delete;

  daemon_abi::AssignmentPage* page() { return page_; }
  int fd() const { return fd_; }

 private:
  TenantPage(int fd, daemon_abi::AssignmentPage* page) : fd_(fd), page_(page) {}
  int fd_;
  daemon_abi::AssignmentPage* page_;
};

}  // namespace tessera::daemon
