#pragma once
// A timeline in Chrome Trace Event JSON (opens in Perfetto and chrome://tracing): one track per
// tenant (its steps and iterations) and one per partition (the kernels that ran there).
// Kernel spans are many; after `max_kernel_events` the recorder keeps counting but stops storing
// them and says so in the trace's metadata.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/device/gpu_device.hpp"

namespace tessera::metrics {

class Timeline final : public device::DeviceObserver {
 public:
  explicit Timeline(std::size_t max_kernel_events = 200'000);

  // A process groups the tracks of one run (one sharing mode, one GPU).
  int add_process(const std::string& name);
  int add_track(int process, const std::string& name);
  // Kernels on streams in `domain` of `process` go to `track`.
  void route_domain(int process, device::DomainId domain, int track);
  void set_current_process(int process) { current_process_ = process; }

  void add_span(int track, const std::string& name, core::Nanos start, core::Nanos end,
                nlohmann::json args = {});
  void on_kernel_complete(const device::KernelEvent& event) override;

  std::size_t kernel_events_dropped() const { return dropped_; }
  nlohmann::json to_json() const;
  core::Status write(const std::string& path) const;

 private:
  struct Track {
    int process;
    std::string name;
  };
  struct Span {
    int track;
    std::string name;
    core::Nanos start;
    core::Nanos end;
    nlohmann::json args;
  };
  std::size_t max_kernel_events_;
  std::size_t kernel_events_ = 0;
  std::size_t dropped_ = 0;
  int current_process_ = 0;
  std::vector<std::string> processes_;
  std::vector<Track> tracks_;
  std::vector<std::vector<std::pair<device::DomainId, int>>> domain_routes_;  // per process
  std::vector<Span> spans_;
};

}  // namespace tessera::metrics
