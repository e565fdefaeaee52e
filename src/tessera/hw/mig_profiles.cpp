#include "tessera/hw/mig_profiles.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <utility>

#include "tessera/hw/gpu_spec.hpp"

// The MIG profile tables. Each number carries a tag naming its source:
//   [MIG-T6]  NVIDIA MIG User Guide (R580), "Supported MIG Profiles",
//             https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html,
//             Table 6 "GPU Instance Profiles on A100" (A100-SXM4-40GB names; the note under it
//             renames them for A100-SXM4-80GB: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb,
//             4g.40gb, 7g.80gb, same fractions and instance counts).
//   [MIG-T7]  Same page, Table 7 "GPU Instance Profiles on H100" (H100 80GB).
//   [MIG-T8]  Same page, Table 8 "GPU Instance Profiles on H200" (H200 141GB).
//   [LGIPP]   NVIDIA MIG User Guide (R580), "Getting Started with MIG",
//             https://docs.nvidia.com/datacenter/tesla/mig-user-guide/getting-started-with-mig.html,
//             `nvidia-smi mig -lgipp` on A100-SXM4-40GB: ID19 {0..6}:1, ID20 {0..6}:1,
//             ID15 {0,2,4,6}:2, ID14 {0,2,4}:2, ID9 {0,4}:4, ID5 {0}:4, ID0 {0}:8.
//   [NVML-H]  nvml.h, NVML_GPU_INSTANCE_PROFILE_* (NVIDIA/go-nvml pkg/nvml/nvml.h @ 075f45fd):
//             1_SLICE 0x0, 2_SLICE 0x1, 3_SLICE 0x2, 4_SLICE 0x3, 7_SLICE 0x4, 1_SLICE_REV1 0x7,
//             1_SLICE_REV2 0x9; NVIDIA DCGM's dcgm_structs.h also asserts
//             NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 == 0x09.
//   [SM-A100] SMs per A100 GPU instance: the "Getting Started with MIG" page above shows
//             42 SMs in a 3g GI; NVIDIA/go-nvml's A100-80GB mock (pkg/nvml/mock/shared/gpus/
//             a100.go) gives MultiprocessorCount 14/14/14/28/42/56/98 for 1g, 1g+me, 1g with
//             two memory slices, 2g, 3g, 4g, 7g (14 SMs per compute slice).
//   [SM-H100] `nvidia-smi mig -lgip` on an H100 80GB, posted at
//             https://jbarrow.ai/field_notes/nvidia-mig/: SM column 16 (1g.10gb, 1g.10gb+me),
//             26 (1g.20gb), 32 (2g.20gb), 60 (3g.40gb), 64 (4g.40gb), 132 (7g.80gb).
//   ASSUMPTION marks a value no source states; the comment says how it was chosen.
//
// Placement starts on H100 and H200 repeat [LGIPP]: the tables above give the same slice sizes
// and instance counts, and NVIDIA prints the placement listing only for A100. memory_bytes reads
// the profile name's GB as GiB ("1g.5gb" -> 5 GiB), the way the GPU catalog reads the boards'
// totals; nvidia-smi reports slightly less usable memory (4.75 GiB for 1g.5gb).

namespace tessera::hw {

namespace {

constexpr std::int64_t kGiB = 1024 * 1024 * 1024;

// NVML_GPU_INSTANCE_PROFILE_* indices [NVML-H].
constexpr int kNvml1Slice = 0x0;
constexpr int kNvml2Slice = 0x1;
constexpr int kNvml3Slice = 0x2;
constexpr int kNvml4Slice = 0x3;
constexpr int kNvml7Slice = 0x4;
constexpr int kNvml1SliceRev1 = 0x7;  // 1g+me
constexpr int kNvml1SliceRev2 = 0x9;  // 1g with two memory slices

// The memory sizes in the profile names of one board, in GB: 1g, 1g with two memory slices,
// 2g, 3g/4g, 7g.
struct NameSizes {
  int g1;
  int g1x2;
  int g2;
  int g3;
  int g7;
};

// SMs per profile: 1g, 1g with two memory slices, 2g, 3g, 4g, 7g.
struct SmCounts {
  int g1;
  int g1x2;
  int g2;
  int g3;
  int g4;
  int g7;
};

MigProfile make(int id, int nvml_index, std::string name, int compute, int memory, int gb, int sms,
                int max_instances, std::vector<int> starts, bool me) {
  return MigProfile{.id = id,
                    .nvml_index = nvml_index,
                    .name = std::move(name),
                    .compute_slices = compute,
                    .memory_slices = memory,
                    .memory_bytes = gb * kGiB,
                    .sms = sms,
                    .max_instances = max_instances,
                    .placement_starts = std::move(starts),
                    .media_extensions = me};
}

// The seven GPU-instance profiles every GPU here has: IDs, slices, instance counts and the
// names' pattern are the same in [MIG-T6], [MIG-T7] and [MIG-T8]; starts are [LGIPP].
MigGeometry geometry(std::string gpu, NameSizes gb, SmCounts sm) {
  auto n = [](int g, int size) { return fmt::format("{}g.{}gb", g, size); };
  MigGeometry geo;
  geo.gpu = std::move(gpu);
  geo.profiles = {
      make(19, kNvml1Slice, n(1, gb.g1), 1, 1, gb.g1, sm.g1, 7, {0, 1, 2, 3, 4, 5, 6}, false),
      make(20, kNvml1SliceRev1, n(1, gb.g1) + "+me", 1, 1, gb.g1, sm.g1, 1, {0, 1, 2, 3, 4, 5, 6},
           true),
      make(15, kNvml1SliceRev2, n(1, gb.g1x2), 1, 2, gb.g1x2, sm.g1x2, 4, {0, 2, 4, 6}, false),
      make(14, kNvml2Slice, n(2, gb.g2), 2, 2, gb.g2, sm.g2, 3, {0, 2, 4}, false),
      make(9, kNvml3Slice, n(3, gb.g3), 3, 4, gb.g3, sm.g3, 2, {0, 4}, false),
      make(5, kNvml4Slice, n(4, gb.g3), 4, 4, gb.g3, sm.g4, 1, {0}, false),
      make(0, kNvml7Slice, n(7, gb.g7), 7, 8, gb.g7, sm.g7, 1, {0}, false),
  };
  return geo;
}

// [SM-A100]
constexpr SmCounts kA100Sms{.g1 = 14, .g1x2 = 14, .g2 = 28, .g3 = 42, .g4 = 56, .g7 = 98};
// [SM-H100]
constexpr SmCounts kH100Sms{.g1 = 16, .g1x2 = 26, .g2 = 32, .g3 = 60, .g4 = 64, .g7 = 132};

std::vector<MigGeometry> build_catalog() {
  return {
      // [MIG-T6]: 1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb.
      geometry("A100-SXM4-40GB", {.g1 = 5, .g1x2 = 10, .g2 = 10, .g3 = 20, .g7 = 40}, kA100Sms),
      // [MIG-T6] note: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb.
      geometry("A100-SXM4-80GB", {.g1 = 10, .g1x2 = 20, .g2 = 20, .g3 = 40, .g7 = 80}, kA100Sms),
      // [MIG-T7]: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb.
      geometry("H100-SXM5-80GB", {.g1 = 10, .g1x2 = 20, .g2 = 20, .g3 = 40, .g7 = 80}, kH100Sms),
      // [MIG-T8]: 1g.18gb, 1g.18gb+me, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb.
      // ASSUMPTION: SMs as on H100 ([SM-H100]): the same GH100 die with 132 SMs and the same
      // compute slices; no H200 `-lgip` output was found.
      geometry("H200-SXM-141GB", {.g1 = 18, .g1x2 = 35, .g2 = 35, .g3 = 71, .g7 = 141}, kH100Sms),
  };
}

bool iequals(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

std::string profile_list(const MigGeometry& g) {
  std::string out;
  for (const MigProfile& p : g.profiles) {
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", p.name, p.id);
  }
  return out;
}

}  // namespace

const MigProfile* MigGeometry::find(int id) const {
  for (const MigProfile& p : profiles) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

core::Result<const MigProfile*> MigGeometry::find(std::string_view name_or_id) const {
  int id = 0;
  const char* end = name_or_id.data() + name_or_id.size();
  auto [ptr, ec] = std::from_chars(name_or_id.data(), end, id);
  if (!name_or_id.empty() && ec == std::errc() && ptr == end) {
    if (const MigProfile* p = find(id)) return p;
  }
  for (const MigProfile& p : profiles) {
    if (iequals(p.name, name_or_id)) return &p;
  }
  return core::failf(core::Domain::kHardware, core::Code::kNotFound,
                     "{} has no MIG profile '{}'; its profiles: {}", gpu, name_or_id,
                     profile_list(*this));
}

const MigProfile* MigGeometry::smallest_with_memory(std::int64_t bytes) const {
  const MigProfile* best = nullptr;
  for (const MigProfile& p : profiles) {
    if (p.media_extensions || p.memory_bytes < bytes) continue;
    if (best == nullptr || std::pair(p.memory_slices, p.compute_slices) <
                               std::pair(best->memory_slices, best->compute_slices)) {
      best = &p;
    }
  }
  return best;
}

core::Status check_mig_layout(const MigGeometry& g, const std::vector<MigSlot>& instances) {
  unsigned memory = 0;
  int compute = 0;
  int media = 0;
  for (std::size_t i = 0; i < instances.size(); ++i) {
    const MigSlot& s = instances[i];
    const MigProfile* p = g.find(s.profile_id);
    if (p == nullptr) {
      return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                         "instance {}: {} has no MIG profile {}; its profiles: {}", i, g.gpu,
                         s.profile_id, profile_list(g));
    }
    if (std::ranges::find(p->placement_starts, s.start) == p->placement_starts.end()) {
      return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                         "instance {} ({}@{}): {} cannot start at memory slice {}; starts: {}", i,
                         p->name, s.start, p->name, s.start, fmt::join(p->placement_starts, ","));
    }
    const unsigned mask = ((1u << p->memory_slices) - 1u) << s.start;
    if ((memory & mask) != 0) {
      return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                         "instance {} ({}@{}) overlaps the memory slices of another instance", i,
                         p->name, s.start);
    }
    memory |= mask;
    compute += p->compute_slices;
    if (compute > kMigComputeSlices) {
      return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                         "instance {} ({}@{}) brings the compute slices to {} of {}", i, p->name,
                         s.start, compute, kMigComputeSlices);
    }
    const auto same =
        std::ranges::count_if(instances.begin(), instances.begin() + i + 1,
                              [&](const MigSlot& o) { return o.profile_id == p->id; });
    if (same > p->max_instances) {
      return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                         "instance {} ({}@{}) is {} instance {} of at most {}", i, p->name, s.start,
                         p->name, same, p->max_instances);
    }
    if (p->media_extensions && ++media > 1) {
      return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                         "instance {} ({}@{}) is a second instance with the media extensions", i,
                         p->name, s.start);
    }
  }
  return {};
}

const std::vector<MigGeometry>& mig_catalog() {
  static const std::vector<MigGeometry> catalog = build_catalog();
  return catalog;
}

core::Result<MigGeometry> find_mig_geometry(std::string_view gpu) {
  std::string with_mig;
  for (const MigGeometry& g : mig_catalog()) {
    with_mig += with_mig.empty() ? g.gpu : ", " + g.gpu;
  }
  auto spec = find_gpu(gpu);
  if (spec) {
    for (const MigGeometry& g : mig_catalog()) {
      if (g.gpu == spec->name) return g;
    }
  }
  return core::failf(core::Domain::kHardware, core::Code::kNotFound,
                     "no MIG geometry for GPU '{}': MIG GPUs are {} (or the short names a100-40gb, "
                     "a100-80gb, h100, h200)",
                     gpu, with_mig);
}

}  // namespace tessera::hw
