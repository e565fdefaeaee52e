#include "tessera/device/mig_device.hpp"

namespace tessera::device {

std::string_view to_string(JobExitKind k) {
  switch (k) {
    case JobExitKind::kCompleted: return "completed";
    case JobExitKind::kOutOfMemory: return "out of memory";
    case JobExitKind::kKilled: return "killed";
    case JobExitKind::kFailed: return "failed";
  }
  return "?";
}

}  // namespace tessera::device
