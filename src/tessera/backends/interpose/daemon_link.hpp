#pragma once
// This process's registration with tesserad (TESSERA_DAEMON_SOCKET): when CUDA starts in it (a
// hooked cuInit), else at its first launch or allocation, it connects, registers (tenant name,
// class, priority, SLOs, SM share, device from the environment), receives its assignment page's fd
// with the reply (SCM_RIGHTS) and maps it. The connection stays open for the process's life: it is
// how the daemon knows the tenant is alive, and closing it (exit, crash) releases the tenant's SMs.
//
// Fail-open: if registration fails, launches behave as without a daemon. If the daemon dies
// later, a thread that waits on the connection sees it: launches keep their last assignment (a
// hold becomes the whole GPU, since no daemon is left to end it) and the thread registers again,
// with a fresh page, once a daemon answers on the socket; the daemon rebuilds its table so.
//
// A child of fork() (a data-loader worker) does not inherit the registration: it closes the
// inherited connection, so the daemon frees the parent's SMs when the parent exits, and registers
// as a tenant of its own if it launches or allocates.

#include "tessera/daemon/assignment_page.hpp"

namespace tessera::interpose {

// The page, or nullptr when TESSERA_DAEMON_SOCKET is unset or registration failed (then
// daemon_link_error() says why). Registers on the first call; thread-safe.
daemon_abi::AssignmentPage* daemon_page();
// For the summary at exit: the page if registration already happened (never registers), and why
// it failed ("" when it was not tried or succeeded).
daemon_abi::AssignmentPage* daemon_page_if_attempted();
const char* daemon_link_error();
// How many times this process registered (more than 1 after a daemon restart).
unsigned daemon_registrations();
// The MPS active thread percentage the first registration's reply gave (the daemon's
// mps-percentage mechanism), or 0. A registration after a daemon restart cannot change it: MPS
// read it when CUDA started.
int daemon_mps_percentage();

// CLOCK_MONOTONIC in ns (vDSO: no system call), the clock the page's times are in.
unsigned long long monotonic_ns();

}  // namespace tessera::interpose
