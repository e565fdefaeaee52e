#include "tessera/metrics/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <ostream>
#include <sstream>
#include <system_error>

namespace tessera::metrics {
namespace {

using nlohmann::json;

// Chrome trace timestamps are microseconds; a decimal fraction keeps nanosecond detail exactly
// (1500 ns -> "1.5"), with no floating-point rounding.
std::string micros(core::Nanos t) {
  const bool negative = t < 0;
  const auto magnitude = negative ? -static_cast<std::uint64_t>(t) : static_cast<std::uint64_t>(t);
  std::string text = fmt::format("{}{}", negative ? "-" : "", magnitude / 1000);
  if (const std::uint64_t fraction = magnitude % 1000; fraction != 0) {
    std::string digits = fmt::format("{:03}", fraction);
    digits.erase(digits.find_last_not_of('0') + 1);
    text += "." + digits;
  }
  return text;
}

// JSON text that never throws: invalid UTF-8 in a name becomes U+FFFD instead of an exception.
std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A JSON string literal, escaped.
std::string json_string(std::string_view text) {
  return dump(json(text));
}

// One span of a track, placed on a lane when the trace is written.
struct Item {
  core::Nanos start;
  core::Nanos end;
  bool kernel;  // kernels_[index] if true, else spans_[index]
  std::size_t index;
  int lane;
};

// Slices on one trace thread must nest, but kernels of several streams in one partition overlap.
// A track is therefore packed, in start order, into as few lanes (trace threads) as keep every
// lane free of overlap. Returns the number of lanes (at least 1, so an empty track still shows).
int pack_lanes(std::vector<Item>& items) {
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  std::vector<core::Nanos> lane_end;
  for (Item& item : items) {
    auto free = std::find_if(lane_end.begin(), lane_end.end(),
                             [&](core::Nanos end) { return end <= item.start; });
    if (free == lane_end.end()) free = lane_end.insert(lane_end.end(), item.start);
    *free = item.end;
    item.lane = static_cast<int>(free - lane_end.begin());
  }
  return std::max(1, static_cast<int>(lane_end.size()));
}

// pid 0 is reserved by some trace viewers (it reads as "the kernel"), so ids count from 1.
int trace_id(int index) {
  return index + 1;
}

}  // namespace

Timeline::Timeline(std::size_t max_kernel_events) : max_kernel_events_(max_kernel_events) {}

bool Timeline::valid_process(int process) const {
  return process >= 0 && static_cast<std::size_t>(process) < processes_.size();
}

bool Timeline::valid_track(int track) const {
  return track >= 0 && static_cast<std::size_t>(track) < tracks_.size();
}

void Timeline::misuse(std::string message) {
  if (!misuse_)
    misuse_.emplace(core::Domain::kCore, core::Code::kInvalidArgument, std::move(message));
}

core::Status Timeline::status() const {
  if (misuse_) return std::unexpected(*misuse_);
  return {};
}

int Timeline::add_process(const std::string& name) {
  processes_.push_back(name);
  domain_routes_.emplace_back();
  default_tracks_.push_back(-1);
  kernels_per_process_.push_back(0);
  const int id = static_cast<int>(processes_.size()) - 1;
  if (current_process_ < 0) current_process_ = id;
  return id;
}

int Timeline::add_track(int process, const std::string& name) {
  if (!valid_process(process)) {
    misuse(
        fmt::format("timeline: add_track(\"{}\") names process {}, but {} processes exist; "
                    "pass an id returned by add_process",
                    name, process, processes_.size()));
    return -1;
  }
  tracks_.push_back({process, name});
  return static_cast<int>(tracks_.size()) - 1;
}

void Timeline::route_domain(int process, device::DomainId domain, int track) {
  if (!valid_process(process) || !valid_track(track) || tracks_[track].process != process) {
    misuse(
        fmt::format("timeline: route_domain({}, {}, {}) needs a track of that process; "
                    "pass ids returned by add_process and add_track(process, ...)",
                    process, domain, track));
    return;
  }
  auto& routes = domain_routes_[process];
  auto it = std::find_if(routes.begin(), routes.end(),
                         [&](const auto& route) { return route.first == domain; });
  if (it != routes.end()) {
    it->second = track;
  } else {
    routes.emplace_back(domain, track);
  }
}

void Timeline::set_current_process(int process) {
  if (!valid_process(process)) {
    misuse(
        fmt::format("timeline: set_current_process({}) but {} processes exist; pass an id "
                    "returned by add_process",
                    process, processes_.size()));
    return;
  }
  current_process_ = process;
}

void Timeline::add_span(int track, const std::string& name, core::Nanos start, core::Nanos end,
                        nlohmann::json args) {
  if (!valid_track(track)) {
    misuse(
        fmt::format("timeline: add_span(\"{}\") on track {}, but {} tracks exist; pass an id "
                    "returned by add_track",
                    name, track, tracks_.size()));
    return;
  }
  if (end < start) {
    misuse(fmt::format("timeline: span \"{}\" ends at {} ns, before its start at {} ns", name, end,
                       start));
    return;
  }
  spans_.push_back({track, name, start, end, std::move(args)});
}

int Timeline::kernel_track(device::DomainId domain) {
  if (current_process_ < 0) add_process("gpu");
  const int process = current_process_;
  for (const auto& [routed, track] : domain_routes_[process]) {
    if (routed == domain) return track;
  }
  int& fallback = default_tracks_[process];
  if (fallback < 0) fallback = add_track(process, "device");
  return fallback;
}

std::uint32_t Timeline::intern(std::string_view name) {
  if (auto it = kernel_name_ids_.find(name); it != kernel_name_ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(kernel_names_.size());
  kernel_names_.emplace_back(name);
  kernel_name_ids_.emplace(kernel_names_.back(), id);
  return id;
}

void Timeline::on_kernel_complete(const device::KernelEvent& event) {
  ++kernel_events_;
  if (current_process_ < 0) add_process("gpu");
  auto& kept = kernels_per_process_[static_cast<std::size_t>(current_process_)];
  if (kept >= max_kernel_events_) {
    ++dropped_;
    return;
  }
  ++kept;
  const std::string_view name = event.kernel != nullptr ? event.kernel->name : "kernel";
  kernels_.push_back({kernel_track(event.bandwidth_domain), intern(name), event.stream, event.sms,
                      event.start, event.end, event.submission_tag});
}

void Timeline::write_document(std::ostream& out) const {
  std::vector<std::vector<Item>> items(tracks_.size());
  for (std::size_t i = 0; i < spans_.size(); ++i) {
    items[spans_[i].track].push_back({spans_[i].start, spans_[i].end, false, i, 0});
  }
  for (std::size_t i = 0; i < kernels_.size(); ++i) {
    items[kernels_[i].track].push_back({kernels_[i].start, kernels_[i].end, true, i, 0});
  }
  std::vector<int> lanes(tracks_.size());
  for (std::size_t t = 0; t < tracks_.size(); ++t) lanes[t] = pack_lanes(items[t]);

  // Lane k > 0 of track "p" is shown as "p (k+1)". Trace thread ids count from 1 within each
  // process, in track creation order.
  std::vector<int> first_tid(tracks_.size());
  std::vector<int> next_tid(processes_.size(), 1);
  for (std::size_t t = 0; t < tracks_.size(); ++t) {
    first_tid[t] = next_tid[tracks_[t].process];
    next_tid[tracks_[t].process] += lanes[t];
  }

  // Events are formatted by hand into a buffer (a JSON object per event costs ~10x more) and
  // flushed in blocks; every string goes through json_string(), so the output is always valid JSON.
  fmt::memory_buffer buf;
  auto sink = std::back_inserter(buf);
  bool first = true;
  auto next_event = [&] {
    fmt::format_to(sink, "{}", first ? "\n" : ",\n");
    first = false;
    if (buf.size() > (1u << 16)) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  };
  fmt::format_to(
      sink,
      R"({{"displayTimeUnit":"ms","otherData":{{"kernel_events":{},)"
      R"("kernel_events_dropped":{},"max_kernel_events_per_process":{}}},"traceEvents":[)",
      kernel_events_, dropped_, max_kernel_events_);
  auto metadata = [&](std::string_view kind, int pid, std::string_view tid, std::string_view key,
                      std::string_view value) {
    next_event();
    fmt::format_to(sink, R"({{"ph":"M","name":"{}","pid":{}{},"args":{{"{}":{}}}}})", kind, pid,
                   tid, key, value);
  };
  for (std::size_t p = 0; p < processes_.size(); ++p) {
    const int pid = trace_id(static_cast<int>(p));
    metadata("process_name", pid, "", "name", json_string(processes_[p]));
    metadata("process_sort_index", pid, "", "sort_index", std::to_string(p));
  }
  for (std::size_t t = 0; t < tracks_.size(); ++t) {
    const int pid = trace_id(tracks_[t].process);
    for (int lane = 0; lane < lanes[t]; ++lane) {
      const int tid = first_tid[t] + lane;
      const std::string name =
          lane == 0 ? tracks_[t].name : fmt::format("{} ({})", tracks_[t].name, lane + 1);
      const std::string tid_field = fmt::format(",\"tid\":{}", tid);
      metadata("thread_name", pid, tid_field, "name", json_string(name));
      metadata("thread_sort_index", pid, tid_field, "sort_index", std::to_string(tid));
    }
  }
  std::vector<std::string> quoted_kernel_names;  // escaped once, used per kernel
  quoted_kernel_names.reserve(kernel_names_.size());
  for (const std::string& name : kernel_names_) quoted_kernel_names.push_back(json_string(name));
  for (std::size_t t = 0; t < tracks_.size(); ++t) {
    const int pid = trace_id(tracks_[t].process);
    for (const Item& item : items[t]) {
      next_event();
      fmt::format_to(sink, R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},)", pid,
                     first_tid[t] + item.lane, micros(item.start), micros(item.end - item.start));
      if (item.kernel) {
        const KernelSpan& k = kernels_[item.index];
        fmt::format_to(sink,
                       R"("name":{},"cat":"kernel","args":{{"stream":{},"sms":{},"tag":{}}}}})",
                       quoted_kernel_names[k.name], k.stream, k.sms, k.tag);
      } else {
        const Span& s = spans_[item.index];
        fmt::format_to(sink, R"("name":{},"cat":"span")", json_string(s.name));
        if (!s.args.is_null()) fmt::format_to(sink, R"(,"args":{})", dump(s.args));
        fmt::format_to(sink, "}}");
      }
    }
  }
  fmt::format_to(sink, "\n]}}\n");
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

json Timeline::to_json() const {
  std::ostringstream text;
  write_document(text);
  return json::parse(text.str());
}

core::Status Timeline::write(const std::string& path) const {
  if (misuse_) {
    return std::unexpected(
        misuse_->with_context(fmt::format("timeline not written to '{}'", path)));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return core::failf(core::Domain::kIo, core::Code::kNotFound,
                       "cannot write the timeline to '{}': {}; check that its directory exists "
                       "and is writable",
                       path, std::generic_category().message(errno));
  }
  write_document(out);
  out.flush();
  if (!out) {
    return core::failf(core::Domain::kIo, core::Code::kResourceExhausted,
                       "writing the timeline to '{}' failed part-way (is the disk full?)", path);
  }
  return {};
}

}  // namespace tessera::metrics
