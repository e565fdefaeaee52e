// The fake libcuda's state: script, objects, log (fake_cuda_state.hpp). The scheduler and the
// emulation of tessera's kernels are in fake_cuda_device.cpp.
#include "fake_cuda_state.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace fake_cuda {
namespace {

using nlohmann::json;

// ASSUMPTION: the H200's memory as 141 GiB ("141GB HBM3e", NVIDIA's H200 product page, read as
// GiB); the real figure cuDeviceTotalMem reports is unverified. Scripts set memory_mib.
constexpr std::uint64_t kDefaultMemoryMib = 141ull * 1024;
// ASSUMPTION: 1980 MHz, the H100 SXM boost clock (NVIDIA H100 datasheet); H200 SXM uses the same
// GH100 die. Only reported, never used for timing.
constexpr int kDefaultClockKhz = 1980000;
// ASSUMPTION: one virtual microsecond per launch unless the script says otherwise (only the order
// and the arithmetic of virtual times are meaningful).
constexpr std::uint64_t kDefaultKernelNs = 1000;

unsigned char hex_digit(char c) {
  if (c >= '0' && c <= '9') return static_cast<unsigned char>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<unsigned char>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<unsigned char>(c - 'A' + 10);
  throw std::runtime_error(std::string("uuid: '") + c + "' is not a hex digit");
}

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (NVML's form) into 16 bytes.
void parse_uuid(const std::string& text, unsigned char* out) {
  std::string hex;
  std::string body = text.rfind("GPU-", 0) == 0 ? text.substr(4) : text;
  for (char c : body) {
    if (c != '-') hex += c;
  }
  if (hex.size() != 32) throw std::runtime_error("uuid '" + text + "' does not have 32 hex digits");
  for (int i = 0; i < 16; ++i) {
    out[i] = static_cast<unsigned char>(hex_digit(hex[2 * i]) << 4 | hex_digit(hex[2 * i + 1]));
  }
}

template <typename T>
T get_or(const json& j, const char* key, T fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  return j[key].get<T>();
}

Device parse_device(const json& j, int ordinal) {
  if (!j.is_object()) throw std::runtime_error("devices[]: each device is an object");
  static const std::set<std::string> kKeys = {
      "name",      "sms",       "cc",   "memory_mib", "min_partition",
      "alignment", "shortfall", "uuid", "clock_khz",  "attributes"};
  for (const auto& [key, value] : j.items()) {
    if (!kKeys.count(key)) throw std::runtime_error("devices[]: unknown key '" + key + "'");
  }
  Device d;
  d.name = get_or<std::string>(j, "name", "NVIDIA H200");
  // 132 SMs: the H100/H200 SXM5 configuration (NVIDIA Hopper architecture whitepaper).
  d.sms = get_or<int>(j, "sms", 132);
  d.cc_major = 9;
  d.cc_minor = 0;
  if (j.contains("cc")) {
    if (!j["cc"].is_array() || j["cc"].size() != 2) throw std::runtime_error("cc: [major, minor]");
    d.cc_major = j["cc"][0].get<int>();
    d.cc_minor = j["cc"][1].get<int>();
  }
  d.memory_bytes = get_or<std::uint64_t>(j, "memory_mib", kDefaultMemoryMib) * 1024 * 1024;
  // cuda.h:24711-24715: CC 9.0+ minimum 8 SMs, multiple of 8; CC 8.x minimum 4, multiple of 2.
  const bool hopper = d.cc_major >= 9;
  d.min_partition = get_or<int>(j, "min_partition", hopper ? 8 : 4);
  d.alignment = get_or<int>(j, "alignment", hopper ? 8 : 2);
  d.shortfall = get_or<int>(j, "shortfall", 0);
  d.clock_khz = get_or<int>(j, "clock_khz", kDefaultClockKhz);
  if (d.sms <= 0 || d.min_partition <= 0 || d.alignment <= 0 || d.shortfall < 0) {
    throw std::runtime_error(
        "devices[]: sms, min_partition and alignment must be > 0, "
        "shortfall >= 0");
  }
  if (j.contains("uuid")) {
    parse_uuid(j["uuid"].get<std::string>(), d.uuid);
  } else {
    // A fixed, recognisable default: GPU-fa4e0000-0000-4000-8000-0000000000NN.
    d.uuid[0] = 0xfa;
    d.uuid[1] = 0x4e;
    d.uuid[6] = 0x40;
    d.uuid[8] = 0x80;
    d.uuid[15] = static_cast<unsigned char>(ordinal);
  }
  if (j.contains("attributes")) {
    for (const auto& [k, v] : j["attributes"].items()) d.attributes[std::stoi(k)] = v.get<int>();
  }
  return d;
}

std::unique_ptr<State>& slot() {
  static std::unique_ptr<State> s;
  return s;
}
bool g_was_reset = false;

}  // namespace

std::uint64_t handle_id(const void* handle, Kind kind) {
  const auto v = reinterpret_cast<std::uint64_t>(handle);
  if ((v >> 40) != static_cast<std::uint64_t>(kind)) return 0;
  return v & ((std::uint64_t{1} << 40) - 1);
}

State::State(const json& script) {
  if (!script.is_null() && !script.is_object()) throw std::runtime_error("the script is an object");
  const json s = script.is_null() ? json::object() : script;
  static const std::set<std::string> kKeys = {
      "devices", "driver_version", "green_contexts", "schedule", "kernel_ns", "fail", "no_device"};
  for (const auto& [key, value] : s.items()) {
    if (!kKeys.count(key)) throw std::runtime_error("unknown script key '" + key + "'");
  }
  if (s.contains("devices")) {
    if (!s["devices"].is_array()) throw std::runtime_error("devices: a list");
    for (const auto& d : s["devices"]) {
      devices.push_back(parse_device(d, static_cast<int>(devices.size())));
    }
  } else {
    devices.push_back(parse_device(json::object(), 0));
  }
  driver_version = get_or<int>(s, "driver_version", 13000);
  green_contexts = get_or<bool>(s, "green_contexts", true);
  schedule = get_or<std::string>(s, "schedule", "fifo");
  if (schedule != "fifo" && schedule != "reverse" && schedule != "round_robin") {
    throw std::runtime_error("schedule '" + schedule + "': one of fifo, reverse, round_robin");
  }
  kernel_ns["*"] = kDefaultKernelNs;
  if (s.contains("kernel_ns")) {
    for (const auto& [k, v] : s["kernel_ns"].items()) kernel_ns[k] = v.get<std::uint64_t>();
  }
  if (s.contains("fail")) {
    for (const auto& f : s["fail"]) {
      FailRule r;
      r.call = f.at("call").get<std::string>();
      r.nth = f.at("nth").get<int>();
      r.ret = static_cast<CUresult>(f.at("ret").get<int>());
      if (r.nth < 1) throw std::runtime_error("fail: nth counts from 1");
      fails.push_back(r);
    }
  }
  no_device = get_or<bool>(s, "no_device", false);
  if (no_device) devices.clear();
  primary_retains.assign(devices.size(), 0);
  // The primary contexts: ids 1..n (no other object takes those ids).
  for (std::size_t i = 0; i < devices.size(); ++i) {
    contexts[next_id()] = Context{static_cast<int>(i), 0, 0};
  }
}

State::~State() {
  for (auto& [ptr, a] : allocations_) std::free(reinterpret_cast<void*>(ptr));
}

CUresult State::before_call(const std::string& name, bool needs_init) {
  const int n = ++call_counts_[name];
  for (const auto& f : fails) {
    if (f.call == name && f.nth == n) return f.ret;
  }
  if (needs_init && !initialized) return CUDA_ERROR_NOT_INITIALIZED;
  return CUDA_SUCCESS;
}

void State::log_call(const std::string& name, CUresult ret) {
  if (calls_.size() >= kMaxLogEntries) {
    ++calls_dropped_;
    return;
  }
  calls_.push_back(json{{"call", name}, {"ret", static_cast<int>(ret)}});
}

void State::push_op(json entry) {
  ++executed_;
  if (ops_.size() >= kMaxLogEntries) {
    ++ops_dropped_;
    return;
  }
  ops_.push_back(std::move(entry));
}

void State::note(json entry) {
  notes_.push_back(std::move(entry));
}

namespace {
// The calling thread's context stack (cuCtxPushCurrent / cuCtxPopCurrent; cuCtxSetCurrent
// replaces the top). Context ids outlive resets, so a stale entry is found dead, not reused.
thread_local std::vector<std::uint64_t> t_ctx_stack;
}  // namespace

std::vector<std::uint64_t>& ctx_stack() {
  return t_ctx_stack;
}

std::uint64_t State::current_context() const {
  if (t_ctx_stack.empty()) return 0;
  const std::uint64_t c = t_ctx_stack.back();
  return contexts.count(c) ? c : 0;
}

Context* State::context(std::uint64_t id) {
  auto it = contexts.find(id);
  return it == contexts.end() ? nullptr : &it->second;
}

std::uint64_t State::new_stream(std::uint64_t ctx, unsigned flags, int priority) {
  const Context& c = contexts.at(ctx);
  const std::uint64_t id = next_id();
  Stream s;
  s.ctx = ctx;
  s.green = c.green;
  s.device = c.device;
  s.flags = flags;
  s.priority = priority;
  s.sms = c.green != 0 ? static_cast<int>(greens.at(c.green).sms.size())
                       : devices.at(static_cast<std::size_t>(c.device)).sms;
  s.time_ns = device_clock_ns_;
  streams.emplace(id, std::move(s));
  return id;
}

std::uint64_t State::default_stream(std::uint64_t ctx) {
  Context& c = contexts.at(ctx);
  if (c.default_stream == 0) c.default_stream = new_stream(ctx, 0, 0);
  return c.default_stream;
}

std::uint64_t State::stream_id(CUstream handle) {
  const auto v = reinterpret_cast<std::uint64_t>(handle);
  // NULL, CU_STREAM_LEGACY (0x1) and CU_STREAM_PER_THREAD (0x2) (cuda.h): the fake has one
  // default stream per context for all three.
  if (v <= 2) {
    const std::uint64_t ctx = current_context();
    return ctx == 0 ? 0 : default_stream(ctx);
  }
  const std::uint64_t id = handle_id(handle, Kind::kStream);
  auto it = streams.find(id);
  return it == streams.end() || it->second.destroyed ? 0 : id;
}

Stream* State::stream(CUstream handle) {
  const std::uint64_t id = stream_id(handle);
  return id == 0 ? nullptr : &streams.at(id);
}

std::uint64_t State::enqueue(std::uint64_t stream, Op op) {
  op.id = next_id();
  const std::uint64_t id = op.id;
  streams.at(stream).queue.push_back(std::move(op));
  return id;
}

void* State::check_range(std::uint64_t ptr, std::uint64_t bytes) const {
  auto it = allocations_.upper_bound(ptr);
  if (it == allocations_.begin()) return nullptr;
  --it;
  if (ptr + bytes < ptr || ptr + bytes > it->first + it->second.bytes) return nullptr;
  if (it->second.physical) return nullptr;  // a cuMemCreate handle is not an address
  return reinterpret_cast<void*>(ptr);
}

json State::log_json() const {
  return json{{"ops", ops_},
              {"calls", calls_},
              {"notes", notes_},
              {"green_contexts", green_log},
              {"init", init_log}};
}

std::recursive_mutex& state_mutex() {
  static std::recursive_mutex m;
  return m;
}

namespace {
json script_from_env() {
  const char* text = std::getenv("FAKE_CUDA_SCRIPT");
  if (text == nullptr || *text == '\0') return json::object();
  std::string body = text;
  if (body[0] == '@') {
    std::FILE* f = std::fopen(body.c_str() + 1, "rb");
    if (f == nullptr) throw std::runtime_error("FAKE_CUDA_SCRIPT: cannot open " + body.substr(1));
    std::string content;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) content.append(buf, n);
    std::fclose(f);
    body = content;
  }
  return json::parse(body);
}

void write_log_file() {
  const char* path = std::getenv("FAKE_CUDA_LOG");
  if (path == nullptr || *path == '\0') return;
  std::lock_guard lock(state_mutex());
  const std::string text = state().log_json().dump(1);
  if (std::FILE* f = std::fopen(path, "wb")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
}
}  // namespace

State& state() {
  auto& s = slot();
  if (!s) {
    try {
      s = std::make_unique<State>(script_from_env());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fake libcuda: FAKE_CUDA_SCRIPT rejected (%s); using the defaults\n",
                   e.what());
      s = std::make_unique<State>(json::object());
    }
    static const bool registered = [] { return std::atexit(write_log_file) == 0; }();
    (void)registered;
  }
  return *s;
}

void write_log_file_now() {
  write_log_file();
}

void replace_state(std::unique_ptr<State> next) {
  auto& s = slot();
  if (s) next->initialized = s->initialized && !next->no_device;
  // The old state's memory stays valid until now: tests may still hold pointers into it, but
  // after a reset none of them is meaningful.
  s = std::move(next);
  g_was_reset = true;
}

bool was_reset() {
  return g_was_reset;
}

}  // namespace fake_cuda
