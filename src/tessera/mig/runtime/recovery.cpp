#include "tessera/mig/runtime/recovery.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <algorithm>
#include <thread>

#include "tessera/core/process_table.hpp"
#include "tessera/core/try.hpp"

namespace tessera::mig {

namespace {

// How often a stopped group is looked at again. ASSUMPTION: 50 ms, as the device's poll period.
constexpr std::chrono::milliseconds kPollPeriod{50};
// How long processes take to vanish after SIGKILL (their parent, now init, reaps them).
// ASSUMPTION: 2 s; the kernel kills at once, and only an uninterruptible wait delays it.
constexpr std::chrono::milliseconds kKillWait{2000};

std::vector<core::ProcessInfo> live_members(const device::JobProcess& p) {
  std::vector<core::ProcessInfo> live;
  for (const core::ProcessInfo& info :
       core::processes_in_group(static_cast<pid_t>(p.process_group), p.start_ticks)) {
    if (info.state != 'Z') live.push_back(info);  // a zombie has ended; only its parent is left
  }
  return live;
}

// Signals each member by its own number: a signal to the group number could reach a later group
// that reuses it.
bool signal_until_gone(const device::JobProcess& p, int signal, std::chrono::milliseconds wait) {
  for (const core::ProcessInfo& info : live_members(p)) kill(info.pid, signal);
  for (auto waited = std::chrono::milliseconds(0); waited < wait; waited += kPollPeriod) {
    if (live_members(p).empty()) return true;
    std::this_thread::sleep_for(kPollPeriod);
  }
  return live_members(p).empty();
}

}  // namespace

int stop_process_group(const device::JobProcess& process, std::chrono::milliseconds grace) {
  const auto members = static_cast<int>(live_members(process).size());
  if (members == 0) return 0;
  if (!signal_until_gone(process, SIGTERM, grace)) signal_until_gone(process, SIGKILL, kKillWait);
  return members;
}

std::string RecoveryReport::describe() const {
  std::vector<std::string> parts;
  if (earlier_boot) parts.push_back("it ran before the last boot, so nothing of it is left");
  if (!stopped.empty()) parts.push_back(fmt::format("stopped {}", fmt::join(stopped, ", ")));
  if (!destroyed.empty()) {
    parts.push_back(fmt::format("destroyed {}", fmt::join(destroyed, ", ")));
  }
  if (!already_gone.empty()) {
    parts.push_back(fmt::format("already gone: {}", fmt::join(already_gone, ", ")));
  }
  if (parts.empty()) return "it left nothing behind";
  return fmt::format("{}", fmt::join(parts, "; "));
}

core::Result<RecoveryReport> recover(Journal& journal, device::MigDevice& device,
                                     std::chrono::milliseconds grace) {
  RecoveryReport report;
  const JournalState before = journal.state();
  const std::string boot = core::boot_id();
  report.earlier_boot = !before.boot_id.empty() && !boot.empty() && before.boot_id != boot;

  for (const auto& [job, p] : before.processes) {
    if (!report.earlier_boot && p.process.process_group > 0) {
      const int n = stop_process_group(p.process, grace);
      if (n > 0) {
        report.stopped.push_back(fmt::format("{} (process group {}, {} process{})", job,
                                             p.process.process_group, n, n == 1 ? "" : "es"));
      } else {
        report.already_gone.push_back(fmt::format("job {}", job));
      }
    }
    TESSERA_TRY(journal.job_exited(job));
  }

  const std::vector<device::MigInstance> now = device.instances();
  for (const auto& [id, inst] : before.instances) {
    const hw::MigProfile* profile = device.geometry().find(inst.profile_id);
    const std::string name = fmt::format("{} at slice {} (GPU instance {})",
                                         profile ? profile->name : "?", inst.start, id);
    const auto it = std::ranges::find_if(now, [&](const device::MigInstance& m) {
      return m.id == id && m.profile_id == inst.profile_id && m.start == inst.start;
    });
    if (report.earlier_boot || it == now.end()) {
      report.already_gone.push_back(name);
    } else {
      TESSERA_TRY(core::with_context(
          device.destroy_instance(id),
          fmt::format("cannot destroy {}, which the earlier run created", name)));
      report.destroyed.push_back(name);
    }
    TESSERA_TRY(journal.instance_destroyed(id));
  }
  return report;
}

}  // namespace tessera::mig
