#pragma once
// tessera's own declarations of the part of NVML it uses, so that nothing links against or
// includes NVIDIA's nvml.h: libnvidia-ml is loaded at run time (nvml_library.hpp).
//
// Source of every type, constant and signature below: nvml.h as vendored in NVIDIA/go-nvml,
// pkg/nvml/nvml.h at commit 075f45fd6a7be7b050f19b142a4631582010d719 ("NVML VERSION: 12.2.140"),
// cross-checked with the 13.0.39 copy cited in shared/notes/cuda-api-facts.md section 3. Layouts
// are the real ABI: the static_asserts pin the sizes that follow from the header's field lists on
// LP64 (x86-64 and aarch64 Linux).
//
// nvml.h declares handles as pointers to opaque structs (go-nvml wraps them in one-pointer
// structs, which the SysV ABI passes exactly like the pointer), and nvmlReturn_t as a C enum,
// passed as int.

#include <cstdint>

namespace tessera::cuda::nvml {

struct DeviceOpaque;
struct GpuInstanceOpaque;
struct ComputeInstanceOpaque;
using Device = DeviceOpaque*;                    // nvmlDevice_t
using GpuInstance = GpuInstanceOpaque*;          // nvmlGpuInstance_t
using ComputeInstance = ComputeInstanceOpaque*;  // nvmlComputeInstance_t

// nvmlReturn_t (enum nvmlReturn_enum).
using Return = int;
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNoPermission = 4;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorFunctionNotFound = 13;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr Return kErrorResetRequired = 16;
inline constexpr Return kErrorInUse = 19;
inline constexpr Return kErrorInsufficientResources = 23;
inline constexpr Return kErrorFreqNotSupported = 24;  // NVML_ERROR_FREQ_NOT_SUPPORTED
inline constexpr Return kErrorUnknown = 999;

// Buffer sizes ("nvmlConstants" group).
inline constexpr unsigned kDeviceUuidV2BufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kDeviceNameV2BufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE

// MIG ("nvmlMultiInstanceGPU" group).
inline constexpr unsigned kDeviceMigDisable = 0;  // NVML_DEVICE_MIG_DISABLE
inline constexpr unsigned kDeviceMigEnable = 1;   // NVML_DEVICE_MIG_ENABLE
// NVML_COMPUTE_INSTANCE_PROFILE_<n>_SLICE: indices for
// nvmlGpuInstanceGetComputeInstanceProfileInfo.
inline constexpr unsigned kComputeInstanceProfile1Slice = 0x0;
inline constexpr unsigned kComputeInstanceProfile2Slice = 0x1;
inline constexpr unsigned kComputeInstanceProfile3Slice = 0x2;
inline constexpr unsigned kComputeInstanceProfile4Slice = 0x3;
inline constexpr unsigned kComputeInstanceProfile7Slice = 0x4;
inline constexpr unsigned kComputeInstanceProfile8Slice = 0x5;
inline constexpr unsigned kComputeInstanceProfile6Slice = 0x6;
inline constexpr unsigned kComputeInstanceProfileCount = 0x8;  // the same in 12.2.140 and 13.0.39
inline constexpr unsigned kComputeInstanceEngineProfileShared = 0x0;

// Clocks: nvmlClockType_t and nvmlClockId_t (C enums, passed as int) at the commit above.
inline constexpr int kClockGraphics = 0;   // NVML_CLOCK_GRAPHICS
inline constexpr int kClockSm = 1;         // NVML_CLOCK_SM
inline constexpr int kClockMem = 2;        // NVML_CLOCK_MEM
inline constexpr int kClockIdCurrent = 0;  // NVML_CLOCK_ID_CURRENT: the current actual clock

// nvmlUtilization_t: percent of the last sample period (1/6 s to 1 s, per product) during which
// a kernel ran (gpu) or device memory was read or written (memory).
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};
static_assert(sizeof(Utilization) == 8);

// nvmlMemory_t (v1): what nvmlDeviceGetMemoryInfo fills.
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(Memory) == 24);

// nvmlGpuInstancePlacement_t: memory slices [start, start + size).
struct GpuInstancePlacement {
  unsigned int start;
  unsigned int size;
};
static_assert(sizeof(GpuInstancePlacement) == 8);

// nvmlGpuInstanceProfileInfo_t (v1). `id` is the profile ID the create, placement and capacity
// calls take; the NVML_GPU_INSTANCE_PROFILE_* index that selects it is a different number.
struct GpuInstanceProfileInfo {
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
};
static_assert(sizeof(GpuInstanceProfileInfo) == 48);

// nvmlGpuInstanceInfo_t.
struct GpuInstanceInfo {
  Device device;
  unsigned int id;
  unsigned int profileId;
  GpuInstancePlacement placement;
};
static_assert(sizeof(GpuInstanceInfo) == 24);

// nvmlComputeInstanceProfileInfo_t (v1).
struct ComputeInstanceProfileInfo {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
};
static_assert(sizeof(ComputeInstanceProfileInfo) == 36);

// Function types, one per symbol tessera resolves (the exported name is in the comment; where
// nvml.h #defines the plain name onto a versioned one, the versioned symbol is the one loaded).
using InitFn = Return (*)();                                     // nvmlInit_v2
using ShutdownFn = Return (*)();                                 // nvmlShutdown
using ErrorStringFn = const char* (*)(Return);                   // nvmlErrorString
using DeviceGetHandleByIndexFn = Return (*)(unsigned, Device*);  // nvmlDeviceGetHandleByIndex_v2
using DeviceGetNameFn = Return (*)(Device, char*, unsigned);     // nvmlDeviceGetName
using DeviceGetUuidFn = Return (*)(Device, char*, unsigned);     // nvmlDeviceGetUUID
using DeviceGetMemoryInfoFn = Return (*)(Device, Memory*);       // nvmlDeviceGetMemoryInfo
using DeviceGetTotalEnergyConsumptionFn = Return (*)(Device, unsigned long long*);  // mJ
using DeviceGetMigModeFn = Return (*)(Device, unsigned*, unsigned*);  // current, pending
using DeviceGetGpuInstanceProfileInfoFn = Return (*)(Device, unsigned, GpuInstanceProfileInfo*);
using DeviceCreateGpuInstanceWithPlacementFn = Return (*)(Device, unsigned,
                                                          const GpuInstancePlacement*,
                                                          GpuInstance*);
using GpuInstanceDestroyFn = Return (*)(GpuInstance);
using DeviceGetGpuInstancesFn = Return (*)(Device, unsigned, GpuInstance*, unsigned*);
using GpuInstanceGetInfoFn = Return (*)(GpuInstance, GpuInstanceInfo*);
using GpuInstanceGetComputeInstanceProfileInfoFn = Return (*)(GpuInstance, unsigned, unsigned,
                                                              ComputeInstanceProfileInfo*);
using GpuInstanceCreateComputeInstanceFn = Return (*)(GpuInstance, unsigned, ComputeInstance*);
using GpuInstanceGetComputeInstancesFn = Return (*)(GpuInstance, unsigned, ComputeInstance*,
                                                    unsigned*);
using ComputeInstanceDestroyFn = Return (*)(ComputeInstance);
using DeviceGetMaxMigDeviceCountFn = Return (*)(Device, unsigned*);
using DeviceGetMigDeviceHandleByIndexFn = Return (*)(Device, unsigned, Device*);
using DeviceGetGpuInstanceIdFn = Return (*)(Device, unsigned*);

// Clocks, power and utilisation (line numbers: the 13.0.39 nvml.h of the notes, section 3).
// nvmlDeviceSetGpuLockedClocks (8437): min and max graphics clock in MHz; Volta+, root/admin.
using DeviceSetGpuLockedClocksFn = Return (*)(Device, unsigned, unsigned);
using DeviceResetGpuLockedClocksFn = Return (*)(Device);  // nvmlDeviceResetGpuLockedClocks (8459)
// nvmlDeviceGetSupportedMemoryClocks (5358): count in (array size) and out (entries), MHz.
using DeviceGetSupportedMemoryClocksFn = Return (*)(Device, unsigned*, unsigned*);
// nvmlDeviceGetSupportedGraphicsClocks (5383): graphics clocks possible at one memory clock.
using DeviceGetSupportedGraphicsClocksFn = Return (*)(Device, unsigned, unsigned*, unsigned*);
// nvmlDeviceGetClock (5315): clock type, clock id, MHz out.
using DeviceGetClockFn = Return (*)(Device, int, int, unsigned*);
using DeviceGetPowerUsageFn = Return (*)(Device, unsigned*);           // (6176) milliwatts
using DeviceGetUtilizationRatesFn = Return (*)(Device, Utilization*);  // (6671)

}  // namespace tessera::cuda::nvml
