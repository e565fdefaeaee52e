#pragma once
// What Linux's /proc says about processes, for finding a dead manager's jobs again: a process's
// group and start time (which, with the boot ID, tell it from a later process that reuses its
// number) and every process of a group.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::core {

struct ProcessInfo {
  pid_t pid = 0;
  pid_t process_group = 0;
  std::uint64_t start_ticks = 0;  // clock ticks after boot (/proc/<pid>/stat field 22)
  char state = '?';               // R, S, D, Z (zombie), ...
};

// /proc/<pid>/stat of one process; kNotFound once it is gone (reaped).
Result<ProcessInfo> read_process(pid_t pid);

// Every process whose group is `group` and that started at or after `started_after` ticks: the
// members of a group created then (a later group of the same number starts later still, and a
// group's number is not reused while any member lives).
std::vector<ProcessInfo> processes_in_group(pid_t group, std::uint64_t started_after);

// /proc/sys/kernel/random/boot_id: a process number or start time means something only within the
// boot that recorded it. Empty if it cannot be read.
std::string boot_id();

}  // namespace tessera::core
