#pragma once
// What a restart does with the journal of a manager that died: every job process it started is
// stopped (its whole process group: SIGTERM, then SIGKILL after a grace period) and every GPU
// instance it created is destroyed, each step written to the journal, so the GPU is as the dead
// run found it and its unfinished jobs can run again, once.

#include <chrono>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/device/mig_device.hpp"
#include "tessera/mig/runtime/journal.hpp"

namespace tessera::mig {

// Stops the processes of `process`'s group that started with it or later (core::
// processes_in_group): SIGTERM, and SIGKILL for any left after `grace`. Returns how many there
// were; 0 when the group had ended. Sleeps while it waits: runtime code, never a policy's.
int stop_process_group(const device::JobProcess& process, std::chrono::milliseconds grace);

struct RecoveryReport {
  bool earlier_boot = false;              // the run was in an earlier boot: nothing of it is left
  std::vector<std::string> stopped;       // "train (process group 4242, 2 processes)"
  std::vector<std::string> destroyed;     // "1g.5gb at slice 0 (GPU instance 3)"
  std::vector<std::string> already_gone;  // recorded, but ended or destroyed before the restart
  std::string describe() const;
};

// Cleans up after the journal's unfinished run on `device` (the journal's GPU). An instance that
// exists with another profile or placement than recorded is not the run's, and is left alone.
core::Result<RecoveryReport> recover(Journal& journal, device::MigDevice& device,
                                     std::chrono::milliseconds grace);

}  // namespace tessera::mig
