// NvmlMigDevice's instance control: opening the GPU and checking its MIG profiles against the
// catalog, and creating, listing and destroying GPU instances (each with one compute instance
// spanning it) through NVML.

#include <algorithm>
#include <array>

#include "tessera/backends/nvml/internal/nvml_mig_records.hpp"
#include "tessera/backends/nvml/nvml_mig_device.hpp"
#include "tessera/core/try.hpp"
#include "tessera/hw/gpu_spec.hpp"

namespace tessera::cuda {

namespace {

// The compute-instance profile index whose compute instance spans a whole GPU instance of
// `compute_slices` slices (NVML_COMPUTE_INSTANCE_PROFILE_<n>_SLICE, nvml_api.hpp).
core::Result<unsigned> full_compute_profile_index(int compute_slices) {
  switch (compute_slices) {
    case 1: return nvml::kComputeInstanceProfile1Slice;
    case 2: return nvml::kComputeInstanceProfile2Slice;
    case 3: return nvml::kComputeInstanceProfile3Slice;
    case 4: return nvml::kComputeInstanceProfile4Slice;
    case 6: return nvml::kComputeInstanceProfile6Slice;
    case 7: return nvml::kComputeInstanceProfile7Slice;
    case 8: return nvml::kComputeInstanceProfile8Slice;
    default:
      return core::failf(core::Domain::kNvml, core::Code::kUnsupported,
                         "no NVML compute-instance profile spans {} compute slices",
                         compute_slices);
  }
}

}  // namespace

NvmlMigDevice::NvmlMigDevice(std::shared_ptr<NvmlLibrary> library, nvml::Device device,
                             unsigned gpu_index, hw::MigGeometry geometry, NvmlMigOptions options)
    : library_(std::move(library)),
      device_(device),
      gpu_index_(gpu_index),
      geometry_(std::move(geometry)),
      options_(std::move(options)) {}

core::Result<std::unique_ptr<NvmlMigDevice>> NvmlMigDevice::open(
    std::shared_ptr<NvmlLibrary> library, unsigned gpu_index, NvmlMigOptions options) {
  if (library == nullptr) {
    return core::fail(core::Domain::kNvml, core::Code::kInvalidArgument,
                      "NvmlMigDevice::open needs a loaded NVML library");
  }
  const NvmlApi& api = library->api();
  nvml::Device dev = nullptr;
  TESSERA_TRY(core::with_context(library->check(api.device_get_handle_by_index(gpu_index, &dev),
                                                "nvmlDeviceGetHandleByIndex_v2"),
                                 fmt::format("cannot open GPU {}", gpu_index)));

  std::array<char, nvml::kDeviceNameV2BufferSize> name_buf{};
  TESSERA_TRY(library->check(api.device_get_name(dev, name_buf.data(), name_buf.size()),
                             "nvmlDeviceGetName"));
  const std::string name(name_buf.data());

  unsigned current = 0;
  unsigned pending = 0;
  const nvml::Return mig = api.device_get_mig_mode(dev, &current, &pending);
  if (mig == nvml::kErrorNotSupported) {
    return core::failf(core::Domain::kNvml, core::Code::kUnsupported,
                       "GPU {} ({}) does not support MIG", gpu_index, name);
  }
  TESSERA_TRY(library->check(mig, "nvmlDeviceGetMigMode"));
  if (current != nvml::kDeviceMigEnable) {
    if (pending == nvml::kDeviceMigEnable) {
      return core::failf(core::Domain::kNvml, core::Code::kFailedPrecondition,
                         "MIG mode on GPU {} ({}) is enabled but not yet active: reset the GPU "
                         "(`sudo nvidia-smi -i {} -r`, with no process using it) or reboot",
                         gpu_index, name, gpu_index);
    }
    return core::failf(core::Domain::kNvml, core::Code::kFailedPrecondition,
                       "MIG mode is disabled on GPU {} ({}): enable it with `sudo nvidia-smi -i {} "
                       "-mig 1` (it may ask for a GPU reset)",
                       gpu_index, name, gpu_index);
  }

  std::string catalog = options.gpu;
  if (catalog.empty()) catalog = hw::gpu_for_device_name(name).value_or(name);
  auto geometry = hw::find_mig_geometry(catalog);
  if (!geometry) {
    return std::unexpected(geometry.error().with_context(fmt::format(
        "GPU {} reports itself as '{}'; if it is one of the catalog's boards, name it explicitly",
        gpu_index, name)));
  }

  std::unique_ptr<NvmlMigDevice> d(
      new NvmlMigDevice(library, dev, gpu_index, std::move(*geometry), std::move(options)));

  // The catalog's profile IDs and slice counts must be the driver's: the scheduler plans with
  // the first and NVML creates with the second.
  std::string mismatches;
  for (const hw::MigProfile& p : d->geometry_.profiles) {
    nvml::GpuInstanceProfileInfo info{};
    const nvml::Return r =
        api.device_get_gpu_instance_profile_info(dev, static_cast<unsigned>(p.nvml_index), &info);
    std::string problem;
    if (r != nvml::kSuccess) {
      problem = fmt::format("NVML index {}: {}", p.nvml_index, library->error_string(r));
    } else if (info.id != static_cast<unsigned>(p.id) ||
               info.sliceCount != static_cast<unsigned>(p.compute_slices)) {
      problem = fmt::format(
          "the catalog has ID {} with {} compute slices, NVML index {} reports ID {} with {}", p.id,
          p.compute_slices, p.nvml_index, info.id, info.sliceCount);
    } else {
      d->nvml_instance_count_[p.id] = info.instanceCount;
    }
    if (!problem.empty()) {
      mismatches += fmt::format("{}{}: {}", mismatches.empty() ? "" : "; ", p.name, problem);
    }
  }
  if (!mismatches.empty()) {
    return core::failf(core::Domain::kNvml, core::Code::kFailedPrecondition,
                       "GPU {} ({}) does not match the {} MIG profiles of the catalog "
                       "(src/tessera/hw/mig_profiles.cpp): {}",
                       gpu_index, name, d->geometry_.gpu, mismatches);
  }

  if (api.device_get_total_energy_consumption != nullptr &&
      api.device_get_total_energy_consumption(dev, &d->energy_start_mj_) == nvml::kSuccess) {
    d->energy_ = true;
  }
  d->opened_at_ = d->executor_.now();
  return d;
}

device::MigCapabilities NvmlMigDevice::capabilities() const {
  return {.reconfigure = true, .memory_samples = true, .energy = energy_};
}

core::Result<nvml::Device> NvmlMigDevice::find_mig_device(unsigned gi_id) const {
  unsigned count = 0;
  TESSERA_TRY(check(api().device_get_max_mig_device_count(device_, &count),
                    "nvmlDeviceGetMaxMigDeviceCount"));
  for (unsigned i = 0; i < count; ++i) {
    nvml::Device mig = nullptr;
    const nvml::Return r = api().device_get_mig_device_handle_by_index(device_, i, &mig);
    if (r == nvml::kErrorNotFound) continue;  // no MIG device at this index
    TESSERA_TRY(check(r, "nvmlDeviceGetMigDeviceHandleByIndex"));
    unsigned id = 0;
    TESSERA_TRY(check(api().device_get_gpu_instance_id(mig, &id), "nvmlDeviceGetGpuInstanceId"));
    if (id == gi_id) return mig;
  }
  return core::failf(core::Domain::kNvml, core::Code::kNotFound,
                     "GPU instance {} on GPU {} has no MIG device (no compute instance?)", gi_id,
                     gpu_index_);
}

core::Result<std::string> NvmlMigDevice::uuid_of(nvml::Device mig_device) const {
  std::array<char, nvml::kDeviceUuidV2BufferSize> buf{};
  TESSERA_TRY(
      check(api().device_get_uuid(mig_device, buf.data(), buf.size()), "nvmlDeviceGetUUID"));
  return std::string(buf.data());
}

core::Result<std::vector<NvmlMigDevice::GpuInstanceEntry>> NvmlMigDevice::list_gpu_instances()
    const {
  std::vector<GpuInstanceEntry> out;
  for (const hw::MigProfile& p : geometry_.profiles) {
    // nvmlDeviceGetGpuInstances wants room for the profile's instanceCount.
    const auto known = nvml_instance_count_.find(p.id);
    const unsigned capacity = std::max(known != nvml_instance_count_.end() ? known->second : 0u,
                                       static_cast<unsigned>(std::max(p.max_instances, 1)));
    std::vector<nvml::GpuInstance> gis(capacity);
    unsigned count = 0;
    TESSERA_TRY(check(
        api().device_get_gpu_instances(device_, static_cast<unsigned>(p.id), gis.data(), &count),
        "nvmlDeviceGetGpuInstances"));
    for (unsigned i = 0; i < std::min(count, capacity); ++i) {
      GpuInstanceEntry e{.gi = gis[i], .info = {}, .profile = &p};
      TESSERA_TRY(check(api().gpu_instance_get_info(gis[i], &e.info), "nvmlGpuInstanceGetInfo"));
      out.push_back(e);
    }
  }
  return out;
}

core::Result<std::vector<device::MigInstance>> NvmlMigDevice::query_instances() const {
  TESSERA_ASSIGN_OR_RETURN(const auto entries, list_gpu_instances());
  std::vector<device::MigInstance> out;
  for (const GpuInstanceEntry& e : entries) {
    device::MigInstance inst{.id = e.info.id,
                             .profile_id = e.profile->id,
                             .start = static_cast<int>(e.info.placement.start),
                             .uuid = {},
                             .memory_bytes = e.profile->memory_bytes,
                             .sms = e.profile->sms};
    if (const auto it = created_.find(e.info.id); it != created_.end()) {
      inst.uuid = it->second->info.uuid;
    } else if (auto mig = find_mig_device(e.info.id)) {
      // Not tessera's: its UUID if it has a compute instance, else none (start_job refuses).
      if (auto uuid = uuid_of(*mig)) inst.uuid = *uuid;
    }
    out.push_back(std::move(inst));
  }
  std::ranges::sort(out, {}, &device::MigInstance::start);
  return out;
}

std::vector<device::MigInstance> NvmlMigDevice::instances() const {
  if (auto all = query_instances()) return *std::move(all);
  std::vector<device::MigInstance> ours;
  for (const auto& [id, inst] : created_) ours.push_back(inst->info);
  std::ranges::sort(ours, {}, &device::MigInstance::start);
  return ours;
}

core::Result<NvmlMigDevice::Instance> NvmlMigDevice::find_instance(device::MigInstanceId id) const {
  if (const auto it = created_.find(id); it != created_.end()) return *it->second;
  TESSERA_ASSIGN_OR_RETURN(const auto entries, list_gpu_instances());
  for (const GpuInstanceEntry& e : entries) {
    if (e.info.id != id) continue;
    Instance inst;
    inst.gi = e.gi;
    inst.info = {.id = id,
                 .profile_id = e.profile->id,
                 .start = static_cast<int>(e.info.placement.start),
                 .uuid = {},
                 .memory_bytes = e.profile->memory_bytes,
                 .sms = e.profile->sms};
    if (auto mig = find_mig_device(id)) {
      inst.mig = *mig;
      TESSERA_ASSIGN_OR_RETURN(inst.info.uuid, uuid_of(*mig));
    }
    return inst;
  }
  return core::failf(core::Domain::kNvml, core::Code::kNotFound,
                     "GPU {} has no GPU instance {} of a catalog profile", gpu_index_, id);
}

core::Status NvmlMigDevice::destroy_gpu_instance(nvml::GpuInstance gi) const {
  for (unsigned index = 0; index < nvml::kComputeInstanceProfileCount; ++index) {
    nvml::ComputeInstanceProfileInfo info{};
    const nvml::Return r = api().gpu_instance_get_compute_instance_profile_info(
        gi, index, nvml::kComputeInstanceEngineProfileShared, &info);
    if (r == nvml::kErrorNotSupported || r == nvml::kErrorInvalidArgument) continue;
    TESSERA_TRY(check(r, "nvmlGpuInstanceGetComputeInstanceProfileInfo"));
    std::vector<nvml::ComputeInstance> cis(std::max(info.instanceCount, 1u));
    unsigned count = 0;
    TESSERA_TRY(check(api().gpu_instance_get_compute_instances(gi, info.id, cis.data(), &count),
                      "nvmlGpuInstanceGetComputeInstances"));
    for (unsigned i = 0; i < std::min<std::size_t>(count, cis.size()); ++i) {
      TESSERA_TRY(check(api().compute_instance_destroy(cis[i]), "nvmlComputeInstanceDestroy"));
    }
  }
  return check(api().gpu_instance_destroy(gi), "nvmlGpuInstanceDestroy");
}

core::Result<device::MigInstance> NvmlMigDevice::create_instance(int profile_id, int start) {
  const hw::MigProfile* p = geometry_.find(profile_id);
  if (p == nullptr) {
    return core::failf(core::Domain::kMig, core::Code::kInvalidArgument,
                       "{} has no MIG profile with ID {}", geometry_.gpu, profile_id);
  }
  const std::string what =
      fmt::format("cannot create {} at memory slice {} on GPU {}", p->name, start, gpu_index_);
  TESSERA_ASSIGN_OR_RETURN(auto existing, core::with_context(query_instances(), what));
  std::vector<hw::MigSlot> slots;
  for (const device::MigInstance& i : existing) slots.push_back({i.profile_id, i.start});
  slots.push_back({profile_id, start});
  TESSERA_TRY(core::with_context(hw::check_mig_layout(geometry_, slots), what));

  // The profile INDEX selects the info; the create call takes the info's profile ID.
  nvml::GpuInstanceProfileInfo info{};
  TESSERA_TRY(core::with_context(check(api().device_get_gpu_instance_profile_info(
                                           device_, static_cast<unsigned>(p->nvml_index), &info),
                                       "nvmlDeviceGetGpuInstanceProfileInfo"),
                                 what));
  const nvml::GpuInstancePlacement placement{static_cast<unsigned>(start),
                                             static_cast<unsigned>(p->memory_slices)};
  Instance inst;
  TESSERA_TRY(core::with_context(
      check(api().device_create_gpu_instance_with_placement(device_, info.id, &placement, &inst.gi),
            "nvmlDeviceCreateGpuInstanceWithPlacement"),
      what));

  unsigned gi_id = 0;
  bool gi_id_known = false;
  // Everything after the GPU instance exists; on failure it is undone below.
  auto finish_create = [&]() -> core::Status {
    nvml::GpuInstanceInfo gi_info{};
    TESSERA_TRY(check(api().gpu_instance_get_info(inst.gi, &gi_info), "nvmlGpuInstanceGetInfo"));
    gi_id = gi_info.id;
    gi_id_known = true;
    TESSERA_ASSIGN_OR_RETURN(const unsigned ci_index,
                             full_compute_profile_index(p->compute_slices));
    nvml::ComputeInstanceProfileInfo ci_info{};
    TESSERA_TRY(check(api().gpu_instance_get_compute_instance_profile_info(
                          inst.gi, ci_index, nvml::kComputeInstanceEngineProfileShared, &ci_info),
                      "nvmlGpuInstanceGetComputeInstanceProfileInfo"));
    TESSERA_TRY(check(api().gpu_instance_create_compute_instance(inst.gi, ci_info.id, &inst.ci),
                      "nvmlGpuInstanceCreateComputeInstance"));
    TESSERA_ASSIGN_OR_RETURN(inst.mig, find_mig_device(gi_id));
    TESSERA_ASSIGN_OR_RETURN(inst.info.uuid, uuid_of(inst.mig));
    return {};
  };
  if (auto done = finish_create(); !done) {
    const core::Error& cause = done.error();
    core::Status cleanup;
    if (inst.ci != nullptr) {
      cleanup = check(api().compute_instance_destroy(inst.ci), "nvmlComputeInstanceDestroy");
    }
    if (cleanup) cleanup = check(api().gpu_instance_destroy(inst.gi), "nvmlGpuInstanceDestroy");
    if (cleanup) {
      return std::unexpected(
          cause.with_context(fmt::format("{} (the half-made instance was destroyed)", what)));
    }
    const std::string id_text = gi_id_known ? fmt::format("{}", gi_id) : "<ID>";
    return core::failf(
        cause.domain(), cause.code(),
        "{}: {}; cleaning up failed too ({}), so GPU instance {} ({} at memory slice {}) is left "
        "on GPU {}: remove it with `sudo nvidia-smi mig -i {} -dci -gi {}` then `sudo nvidia-smi "
        "mig -i {} -dgi -gi {}`",
        what, cause.message(), cleanup.error().message(), id_text, p->name, start, gpu_index_,
        gpu_index_, id_text, gpu_index_, id_text);
  }

  inst.info.id = gi_id;
  inst.info.profile_id = profile_id;
  inst.info.start = start;
  inst.info.memory_bytes = p->memory_bytes;
  inst.info.sms = p->sms;
  ++instances_created_;
  const device::MigInstance result = inst.info;
  created_[gi_id] = std::make_unique<Instance>(std::move(inst));
  return result;
}

core::Status NvmlMigDevice::destroy_instance(device::MigInstanceId id) {
  for (const auto& [run_id, run] : runs_) {
    if (run->instance == id) {
      return core::failf(core::Domain::kMig, core::Code::kFailedPrecondition,
                         "cannot destroy instance {}: job '{}' (run {}) is running on it; stop "
                         "it first",
                         id, run->job->name, run_id);
    }
  }
  const std::string what = fmt::format("cannot destroy instance {} on GPU {}", id, gpu_index_);
  TESSERA_ASSIGN_OR_RETURN(const Instance inst, core::with_context(find_instance(id), what));
  TESSERA_TRY(core::with_context(destroy_gpu_instance(inst.gi), what));
  created_.erase(id);
  ++instances_destroyed_;
  return {};
}

device::MigDeviceStats NvmlMigDevice::stats() const {
  device::MigDeviceStats s;
  s.elapsed = executor_.now() - opened_at_;
  s.instances_created = instances_created_;
  s.instances_destroyed = instances_destroyed_;
  unsigned long long now_mj = 0;
  if (energy_ && api().device_get_total_energy_consumption(device_, &now_mj) == nvml::kSuccess &&
      now_mj >= energy_start_mj_) {
    s.energy_joules = static_cast<double>(now_mj - energy_start_mj_) / 1000.0;  // mJ -> J
  }
  return s;
}

}  // namespace tessera::cuda
