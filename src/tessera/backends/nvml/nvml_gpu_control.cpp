#include "tessera/backends/nvml/nvml_gpu_control.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"

namespace tessera::cuda {
namespace {

constexpr std::string_view kNoPermission =
    "locked clocks need root (or nvidia-smi -lgc by an administrator); tessera runs at the "
    "driver's clocks";

// ASSUMPTION: no GPU lists more clocks than this (an H100 lists about 80); a longer list is read
// again at the size NVML asks for.
constexpr unsigned kClockListGuess = 256;

// NVML's count-in/count-out list calls: try a buffer, grow it once to the size NVML reports.
core::Result<std::vector<int>> read_clock_list(
    const NvmlLibrary& nvml, std::string_view call,
    const std::function<nvml::Return(unsigned*, unsigned*)>& fill) {
  std::vector<unsigned> buffer(kClockListGuess);
  unsigned count = kClockListGuess;
  nvml::Return r = fill(&count, buffer.data());
  if (r == nvml::kErrorInsufficientSize && count > buffer.size()) {
    buffer.resize(count);
    r = fill(&count, buffer.data());
  }
  TESSERA_TRY(nvml.check(r, call));
  buffer.resize(std::min<std::size_t>(count, buffer.size()));
  std::vector<int> clocks(buffer.begin(), buffer.end());
  std::sort(clocks.begin(), clocks.end(), std::greater<>());
  clocks.erase(std::unique(clocks.begin(), clocks.end()), clocks.end());
  return clocks;
}

}  // namespace

std::optional<int> nearest_clock_mhz(const std::vector<int>& clocks, double mhz) {
  std::optional<int> best;
  for (int c : clocks) {
    if (!best) {
      best = c;
      continue;
    }
    const double d = std::abs(c - mhz), bd = std::abs(*best - mhz);
    if (d < bd || (d == bd && c > *best)) best = c;
  }
  return best;
}

struct NvmlGpuControl::State {
  const NvmlLibrary* nvml = nullptr;
  unsigned index = 0;
  nvml::Device device = nullptr;
  std::vector<int> clocks;  // highest first
  core::Status lock_status;
  std::optional<int> locked;       // what set_locked_clock_mhz locked
  bool probe_left_locked = false;  // the probe's reset failed: the destructor tries again

  const NvmlApi& api() const { return nvml->api(); }

  // The NVML error of a lock or reset call, with the permission case spelled out.
  core::Status lock_error(nvml::Return r, std::string_view call) const {
    if (r == nvml::kErrorNoPermission) {
      return core::failf(core::Domain::kNvml, core::Code::kFailedPrecondition, "{} on GPU {}: {}",
                         call, index, kNoPermission);
    }
    return nvml->check(r, call);
  }

  // The supported graphics clocks at the memory clock the GPU runs now (the highest supported
  // one when the current memory clock cannot be read or is not in the list).
  core::Result<std::vector<int>> read_supported_clocks() const {
    if (api().device_get_supported_memory_clocks == nullptr ||
        api().device_get_supported_graphics_clocks == nullptr) {
      return core::fail(core::Domain::kNvml, core::Code::kUnsupported,
                        "this NVML lacks nvmlDeviceGetSupportedMemoryClocks or "
                        "nvmlDeviceGetSupportedGraphicsClocks (a driver older than NVML 4?)");
    }
    TESSERA_ASSIGN_OR_RETURN(const std::vector<int> memory,
                             read_clock_list(*nvml, "nvmlDeviceGetSupportedMemoryClocks",
                                             [&](unsigned* count, unsigned* out) {
                                               return api().device_get_supported_memory_clocks(
                                                   device, count, out);
                                             }));
    if (memory.empty()) {
      return core::failf(core::Domain::kNvml, core::Code::kUnsupported,
                         "GPU {} lists no supported memory clock", index);
    }
    int memory_mhz = memory.front();
    unsigned current = 0;
    if (api().device_get_clock != nullptr &&
        api().device_get_clock(device, nvml::kClockMem, nvml::kClockIdCurrent, &current) ==
            nvml::kSuccess &&
        std::find(memory.begin(), memory.end(), static_cast<int>(current)) != memory.end()) {
      memory_mhz = static_cast<int>(current);
    }
    TESSERA_ASSIGN_OR_RETURN(std::vector<int> graphics,
                             read_clock_list(*nvml, "nvmlDeviceGetSupportedGraphicsClocks",
                                             [&](unsigned* count, unsigned* out) {
                                               return api().device_get_supported_graphics_clocks(
                                                   device, static_cast<unsigned>(memory_mhz), count,
                                                   out);
                                             }));
    if (graphics.empty()) {
      return core::failf(core::Domain::kNvml, core::Code::kUnsupported,
                         "GPU {} lists no graphics clock at memory clock {} MHz", index,
                         memory_mhz);
    }
    return graphics;
  }

  // Locks to [lowest, highest] supported (no restriction) and resets at once.
  core::Status probe_lock() {
    if (clocks.empty()) return lock_status;
    if (api().device_set_gpu_locked_clocks == nullptr ||
        api().device_reset_gpu_locked_clocks == nullptr) {
      return core::fail(core::Domain::kNvml, core::Code::kUnsupported,
                        "this NVML lacks nvmlDeviceSetGpuLockedClocks or "
                        "nvmlDeviceResetGpuLockedClocks (locked clocks came with driver R418)");
    }
    const nvml::Return r = api().device_set_gpu_locked_clocks(
        device, static_cast<unsigned>(clocks.back()), static_cast<unsigned>(clocks.front()));
    if (r != nvml::kSuccess) return lock_error(r, "nvmlDeviceSetGpuLockedClocks");
    const nvml::Return reset = api().device_reset_gpu_locked_clocks(device);
    if (reset != nvml::kSuccess) {
      probe_left_locked = true;
      auto error = lock_error(reset, "nvmlDeviceResetGpuLockedClocks");
      return std::unexpected(error.error().with_context(
          fmt::format("the clock-lock probe could not undo its lock of GPU {} to {}-{} MHz "
                      "(run nvidia-smi -rgc as root if it stays)",
                      index, clocks.back(), clocks.front())));
    }
    return {};
  }
};

NvmlGpuControl::NvmlGpuControl(std::unique_ptr<State> state) : state_(std::move(state)) {}

core::Result<std::unique_ptr<NvmlGpuControl>> NvmlGpuControl::open(const NvmlLibrary& nvml,
                                                                   unsigned index) {
  auto state = std::make_unique<State>();
  state->nvml = &nvml;
  state->index = index;
  TESSERA_TRY(nvml.check(nvml.api().device_get_handle_by_index(index, &state->device),
                         fmt::format("nvmlDeviceGetHandleByIndex_v2({})", index)));
  auto clocks = state->read_supported_clocks();
  if (clocks) {
    state->clocks = std::move(*clocks);
  } else {
    state->lock_status = std::unexpected(clocks.error());
  }
  state->lock_status = state->probe_lock();
  if (!state->lock_status) {
    core::logger().info("GPU {}: clocks cannot be locked: {}", index,
                        state->lock_status.error().message());
  }
  return std::unique_ptr<NvmlGpuControl>(new NvmlGpuControl(std::move(state)));
}

NvmlGpuControl::~NvmlGpuControl() {
  if (!state_->locked && !state_->probe_left_locked) return;
  if (auto st = reset_clocks(); !st) {
    core::logger().warn("GPU {}: clocks stay locked ({}); run nvidia-smi -rgc as root",
                        state_->index, st.error().message());
  }
}

const std::vector<int>& NvmlGpuControl::supported_clocks_mhz() const {
  return state_->clocks;
}

bool NvmlGpuControl::can_lock_clocks() const {
  return state_->lock_status.has_value();
}

core::Status NvmlGpuControl::lock_clocks_status() const {
  return state_->lock_status;
}

std::optional<int> NvmlGpuControl::locked_clock_mhz() const {
  return state_->locked;
}

core::Result<int> NvmlGpuControl::set_locked_clock_mhz(double mhz) {
  if (!std::isfinite(mhz) || mhz <= 0) {
    return core::failf(core::Domain::kNvml, core::Code::kInvalidArgument,
                       "clock {} MHz: give a positive clock (supported: {}-{} MHz)", mhz,
                       state_->clocks.empty() ? 0 : state_->clocks.back(),
                       state_->clocks.empty() ? 0 : state_->clocks.front());
  }
  TESSERA_TRY(state_->lock_status);
  const int clock = *nearest_clock_mhz(state_->clocks, mhz);  // the probe needed a clock list
  const nvml::Return r = state_->api().device_set_gpu_locked_clocks(
      state_->device, static_cast<unsigned>(clock), static_cast<unsigned>(clock));
  TESSERA_TRY(state_->lock_error(r, "nvmlDeviceSetGpuLockedClocks"));
  state_->locked = clock;
  return clock;
}

core::Status NvmlGpuControl::reset_clocks() {
  if (!state_->locked && !state_->probe_left_locked) return {};
  if (state_->api().device_reset_gpu_locked_clocks == nullptr) {
    return core::fail(core::Domain::kNvml, core::Code::kUnsupported,
                      "this NVML lacks nvmlDeviceResetGpuLockedClocks");
  }
  TESSERA_TRY(state_->lock_error(state_->api().device_reset_gpu_locked_clocks(state_->device),
                                 "nvmlDeviceResetGpuLockedClocks"));
  state_->locked.reset();
  state_->probe_left_locked = false;
  return {};
}

core::Result<PowerSample> NvmlGpuControl::sample() const {
  const NvmlApi& api = state_->api();
  const NvmlLibrary& nvml = *state_->nvml;
  if (api.device_get_power_usage == nullptr || api.device_get_clock == nullptr) {
    return core::fail(core::Domain::kNvml, core::Code::kUnsupported,
                      "this NVML lacks nvmlDeviceGetPowerUsage or nvmlDeviceGetClock");
  }
  PowerSample s;
  unsigned milliwatts = 0;
  TESSERA_TRY(nvml.check(api.device_get_power_usage(state_->device, &milliwatts),
                         "nvmlDeviceGetPowerUsage"));
  s.power_watts = milliwatts / 1e3;
  unsigned sm_mhz = 0;
  TESSERA_TRY(nvml.check(
      api.device_get_clock(state_->device, nvml::kClockSm, nvml::kClockIdCurrent, &sm_mhz),
      "nvmlDeviceGetClock(SM, current)"));
  s.sm_clock_mhz = sm_mhz;
  unsigned long long millijoules = 0;
  if (api.device_get_total_energy_consumption != nullptr &&
      api.device_get_total_energy_consumption(state_->device, &millijoules) == nvml::kSuccess) {
    s.energy_joules = static_cast<double>(millijoules) / 1e3;
  }
  nvml::Utilization u{};
  if (api.device_get_utilization_rates != nullptr &&
      api.device_get_utilization_rates(state_->device, &u) == nvml::kSuccess) {
    s.gpu_utilization_percent = static_cast<int>(u.gpu);
    s.memory_utilization_percent = static_cast<int>(u.memory);
  }
  return s;
}

}  // namespace tessera::cuda
