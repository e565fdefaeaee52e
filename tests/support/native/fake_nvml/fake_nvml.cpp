// A fake libnvidia-ml.so for tests: one GPU in MIG mode, with the GPU-instance profiles, the
// placement rules and the error codes of the real driver, as far as tessera uses them.
//
// Environment:
//   FAKE_NVML_SCRIPT  JSON read at nvmlInit_v2 (when no other init is open):
//     {"gpu_name": "NVIDIA A100-SXM4-40GB", "mig_mode": 1, "mig_pending": 1, "energy": true,
//      "fail": [{"call": "nvmlGpuInstanceCreateComputeInstance", "nth": 1, "ret": 2}],
//      "memory_used_mib": {"<gpu instance id>": N},
//      "profiles": [{"name", "index", "id", "slices", "memory_slices", "instances", "sms",
//                    "memory_mib", "placements": [...], "media": false}, ...]}
//     `fail`: the nth call (from 1, counted since init) of `call` returns `ret` and does nothing.
//     Clocks, power and utilisation (defaults in State below):
//     {"memory_clocks": [1215], "graphics_clocks": [1410, ...], "sm_clock": 1410,
//      "clock_permission": true, "power_mw": 250000 or [per call, the last repeats],
//      "energy_mj": [per call, the last repeats] (default: +1000 mJ per call),
//      "utilization": {"gpu": 90, "memory": 40}}
//     Locking sets the current SM and graphics clock to the lock's maximum; a reset restores
//     `sm_clock`. Utilisation is NOT_SUPPORTED while MIG mode is on, as the header says.
//   FAKE_NVML_LOG     a file that gets one line per call: "<name> <args> -> <return>".
//   FAKE_NVML_STATE   a file that holds the GPU's instances across processes, as the driver does:
//     read at nvmlInit_v2 (when no other init is open), rewritten after every create and destroy.
//
// Every exported function is extern "C" and catches everything: no exception crosses the ABI.
// The NVML state lives from the first successful nvmlInit_v2 to the matching nvmlShutdown.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backends/nvml/nvml_api.hpp"

namespace nvml = tessera::cuda::nvml;

namespace {

struct Profile {
  std::string name;
  unsigned index;  // NVML_GPU_INSTANCE_PROFILE_*
  unsigned id;
  unsigned slices;  // compute slices
  unsigned memory_slices;
  unsigned instances;
  unsigned sms;
  unsigned long long memory_mib;
  std::vector<unsigned> placements;
  bool media;
};

// A100-SXM4-40GB: IDs, NVML indices, slices, instance counts, SMs and placements as in the NVIDIA
// MIG User Guide's A100 table and its `nvidia-smi mig -lgipp` example (the same sources as
// src/tessera/hw/mig_profiles.cpp, typed again here so the two can disagree). ASSUMPTION: the MiB
// figures approximate the GiB that `nvidia-smi mig -lgip` is commonly shown printing
// (4.75, 9.62, 19.50, 39.25); they were not read from a driver, and only the fake uses them.
std::vector<Profile> a100_40gb_profiles() {
  return {
      {"1g.5gb", 0x0, 19, 1, 1, 7, 14, 4864, {0, 1, 2, 3, 4, 5, 6}, false},
      {"1g.5gb+me", 0x7, 20, 1, 1, 1, 14, 4864, {0, 1, 2, 3, 4, 5, 6}, true},
      {"1g.10gb", 0x9, 15, 1, 2, 4, 14, 9856, {0, 2, 4, 6}, false},
      {"2g.10gb", 0x1, 14, 2, 2, 3, 28, 9856, {0, 2, 4}, false},
      {"3g.20gb", 0x2, 9, 3, 4, 2, 42, 19968, {0, 4}, false},
      {"4g.20gb", 0x3, 5, 4, 4, 1, 56, 19968, {0}, false},
      {"7g.40gb", 0x4, 0, 7, 8, 1, 98, 40192, {0}, false},
  };
}

std::vector<unsigned> a100_graphics_clocks() {
  std::vector<unsigned> clocks;
  for (unsigned c = 1410; c >= 210; c -= 15) clocks.push_back(c);
  return clocks;
}

struct GpuInstance {
  unsigned id;
  const Profile* profile;
  unsigned start;
  unsigned serial;  // makes each instance's MIG UUID new, as the driver's are
  bool has_ci = false;
  unsigned ci_profile = 0;
};

struct Failure {
  std::string call;
  int nth;
  int ret;
};

struct State {
  int inits = 0;
  std::string gpu_name = "NVIDIA A100-SXM4-40GB";
  unsigned mig_mode = 1;
  unsigned mig_pending = 1;
  bool energy = true;
  unsigned long long energy_mj = 0;
  std::vector<Profile> profiles = a100_40gb_profiles();
  std::vector<Failure> failures;
  std::map<unsigned, unsigned long long> memory_used_mib;
  std::map<std::string, int> calls;
  std::map<unsigned, GpuInstance> gis;  // by id
  unsigned serial = 0;
  // Clocks. ASSUMPTION: an A100-SXM4's lists as commonly shown by `nvidia-smi -q -d
  // SUPPORTED_CLOCKS` (one 1215 MHz memory clock, graphics 1410 down to 210 MHz in 15 MHz
  // steps); not read from a driver, and only the fake uses them.
  std::vector<unsigned> memory_clocks = {1215};
  std::vector<unsigned> graphics_clocks = a100_graphics_clocks();
  unsigned sm_clock = 1410;
  bool clock_permission = true;
  std::optional<std::pair<unsigned, unsigned>> locked;  // min, max
  std::vector<unsigned> power_mw = {250000};
  std::vector<unsigned long long> energy_script;  // empty: +1000 mJ per call
  std::size_t power_calls = 0;
  std::size_t energy_calls = 0;
  nvml::Utilization utilization = {90, 40};
};

std::mutex g_mutex;
State g_state;

constexpr std::uintptr_t kDeviceHandle = 0x1000;
constexpr std::uintptr_t kGiBase = 0x10000;
constexpr std::uintptr_t kCiBase = 0x20000;
constexpr std::uintptr_t kMigBase = 0x30000;
constexpr unsigned kComputeSlices = 7;
constexpr unsigned kMaxMigDevices = 7;
constexpr unsigned long long kMiB = 1024ull * 1024;

template <typename T>
T handle(std::uintptr_t v) {
  return reinterpret_cast<T>(v);
}
std::uintptr_t raw(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

void log_line(const std::string& line) {
  const char* path = std::getenv("FAKE_NVML_LOG");
  if (path == nullptr || *path == '\0') return;
  std::ofstream out(path, std::ios::app);
  out << line << '\n';
}

// Counts the call and returns the scripted failure for it, if this is the nth.
std::optional<int> scripted_failure(const std::string& call) {
  const int n = ++g_state.calls[call];
  for (const Failure& f : g_state.failures) {
    if (f.call == call && f.nth == n) return f.ret;
  }
  return std::nullopt;
}

void load_script() {
  g_state = State{};
  const char* path = std::getenv("FAKE_NVML_SCRIPT");
  if (path == nullptr || *path == '\0') return;
  std::ifstream in(path);
  if (!in) throw std::runtime_error(std::string("cannot read FAKE_NVML_SCRIPT ") + path);
  const nlohmann::json j = nlohmann::json::parse(in);
  g_state.gpu_name = j.value("gpu_name", g_state.gpu_name);
  g_state.mig_mode = j.value("mig_mode", 1u);
  g_state.mig_pending = j.value("mig_pending", g_state.mig_mode);
  g_state.energy = j.value("energy", true);
  const nlohmann::json failures = j.value("fail", nlohmann::json::array());
  for (const auto& f : failures) {
    g_state.failures.push_back(
        {f.at("call").get<std::string>(), f.value("nth", 1), f.value("ret", nvml::kErrorUnknown)});
  }
  const nlohmann::json used = j.value("memory_used_mib", nlohmann::json::object());
  for (const auto& [gi, mib] : used.items()) {
    g_state.memory_used_mib[static_cast<unsigned>(std::stoul(gi))] = mib.get<unsigned long long>();
  }
  g_state.memory_clocks = j.value("memory_clocks", g_state.memory_clocks);
  g_state.graphics_clocks = j.value("graphics_clocks", g_state.graphics_clocks);
  g_state.sm_clock = j.value("sm_clock", g_state.sm_clock);
  g_state.clock_permission = j.value("clock_permission", true);
  if (j.contains("power_mw")) {
    const nlohmann::json& p = j.at("power_mw");
    g_state.power_mw =
        p.is_array() ? p.get<std::vector<unsigned>>() : std::vector<unsigned>{p.get<unsigned>()};
  }
  g_state.energy_script = j.value("energy_mj", std::vector<unsigned long long>{});
  if (j.contains("utilization")) {
    g_state.utilization = {j.at("utilization").value("gpu", 0u),
                           j.at("utilization").value("memory", 0u)};
  }
  if (j.contains("profiles")) {
    g_state.profiles.clear();
    for (const auto& p : j.at("profiles")) {
      g_state.profiles.push_back({p.at("name"), p.at("index"), p.at("id"), p.at("slices"),
                                  p.at("memory_slices"), p.at("instances"), p.value("sms", 0u),
                                  p.value("memory_mib", 0ull), p.at("placements"),
                                  p.value("media", false)});
    }
  }
}

const Profile* profile_by_id(unsigned id);

const char* state_path() {
  const char* path = std::getenv("FAKE_NVML_STATE");
  return path != nullptr && *path != '\0' ? path : nullptr;
}

void load_gpu_state() {
  const char* path = state_path();
  if (path == nullptr) return;
  std::ifstream in(path);
  if (!in) return;  // no instances yet
  const nlohmann::json j = nlohmann::json::parse(in);
  g_state.serial = j.value("serial", 0u);
  for (const auto& g : j.value("gpu_instances", nlohmann::json::array())) {
    const Profile* p = profile_by_id(g.at("profile_id").get<unsigned>());
    if (p == nullptr) throw std::runtime_error("FAKE_NVML_STATE: unknown profile");
    const unsigned id = g.at("id").get<unsigned>();
    g_state.gis[id] = GpuInstance{id,
                                  p,
                                  g.at("start").get<unsigned>(),
                                  g.at("serial").get<unsigned>(),
                                  g.value("has_ci", false),
                                  g.value("ci_profile", 0u)};
  }
}

// Written whole to a temporary file and renamed over the old one, so a reader in another process
// never sees half of it.
void save_gpu_state() {
  const char* path = state_path();
  if (path == nullptr) return;
  nlohmann::json gis = nlohmann::json::array();
  for (const auto& [id, gi] : g_state.gis) {
    gis.push_back({{"id", id},
                   {"profile_id", gi.profile->id},
                   {"start", gi.start},
                   {"serial", gi.serial},
                   {"has_ci", gi.has_ci},
                   {"ci_profile", gi.ci_profile}});
  }
  const std::string tmp = std::string(path) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << nlohmann::json{{"serial", g_state.serial}, {"gpu_instances", gis}}.dump();
    if (!out) throw std::runtime_error("cannot write FAKE_NVML_STATE");
  }
  if (std::rename(tmp.c_str(), path) != 0)
    throw std::runtime_error("cannot replace FAKE_NVML_STATE");
}

const Profile* profile_by_index(unsigned index) {
  for (const Profile& p : g_state.profiles) {
    if (p.index == index) return &p;
  }
  return nullptr;
}
const Profile* profile_by_id(unsigned id) {
  for (const Profile& p : g_state.profiles) {
    if (p.id == id) return &p;
  }
  return nullptr;
}
GpuInstance* gi_of(nvml::GpuInstance h) {
  const std::uintptr_t v = raw(h);
  if (v < kGiBase || v >= kCiBase) return nullptr;
  const auto it = g_state.gis.find(static_cast<unsigned>(v - kGiBase));
  return it == g_state.gis.end() ? nullptr : &it->second;
}
GpuInstance* gi_of_ci(nvml::ComputeInstance h) {
  const std::uintptr_t v = raw(h);
  if (v < kCiBase || v >= kMigBase) return nullptr;
  const auto it = g_state.gis.find(static_cast<unsigned>(v - kCiBase));
  return it == g_state.gis.end() || !it->second.has_ci ? nullptr : &it->second;
}
GpuInstance* gi_of_mig(nvml::Device h) {
  const std::uintptr_t v = raw(h);
  if (v < kMigBase) return nullptr;
  const auto it = g_state.gis.find(static_cast<unsigned>(v - kMigBase));
  return it == g_state.gis.end() || !it->second.has_ci ? nullptr : &it->second;
}
bool is_parent(nvml::Device h) {
  return raw(h) == kDeviceHandle;
}

// Compute slices of NVML_COMPUTE_INSTANCE_PROFILE_<n>_SLICE indices 0..6 (nvml_api.hpp).
constexpr unsigned kCiSlices[] = {1, 2, 3, 4, 7, 8, 6};

// The create rules the driver applies: a valid placement start, no overlapping memory slices,
// at most 7 compute slices, the profile's instance count, one media-extension holder.
nvml::Return check_create(const Profile& p, unsigned start, unsigned size) {
  bool valid_start = false;
  for (unsigned s : p.placements) valid_start = valid_start || s == start;
  if (!valid_start || size != p.memory_slices) return nvml::kErrorInvalidArgument;
  unsigned slices = p.slices;
  unsigned same = 0;
  for (const auto& [id, gi] : g_state.gis) {
    const unsigned a0 = gi.start, a1 = gi.start + gi.profile->memory_slices;
    if (start < a1 && a0 < start + size) return nvml::kErrorInsufficientResources;
    slices += gi.profile->slices;
    if (gi.profile->id == p.id) ++same;
    if (p.media && gi.profile->media) return nvml::kErrorInsufficientResources;
  }
  if (slices > kComputeSlices || same >= p.instances) return nvml::kErrorInsufficientResources;
  return nvml::kSuccess;
}

template <typename Body>
nvml::Return guarded(const char* call, const std::string& args, Body body) {
  try {
    std::lock_guard lock(g_mutex);
    nvml::Return r;
    if (std::string(call) != "nvmlInit_v2" && g_state.inits == 0) {
      r = nvml::kErrorUninitialized;
    } else if (auto f = scripted_failure(call)) {
      r = *f;
    } else {
      r = body();
      const std::string_view name(call);
      if (r == nvml::kSuccess && (name.find("Create") != std::string_view::npos ||
                                  name.find("Destroy") != std::string_view::npos)) {
        save_gpu_state();
      }
    }
    log_line(std::string(call) + (args.empty() ? "" : " " + args) + " -> " + std::to_string(r));
    return r;
  } catch (const std::exception& e) {
    log_line(std::string(call) + " threw: " + e.what());
    return nvml::kErrorUnknown;
  } catch (...) {
    return nvml::kErrorUnknown;
  }
}

void copy_string(const std::string& s, char* out, unsigned length) {
  std::snprintf(out, length, "%s", s.c_str());
}

std::string num(unsigned long long v) {
  return std::to_string(v);
}

}  // namespace

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_NVML_EXPORT nvml::Return nvmlInit_v2() {
  try {
    std::lock_guard lock(g_mutex);
    if (g_state.inits == 0) {
      load_script();
      load_gpu_state();
    }
  } catch (const std::exception& e) {
    log_line(std::string("nvmlInit_v2 script error: ") + e.what());
    return nvml::kErrorUnknown;
  }
  return guarded("nvmlInit_v2", "", [] {
    ++g_state.inits;
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlShutdown() {
  return guarded("nvmlShutdown", "", [] {
    --g_state.inits;
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvml::Return r) {
  switch (r) {
    case nvml::kSuccess: return "Success";
    case nvml::kErrorUninitialized: return "Uninitialized";
    case nvml::kErrorInvalidArgument: return "Invalid Argument";
    case nvml::kErrorNotSupported: return "Not Supported";
    case nvml::kErrorNoPermission: return "Insufficient Permissions";
    case nvml::kErrorNotFound: return "Not Found";
    case nvml::kErrorInsufficientSize: return "Insufficient Size";
    case nvml::kErrorDriverNotLoaded: return "Driver Not Loaded";
    case nvml::kErrorInUse: return "In use by another client";
    case nvml::kErrorInsufficientResources: return "Insufficient Resources";
    default: return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetHandleByIndex_v2(unsigned index, nvml::Device* device) {
  return guarded("nvmlDeviceGetHandleByIndex_v2", "index=" + num(index), [&] {
    if (index != 0 || device == nullptr) return nvml::kErrorInvalidArgument;
    *device = handle<nvml::Device>(kDeviceHandle);
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetName(nvml::Device device, char* name, unsigned length) {
  return guarded("nvmlDeviceGetName", "", [&] {
    if ((!is_parent(device) && gi_of_mig(device) == nullptr) || name == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    copy_string(g_state.gpu_name, name, length);
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetUUID(nvml::Device device, char* uuid, unsigned length) {
  return guarded("nvmlDeviceGetUUID", "", [&] {
    if (uuid == nullptr) return nvml::kErrorInvalidArgument;
    char text[nvml::kDeviceUuidV2BufferSize];
    if (is_parent(device)) {
      std::snprintf(text, sizeof text, "GPU-fa4e0000-0000-4000-8000-000000000000");
    } else if (const GpuInstance* gi = gi_of_mig(device)) {
      std::snprintf(text, sizeof text, "MIG-fa4e%04x-0000-4000-8000-%012x", gi->id, gi->serial);
    } else {
      return nvml::kErrorInvalidArgument;
    }
    if (std::strlen(text) + 1 > length) return nvml::kErrorInsufficientSize;
    copy_string(text, uuid, length);
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetMemoryInfo(nvml::Device device, nvml::Memory* memory) {
  return guarded("nvmlDeviceGetMemoryInfo", "", [&] {
    if (memory == nullptr) return nvml::kErrorInvalidArgument;
    if (is_parent(device)) {
      *memory = {40960 * kMiB, 40960 * kMiB, 0};
      return nvml::kSuccess;
    }
    const GpuInstance* gi = gi_of_mig(device);
    if (gi == nullptr) return nvml::kErrorInvalidArgument;
    const unsigned long long total = gi->profile->memory_mib * kMiB;
    const auto it = g_state.memory_used_mib.find(gi->id);
    const unsigned long long used = it == g_state.memory_used_mib.end() ? 0 : it->second * kMiB;
    *memory = {total, total > used ? total - used : 0, used};
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetTotalEnergyConsumption(nvml::Device device,
                                                                  unsigned long long* energy) {
  return guarded("nvmlDeviceGetTotalEnergyConsumption", "", [&] {
    if (!is_parent(device) || energy == nullptr) return nvml::kErrorInvalidArgument;
    if (!g_state.energy) return nvml::kErrorNotSupported;
    if (g_state.energy_script.empty()) {
      g_state.energy_mj += 1000;  // 1 J per reading: deterministic, increasing
    } else {
      const std::size_t i = std::min(g_state.energy_calls++, g_state.energy_script.size() - 1);
      g_state.energy_mj = g_state.energy_script[i];
    }
    *energy = g_state.energy_mj;
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetMigMode(nvml::Device device, unsigned* current,
                                                   unsigned* pending) {
  return guarded("nvmlDeviceGetMigMode", "", [&] {
    if (!is_parent(device) || current == nullptr || pending == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *current = g_state.mig_mode;
    *pending = g_state.mig_pending;
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetGpuInstanceProfileInfo(
    nvml::Device device, unsigned profile, nvml::GpuInstanceProfileInfo* info) {
  return guarded("nvmlDeviceGetGpuInstanceProfileInfo", "profile=" + num(profile), [&] {
    if (!is_parent(device) || info == nullptr) return nvml::kErrorInvalidArgument;
    if (g_state.mig_mode != 1) return nvml::kErrorNotSupported;
    const Profile* p = profile_by_index(profile);
    if (p == nullptr) return nvml::kErrorNotSupported;
    *info = {};
    info->id = p->id;
    info->sliceCount = p->slices;
    info->instanceCount = p->instances;
    info->multiprocessorCount = p->sms;
    info->memorySizeMB = p->memory_mib;
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceCreateGpuInstanceWithPlacement(
    nvml::Device device, unsigned profile_id, const nvml::GpuInstancePlacement* placement,
    nvml::GpuInstance* gpu_instance) {
  const std::string args =
      "profileId=" + num(profile_id) +
      (placement ? " start=" + num(placement->start) + " size=" + num(placement->size) : "");
  return guarded("nvmlDeviceCreateGpuInstanceWithPlacement", args, [&] {
    if (!is_parent(device) || placement == nullptr || gpu_instance == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    if (g_state.mig_mode != 1) return nvml::kErrorNotSupported;
    const Profile* p = profile_by_id(profile_id);
    if (p == nullptr) return nvml::kErrorInvalidArgument;
    const nvml::Return r = check_create(*p, placement->start, placement->size);
    if (r != nvml::kSuccess) return r;
    unsigned id = 1;
    while (g_state.gis.contains(id)) ++id;
    g_state.gis[id] = GpuInstance{id, p, placement->start, ++g_state.serial};
    *gpu_instance = handle<nvml::GpuInstance>(kGiBase + id);
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlGpuInstanceDestroy(nvml::GpuInstance gpu_instance) {
  const GpuInstance* target = nullptr;
  {
    std::lock_guard lock(g_mutex);
    target = gi_of(gpu_instance);
  }
  const std::string args = "id=" + (target ? num(target->id) : std::string("?"));
  return guarded("nvmlGpuInstanceDestroy", args, [&] {
    GpuInstance* gi = gi_of(gpu_instance);
    if (gi == nullptr) return nvml::kErrorInvalidArgument;
    if (gi->has_ci) return nvml::kErrorInUse;
    g_state.gis.erase(gi->id);
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetGpuInstances(nvml::Device device, unsigned profile_id,
                                                        nvml::GpuInstance* gpu_instances,
                                                        unsigned* count) {
  return guarded("nvmlDeviceGetGpuInstances", "profileId=" + num(profile_id), [&] {
    if (!is_parent(device) || gpu_instances == nullptr || count == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    const Profile* p = profile_by_id(profile_id);
    if (p == nullptr) return nvml::kErrorInvalidArgument;
    unsigned n = 0;
    for (const auto& [id, gi] : g_state.gis) {
      if (gi.profile != p) continue;
      if (n == p->instances) return nvml::kErrorInsufficientSize;
      gpu_instances[n++] = handle<nvml::GpuInstance>(kGiBase + id);
    }
    *count = n;
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlGpuInstanceGetInfo(nvml::GpuInstance gpu_instance,
                                                     nvml::GpuInstanceInfo* info) {
  return guarded("nvmlGpuInstanceGetInfo", "", [&] {
    const GpuInstance* gi = gi_of(gpu_instance);
    if (gi == nullptr || info == nullptr) return nvml::kErrorInvalidArgument;
    info->device = handle<nvml::Device>(kDeviceHandle);
    info->id = gi->id;
    info->profileId = gi->profile->id;
    info->placement = {gi->start, gi->profile->memory_slices};
    return nvml::kSuccess;
  });
}

// Compute-instance profile IDs equal their indices here. ASSUMPTION: `nvidia-smi mig -lcip` on
// an A100 lists them that way; tessera reads the ID from the info either way.
FAKE_NVML_EXPORT nvml::Return nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvml::GpuInstance gpu_instance, unsigned profile, unsigned eng_profile,
    nvml::ComputeInstanceProfileInfo* info) {
  return guarded(
      "nvmlGpuInstanceGetComputeInstanceProfileInfo",
      "profile=" + num(profile) + " engProfile=" + num(eng_profile), [&] {
        const GpuInstance* gi = gi_of(gpu_instance);
        if (gi == nullptr || info == nullptr ||
            eng_profile != nvml::kComputeInstanceEngineProfileShared ||
            profile >= nvml::kComputeInstanceProfileCount) {
          return nvml::kErrorInvalidArgument;
        }
        if (profile >= std::size(kCiSlices) || kCiSlices[profile] > gi->profile->slices) {
          return nvml::kErrorNotSupported;
        }
        *info = {};
        info->id = profile;
        info->sliceCount = kCiSlices[profile];
        info->instanceCount = gi->profile->slices / kCiSlices[profile];
        info->multiprocessorCount = gi->profile->sms / gi->profile->slices * kCiSlices[profile];
        return nvml::kSuccess;
      });
}

FAKE_NVML_EXPORT nvml::Return nvmlGpuInstanceCreateComputeInstance(
    nvml::GpuInstance gpu_instance, unsigned profile_id, nvml::ComputeInstance* compute_instance) {
  return guarded("nvmlGpuInstanceCreateComputeInstance", "profileId=" + num(profile_id), [&] {
    GpuInstance* gi = gi_of(gpu_instance);
    if (gi == nullptr || compute_instance == nullptr || profile_id >= std::size(kCiSlices)) {
      return nvml::kErrorInvalidArgument;
    }
    if (kCiSlices[profile_id] > gi->profile->slices) return nvml::kErrorNotSupported;
    if (gi->has_ci) return nvml::kErrorInsufficientResources;  // one per instance here
    gi->has_ci = true;
    gi->ci_profile = profile_id;
    *compute_instance = handle<nvml::ComputeInstance>(kCiBase + gi->id);
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlGpuInstanceGetComputeInstances(
    nvml::GpuInstance gpu_instance, unsigned profile_id, nvml::ComputeInstance* compute_instances,
    unsigned* count) {
  return guarded("nvmlGpuInstanceGetComputeInstances", "profileId=" + num(profile_id), [&] {
    const GpuInstance* gi = gi_of(gpu_instance);
    if (gi == nullptr || compute_instances == nullptr || count == nullptr) {
      return nvml::kErrorInvalidArgument;
    }
    *count = 0;
    if (gi->has_ci && gi->ci_profile == profile_id) {
      compute_instances[0] = handle<nvml::ComputeInstance>(kCiBase + gi->id);
      *count = 1;
    }
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlComputeInstanceDestroy(nvml::ComputeInstance compute_instance) {
  return guarded("nvmlComputeInstanceDestroy", "", [&] {
    GpuInstance* gi = gi_of_ci(compute_instance);
    if (gi == nullptr) return nvml::kErrorInvalidArgument;
    gi->has_ci = false;
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetMaxMigDeviceCount(nvml::Device device, unsigned* count) {
  return guarded("nvmlDeviceGetMaxMigDeviceCount", "", [&] {
    if (!is_parent(device) || count == nullptr) return nvml::kErrorInvalidArgument;
    *count = g_state.mig_mode == 1 ? kMaxMigDevices : 0;
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetMigDeviceHandleByIndex(nvml::Device device,
                                                                  unsigned index,
                                                                  nvml::Device* mig_device) {
  return guarded("nvmlDeviceGetMigDeviceHandleByIndex", "index=" + num(index), [&] {
    if (!is_parent(device) || mig_device == nullptr || index >= kMaxMigDevices) {
      return nvml::kErrorInvalidArgument;
    }
    unsigned n = 0;
    for (const auto& [id, gi] : g_state.gis) {
      if (!gi.has_ci) continue;
      if (n++ == index) {
        *mig_device = handle<nvml::Device>(kMigBase + id);
        return nvml::kSuccess;
      }
    }
    return nvml::kErrorNotFound;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetGpuInstanceId(nvml::Device device, unsigned* id) {
  return guarded("nvmlDeviceGetGpuInstanceId", "", [&] {
    const GpuInstance* gi = gi_of_mig(device);
    if (gi == nullptr || id == nullptr) return nvml::kErrorInvalidArgument;
    *id = gi->id;
    return nvml::kSuccess;
  });
}

// Fills `out` (room for *count) with `values`; INSUFFICIENT_SIZE with the needed count when it
// does not fit, as the header documents for the supported-clock lists.
static nvml::Return fill_list(const std::vector<unsigned>& values, unsigned* count, unsigned* out) {
  if (count == nullptr) return nvml::kErrorInvalidArgument;
  if (*count < values.size()) {
    *count = static_cast<unsigned>(values.size());
    return nvml::kErrorInsufficientSize;
  }
  if (out == nullptr) return nvml::kErrorInvalidArgument;
  std::copy(values.begin(), values.end(), out);
  *count = static_cast<unsigned>(values.size());
  return nvml::kSuccess;
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetSupportedMemoryClocks(nvml::Device device,
                                                                 unsigned* count,
                                                                 unsigned* clocks) {
  return guarded("nvmlDeviceGetSupportedMemoryClocks", "", [&] {
    if (!is_parent(device)) return nvml::kErrorInvalidArgument;
    return fill_list(g_state.memory_clocks, count, clocks);
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetSupportedGraphicsClocks(nvml::Device device,
                                                                   unsigned memory_mhz,
                                                                   unsigned* count,
                                                                   unsigned* clocks) {
  return guarded("nvmlDeviceGetSupportedGraphicsClocks", "memory=" + num(memory_mhz), [&] {
    if (!is_parent(device)) return nvml::kErrorInvalidArgument;
    const auto& mem = g_state.memory_clocks;
    if (std::find(mem.begin(), mem.end(), memory_mhz) == mem.end()) return nvml::kErrorNotFound;
    return fill_list(g_state.graphics_clocks, count, clocks);
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetClock(nvml::Device device, int type, int id,
                                                 unsigned* mhz) {
  return guarded("nvmlDeviceGetClock", "type=" + num(type) + " id=" + num(id), [&] {
    if (!is_parent(device) || mhz == nullptr) return nvml::kErrorInvalidArgument;
    if (id != nvml::kClockIdCurrent) return nvml::kErrorNotSupported;
    if (type == nvml::kClockMem) {
      if (g_state.memory_clocks.empty()) return nvml::kErrorNotSupported;
      *mhz = g_state.memory_clocks.front();
      return nvml::kSuccess;
    }
    if (type != nvml::kClockSm && type != nvml::kClockGraphics) return nvml::kErrorNotSupported;
    *mhz = g_state.locked ? g_state.locked->second : g_state.sm_clock;
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceSetGpuLockedClocks(nvml::Device device, unsigned min_mhz,
                                                           unsigned max_mhz) {
  return guarded(
      "nvmlDeviceSetGpuLockedClocks", "min=" + num(min_mhz) + " max=" + num(max_mhz), [&] {
        if (!is_parent(device) || min_mhz > max_mhz) return nvml::kErrorInvalidArgument;
        if (!g_state.clock_permission) return nvml::kErrorNoPermission;
        const auto [lo, hi] =
            std::minmax_element(g_state.graphics_clocks.begin(), g_state.graphics_clocks.end());
        if (lo == g_state.graphics_clocks.end() || min_mhz < *lo || max_mhz > *hi) {
          return nvml::kErrorInvalidArgument;
        }
        g_state.locked = std::make_pair(min_mhz, max_mhz);
        return nvml::kSuccess;
      });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceResetGpuLockedClocks(nvml::Device device) {
  return guarded("nvmlDeviceResetGpuLockedClocks", "", [&] {
    if (!is_parent(device)) return nvml::kErrorInvalidArgument;
    if (!g_state.clock_permission) return nvml::kErrorNoPermission;
    g_state.locked.reset();
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetPowerUsage(nvml::Device device, unsigned* milliwatts) {
  return guarded("nvmlDeviceGetPowerUsage", "", [&] {
    if (!is_parent(device) || milliwatts == nullptr) return nvml::kErrorInvalidArgument;
    if (g_state.power_mw.empty()) return nvml::kErrorNotSupported;
    *milliwatts = g_state.power_mw[std::min(g_state.power_calls++, g_state.power_mw.size() - 1)];
    return nvml::kSuccess;
  });
}

FAKE_NVML_EXPORT nvml::Return nvmlDeviceGetUtilizationRates(nvml::Device device,
                                                            nvml::Utilization* utilization) {
  return guarded("nvmlDeviceGetUtilizationRates", "", [&] {
    if (!is_parent(device) || utilization == nullptr) return nvml::kErrorInvalidArgument;
    if (g_state.mig_mode == 1) return nvml::kErrorNotSupported;
    *utilization = g_state.utilization;
    return nvml::kSuccess;
  });
}
