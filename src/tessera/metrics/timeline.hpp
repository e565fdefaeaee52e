#pragma once
// A timeline in Chrome Trace Event JSON (opens in Perfetto and chrome://tracing): one track per
// tenant (its steps and iterations) and one per partition (the kernels that ran there).
// Kernel spans are many; after `max_kernel_events` kernels of one process (one run) the recorder
// keeps counting but stops storing
// them and says so in the trace's metadata ("otherData": kernel_events_dropped).
//
// Ids handed out by add_process and add_track are the only valid ones. A call with any other id
// records nothing; the first such misuse is kept and returned by status() and write(), so a wrong
// id is reported instead of silently producing a misleading trace.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/device/gpu_device.hpp"

namespace tessera::metrics {

class Timeline final : public device::DeviceObserver {
 public:
  // The cap applies per process, so every mode of a run keeps its first kernels.
  explicit Timeline(std::size_t max_kernel_events = 50'000);

  // A process groups the tracks of one run (one sharing mode, one GPU).
  int add_process(const std::string& name);
  int add_track(int process, const std::string& name);
  // Kernels on streams in `domain` of `process` go to `track` (a track of that process).
  void route_domain(int process, device::DomainId domain, int track);
  // Kernels completing from now on belong to `process`.
  void set_current_process(int process);

  // A span on a track, e.g. one inference iteration; `end` must not precede `start`.
  void add_span(int track, const std::string& name, core::Nanos start, core::Nanos end,
                nlohmann::json args = {});
  // Called once per kernel: stores a compact record only (no JSON is built until output).
  // Domains without a route go to the current process's "device" track, made on first use.
  void on_kernel_complete(const device::KernelEvent& event) override;

  std::size_t kernel_events_dropped() const { return dropped_; }
  // The first misuse (unknown id, reversed span), if any.
  core::Status status() const;

  // The trace as a JSON value (for tests and small traces; write() streams instead).
  nlohmann::json to_json() const;
  // Streams the trace to `path` without building it in memory; the error names the path.
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
  // One kernel: 40 bytes, its name interned in kernel_names_.
  struct KernelSpan {
    std::int32_t track;
    std::uint32_t name;
    device::StreamId stream;
    std::int32_t sms;
    core::Nanos start;
    core::Nanos end;
    std::uint64_t tag;
  };
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  bool valid_process(int process) const;
  bool valid_track(int track) const;
  void misuse(std::string message);
  int kernel_track(device::DomainId domain);
  std::uint32_t intern(std::string_view name);
  // The whole trace document; to_json() parses it, so both outputs are one serialization.
  void write_document(std::ostream& out) const;

  std::size_t max_kernel_events_;
  std::size_t kernel_events_ = 0;
  std::size_t dropped_ = 0;
  int current_process_ = -1;
  std::vector<std::string> processes_;
  std::vector<std::size_t> kernels_per_process_;
  std::vector<Track> tracks_;
  std::vector<std::vector<std::pair<device::DomainId, int>>> domain_routes_;  // per process
  std::vector<int> default_tracks_;                                           // per process
  std::vector<Span> spans_;
  std::vector<KernelSpan> kernels_;
  std::vector<std::string> kernel_names_;
  std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> kernel_name_ids_;
  std::optional<core::Error> misuse_;
};

}  // namespace tessera::metrics
