#include "tessera/core/process_table.hpp"

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

namespace tessera::core {

namespace {

// Fields after the command name, which is in parentheses and may itself hold spaces and ')'.
Result<ProcessInfo> parse_stat(pid_t pid, const std::string& text) {
  const auto close = text.rfind(')');
  if (close == std::string::npos) {
    return failf(Domain::kCore, Code::kParse, "/proc/{}/stat: no command name", pid);
  }
  std::istringstream rest(text.substr(close + 1));
  ProcessInfo info;
  info.pid = pid;
  std::string field;
  // Field 3 is the state, 5 the process group, 22 the start time.
  for (int n = 3; n <= 22 && rest >> field; ++n) {
    if (n == 3) info.state = field.empty() ? '?' : field[0];
    if (n == 5) std::from_chars(field.data(), field.data() + field.size(), info.process_group);
    if (n == 22) {
      const auto [ptr, ec] =
          std::from_chars(field.data(), field.data() + field.size(), info.start_ticks);
      if (ec == std::errc()) return info;
    }
  }
  return failf(Domain::kCore, Code::kParse, "/proc/{}/stat: fewer than 22 fields", pid);
}

}  // namespace

Result<ProcessInfo> read_process(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!in || !std::getline(in, text)) {
    return failf(Domain::kCore, Code::kNotFound, "no process {}", pid);
  }
  return parse_stat(pid, text);
}

std::vector<ProcessInfo> processes_in_group(pid_t group, std::uint64_t started_after) {
  std::vector<ProcessInfo> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    pid_t pid = 0;
    const auto [ptr, err] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (err != std::errc() || ptr != name.data() + name.size()) continue;
    auto info = read_process(pid);
    if (!info || info->process_group != group || info->start_ticks < started_after) continue;
    out.push_back(*info);
  }
  return out;
}

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace tessera::core
