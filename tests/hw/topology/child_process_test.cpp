// run_in_child: what the child returns comes back whole; a crash, a runaway loop, a hang, an
// allocation past the memory limit and too much output each end the child, not the test, and
// come back as their cause.
#include "tessera/hw/topology/internal/child_process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::hw::detail {
namespace {

ChildLimits small_limits() {
  return ChildLimits{.memory_bytes = 256ULL << 20,
                     .cpu_seconds = 1,
                     .wall_seconds = 2,
                     .max_output_bytes = 8 << 20};
}

TEST(ChildProcess, ReturnsTheOutputWhole) {
  // More than a pipe holds (64 KiB), so the parent must read while the child writes.
  std::string big(3 << 20, 'x');
  for (std::size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>('a' + i % 26);
  auto out = run_in_child([&] { return big; }, small_limits());
  ASSERT_TRUE(out.has_value()) << out.error().what;
  EXPECT_EQ(*out, big);

  auto empty = run_in_child([] { return std::string(); }, small_limits());
  ASSERT_TRUE(empty.has_value()) << empty.error().what;
  EXPECT_EQ(*empty, "");
}

TEST(ChildProcess, ACrashIsNamedBySignal) {
  auto out = run_in_child(
      [] {
        raise(SIGSEGV);
        return std::string("not reached");
      },
      small_limits());
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().what, "crashed (SIGSEGV)");
}

// The child's signal state is its own: a handler in the parent does not save it.
TEST(ChildProcess, TheParentsSignalHandlersDoNotCarryOver) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old {};
  sigaction(SIGABRT, &ignore, &old);
  auto out = run_in_child(
      [] {
        raise(SIGABRT);
        return std::string("not reached");
      },
      small_limits());
  sigaction(SIGABRT, &old, nullptr);
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().what, "crashed (SIGABRT)");
}

// A library's last words (an assertion before abort) come back with the failure, cut short, and
// never reach this process's stderr.
TEST(ChildProcess, WhatTheChildPrintedComesBackWithItsFailure) {
  auto out = run_in_child(
      [] {
        std::fputs("first line\nlib.c:42: check: Assertion `x' failed.\n", stderr);
        std::fflush(stderr);
        abort();
        return std::string();
      },
      small_limits());
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().what, "crashed (SIGABRT)");
  EXPECT_EQ(out.error().printed, "lib.c:42: check: Assertion `x' failed.");

  auto long_line = run_in_child(
      [] {
        std::fputs((std::string(1000, 'a') + std::string(kMaxPrintedBytes, 'z')).c_str(), stderr);
        std::fflush(stderr);
        _exit(3);
        return std::string();
      },
      small_limits());
  ASSERT_FALSE(long_line.has_value());
  EXPECT_EQ(long_line.error().what, "exited with status 3");
  EXPECT_EQ(long_line.error().printed, std::string(kMaxPrintedBytes, 'z'));

  auto quiet = run_in_child([] { return std::string("ok"); }, small_limits());
  ASSERT_TRUE(quiet.has_value());
}

TEST(ChildProcess, ALoopRunsIntoTheCpuLimit) {
  auto out = run_in_child(
      [] {
        volatile unsigned long spins = 0;
        for (;;) spins = spins + 1;
        return std::string();
      },
      ChildLimits{.cpu_seconds = 1, .wall_seconds = 60});
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().what, "ran past its 1 s CPU limit (SIGXCPU)");
}

TEST(ChildProcess, AHangIsStoppedAtTheDeadline) {
  auto out = run_in_child(
      [] {
        for (;;) pause();
        return std::string();
      },
      ChildLimits{.cpu_seconds = 60, .wall_seconds = 1});
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().what, "ran past its 1 s limit");
}

TEST(ChildProcess, AllocationPastTheMemoryLimitFails) {
  auto out = run_in_child(
      [] {
        std::vector<char> huge(std::size_t{4} << 30, 'x');
        return std::string(1, huge.back());
      },
      small_limits());
  ASSERT_FALSE(out.has_value());
#ifdef TESSERA_SANITIZED
  // AddressSanitizer's allocator meets the limit first: it reports its own out-of-memory and
  // exits 1 instead of throwing std::bad_alloc.
  EXPECT_EQ(out.error().what, "exited with status 1");
  EXPECT_NE(out.error().printed.find("ABORTING"), std::string::npos) << out.error().printed;
#else
  EXPECT_EQ(out.error().what, "ran out of memory (its limit is 256 MiB more than tessera's)");
#endif
}

TEST(ChildProcess, OutputPastItsCapIsRefused) {
  ChildLimits limits = small_limits();
  limits.max_output_bytes = 1000;
  auto out = run_in_child([] { return std::string(100000, 'y'); }, limits);
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().what, "produced more than 1000 bytes of output");
}

TEST(ChildProcess, AnExceptionEndsTheChild) {
  auto out = run_in_child([]() -> std::string { throw std::runtime_error("no"); }, small_limits());
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().what, "failed with an exception");
}

}  // namespace
}  // namespace tessera::hw::detail
