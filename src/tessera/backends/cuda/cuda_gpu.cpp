#include "tessera/backends/cuda/cuda_gpu.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <string_view>
#include <utility>

#include "tessera/backends/cuda/emulation.hpp"
#include "tessera/backends/cuda/internal/cuda_gpu_impl.hpp"
#include "tessera/backends/cuda/kernel_params.h"
#include "tessera/backends/nvml/nvml_library.hpp"
#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/device/argument_checks.hpp"
#include "tessera/device/occupancy.hpp"
#include "tessera/device/poll_loop.hpp"

namespace tessera::cuda {

using core::Code;
using core::Domain;

namespace {

core::Result<hw::GpuSpec> spec_for(const DriverDevice& device, const std::string& wanted) {
  std::string alias = wanted;
  if (alias.empty()) {
    if (auto known = hw::gpu_for_device_name(device.name)) {
      alias = *known;
    } else {
      return core::failf(Domain::kCuda, Code::kNotFound,
                         "GPU {} is a '{}', which matches no GPU in tessera's catalog; set "
                         "CudaGpuOptions::gpu_spec (--gpu) to the catalog GPU closest to it",
                         device.ordinal, device.name);
    }
  }
  TESSERA_ASSIGN_OR_RETURN(auto spec, hw::find_gpu(alias));
  // The policies plan with the device's own SMs and memory (a board may have fewer SMs enabled
  // than the catalog's, or be a different memory variant).
  spec.sms = device.sms;
  spec.tpcs = spec.sms_per_tpc > 0 ? device.sms / spec.sms_per_tpc : device.sms;
  spec.memory_bytes = device.memory_bytes;
  return spec;
}

core::Result<UniqueDeviceMemory> alloc_device(const DriverLibrary& driver, std::size_t bytes,
                                              std::string_view call) {
  CUdeviceptr p = 0;
  TESSERA_TRY(driver.check(driver.api().mem_alloc(&p, bytes), call));
  return UniqueDeviceMemory(driver, p);
}

core::Result<UniqueHostMemory> alloc_host(const DriverLibrary& driver, std::size_t bytes,
                                          unsigned flags, std::string_view call) {
  void* p = nullptr;
  TESSERA_TRY(driver.check(driver.api().mem_host_alloc(&p, bytes, flags), call));
  return UniqueHostMemory(driver, p);
}

}  // namespace

// --- Creation and teardown ---

core::Status CudaGpu::Impl::check(CUresult r, std::string_view call) {
  if (r == CUDA_SUCCESS) return {};
  auto st = driver.check(r, call);
  return fail_with(st.error());
}

core::Status CudaGpu::Impl::fail_with(core::Error e) {
  if (!error) error = e.with_context(fmt::format("{} (GPU {})", spec.name, device.ordinal));
  return std::unexpected(*error);
}

core::Status CudaGpu::Impl::init() {
  TESSERA_ASSIGN_OR_RETURN(device, driver.device(options.device_ordinal));
  TESSERA_ASSIGN_OR_RETURN(spec, spec_for(device, options.gpu_spec));
  TESSERA_TRY(
      driver.check(api.primary_ctx_retain(&primary, device.handle), "cuDevicePrimaryCtxRetain"));
  primary_retained = RetainedPrimaryContext(driver, device.handle);
  TESSERA_TRY(driver.check(api.ctx_set_current(primary), "cuCtxSetCurrent"));

  TESSERA_ASSIGN_OR_RETURN(kernels,
                           KernelModule::load(driver, tessera_kernels_image(), "tessera_kernels"));
  TESSERA_TRY(allow_emulation_shared_memory(driver, *kernels, device.handle));
  TESSERA_ASSIGN_OR_RETURN(scratch,
                           alloc_device(driver, static_cast<std::size_t>(options.scratch_bytes),
                                        "cuMemAlloc (emulation scratch buffer)"));
  TESSERA_ASSIGN_OR_RETURN(sink, alloc_device(driver, sizeof(std::uint32_t), "cuMemAlloc (sink)"));
  TESSERA_TRY(
      driver.check(api.memset_d8(sink.get(), 0, sizeof(std::uint32_t)), "cuMemsetD8 (sink)"));

  if (options.yield_slots > 0) {
    const auto slots = static_cast<std::size_t>(options.yield_slots);
    const std::size_t progress_bytes =
        slots * static_cast<std::size_t>(options.max_checkpointed_blocks) * 4;
    TESSERA_ASSIGN_OR_RETURN(
        progress_pool, alloc_device(driver, progress_bytes, "cuMemAlloc (checkpoint progress)"));
    TESSERA_ASSIGN_OR_RETURN(yielded_host, alloc_host(driver, slots * 4, CU_MEMHOSTALLOC_DEVICEMAP,
                                                      "cuMemHostAlloc (yielded-blocks counters)"));
    TESSERA_TRY(
        driver.check(api.mem_host_get_device_pointer(&yielded_device, yielded_host.get(), 0),
                     "cuMemHostGetDevicePointer"));
    const std::size_t zero_bytes = static_cast<std::size_t>(options.max_checkpointed_blocks) * 4;
    TESSERA_ASSIGN_OR_RETURN(zeros, alloc_host(driver, zero_bytes, 0, "cuMemHostAlloc (zeros)"));
    std::memset(zeros.get(), 0, zero_bytes);
  }

  primary_context = std::make_unique<ExecutionContext>();
  primary_context->primary = true;
  primary_context->context = primary;
  primary_context->sms = device.sms;

  // The control kernel runs in the SMs the granule split leaves over; without green contexts, or
  // when the split leaves none, in the primary context.
  if (api.has_green_contexts()) {
    TESSERA_TRY(make_granules());
    if (granules->remaining_sms > 0) {
      // The header does not promise the remainder the guarantees of a split's groups; if the
      // driver will not make a context of it, the control kernel goes to the primary context.
      if (auto rest = make_remaining_green_context(driver, device.handle, *granules, 1); rest) {
        control_partition = std::move(*rest);
        control_stream = control_partition->streams.at(0).get();
      } else {
        core::logger().warn(
            "CudaGpu: no green context over the {} SMs the split left ({}); the "
            "control kernel runs in the primary context",
            granules->remaining_sms, rest.error().message());
      }
    }
  }
  CUcontext control_context = primary;
  if (control_partition) {
    control_context = control_partition->context;
  } else {
    TESSERA_TRY(driver.check(api.stream_create(&control_stream, CU_STREAM_NON_BLOCKING),
                             "cuStreamCreate (control kernel)"));
    own_control_stream = UniqueStream(driver, control_stream);
  }
  if (options.yield_slots > 0) {  // no slots: no yields, no control kernel
    TESSERA_TRY(driver.check(api.ctx_push_current(control_context), "cuCtxPushCurrent"));
    auto channel = ControlChannel::start(driver, *kernels, control_stream,
                                         ControlChannelOptions{.slots = options.yield_slots});
    CUcontext popped = nullptr;
    TESSERA_TRY(driver.check(api.ctx_pop_current(&popped), "cuCtxPopCurrent"));
    if (!channel) return std::unexpected(channel.error().with_context("the control kernel"));
    control = std::move(*channel);
  }

  // The primary context's reference event (see event_time in cuda_gpu_poll.cpp).
  CUstream utility = nullptr;
  TESSERA_TRY(driver.check(api.stream_create(&utility, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  utility_stream = UniqueStream(driver, utility);
  CUevent reference = nullptr;
  TESSERA_TRY(driver.check(api.event_create(&reference, CU_EVENT_DEFAULT), "cuEventCreate"));
  primary_context->reference = UniqueEvent(driver, reference);
  TESSERA_TRY(driver.check(api.event_record(reference, utility), "cuEventRecord"));
  TESSERA_TRY(driver.check(api.event_synchronize(reference), "cuEventSynchronize"));
  primary_context->reference_time = executor.now();

  if (options.nvml != nullptr) {
    const auto& n = options.nvml->api();
    std::optional<unsigned> index;
    for (unsigned i = 0; i < 64 && !index; ++i) {  // NVML numbers at most 64 GPUs per node here
      nvml::Device handle = nullptr;
      if (n.device_get_handle_by_index(i, &handle) != nvml::kSuccess) break;
      std::array<char, nvml::kDeviceUuidV2BufferSize> uuid{};
      if (n.device_get_uuid(handle, uuid.data(), static_cast<unsigned>(uuid.size())) ==
              nvml::kSuccess &&
          device.uuid == uuid.data()) {
        index = i;
      }
    }
    if (!index) {
      return core::failf(Domain::kCuda, Code::kNotFound,
                         "NVML lists no GPU with the UUID of CUDA device {} ({}); pass the NVML "
                         "of the same machine, or none (then clocks are not set and energy is 0)",
                         device.ordinal, device.uuid);
    }
    TESSERA_ASSIGN_OR_RETURN(nvml, NvmlGpuControl::open(*options.nvml, *index));
    if (auto s = nvml->sample(); s && s->energy_joules) energy_at_creation = *s->energy_joules;
  }
  created = executor.now();
  core::logger().info(
      "CudaGpu: {} ('{}', {} SMs) as {}; {}", device.ordinal, device.name, device.sms, spec.name,
      granules
          ? fmt::format("{} granules of {} SMs, {} SMs for the control kernel",
                        granules->groups.size(), granules->granule_sms, granules->remaining_sms)
          : std::string("no green contexts: every stream uses the whole GPU"));
  return {};
}

void CudaGpu::Impl::teardown() {
  auto quiet = [this](CUresult r, std::string_view call) {
    if (r != CUDA_SUCCESS) {
      core::logger().warn("CudaGpu teardown: {}", driver.check(r, call).error().message());
    }
  };
  if (primary != nullptr) quiet(api.ctx_push_current(primary), "cuCtxPushCurrent");
  // Let the GPU drain every stream tessera issued to, then free what the launches held.
  auto each_context = [this](auto&& fn) {
    if (primary_context) fn(*primary_context);
    for (auto& c : green_contexts) fn(*c);
  };
  each_context([&](ExecutionContext& c) {
    for (auto& [id, cu] : c.streams) {
      quiet(api.stream_synchronize(cu.get()), "cuStreamSynchronize");
    }
  });
  // The launches' events (a launch's end event belongs to the next launch, as its previous, or
  // to the stream), then the control kernel (EXIT, then a wait for its stream), then the memory
  // kernels used, the contexts with their streams and events, and the module last.
  for (auto& st : streams) {
    st.in_flight.clear();
    st.rest.reset();
    st.last_end.reset();
  }
  control.reset();
  progress_pool.reset();
  yielded_host.reset();
  zeros.reset();
  for (auto& c : green_contexts) destroy_context(*c);
  green_contexts.clear();
  if (primary_context) destroy_context(*primary_context);
  if (control_partition) destroy_green_context(*control_partition);
  own_control_stream.reset();
  utility_stream.reset();
  sink.reset();
  scratch.reset();
  kernels.reset();
  if (nvml && locked_clock) {
    if (auto r = nvml->reset_clocks(); !r) core::logger().warn("{}", r.error().message());
  }
  if (primary != nullptr) {
    CUcontext popped = nullptr;
    quiet(api.ctx_pop_current(&popped), "cuCtxPopCurrent");
  }
  primary_retained.reset();
}

core::Result<std::unique_ptr<CudaGpu>> CudaGpu::create(const DriverLibrary& driver,
                                                       device::WallClockExecutor& executor,
                                                       const CudaGpuOptions& options) {
  if (options.issue_window < 1 || options.scratch_bytes < 1024 || options.max_green_contexts < 1 ||
      options.yield_slots < 0 || options.max_checkpointed_blocks < 1) {
    return core::failf(Domain::kCuda, Code::kInvalidArgument,
                       "CudaGpuOptions: issue_window ({}), max_green_contexts ({}) and "
                       "max_checkpointed_blocks ({}) must be at least 1, scratch_bytes ({}) at "
                       "least 1024 and yield_slots ({}) not negative",
                       options.issue_window, options.max_green_contexts,
                       options.max_checkpointed_blocks, options.scratch_bytes, options.yield_slots);
  }
  auto impl = std::make_unique<Impl>(driver, executor, options);
  if (auto st = impl->init(); !st) {
    impl->teardown();
    return std::unexpected(
        st.error().with_context(fmt::format("CudaGpu on CUDA device {}", options.device_ordinal)));
  }
  return std::unique_ptr<CudaGpu>(new CudaGpu(std::move(impl)));
}

CudaGpu::CudaGpu(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CudaGpu::~CudaGpu() {
  impl_->teardown();
}

// --- The GpuDevice calls ---

const hw::GpuSpec& CudaGpu::spec() const {
  return impl_->spec;
}

device::Capabilities CudaGpu::capabilities() const {
  return device::Capabilities{
      .sm_partitions = impl_->granules.has_value(),
      .sm_limit = false,
      .bandwidth_partitions = false,
      .context_preemption = false,
      .clock_control = impl_->nvml != nullptr && impl_->nvml->can_lock_clocks(),
      .block_ranges = true,
      .kernel_preemption = impl_->control != nullptr,
      .stream_priorities = true,
      .early_end = true};
}

device::Executor& CudaGpu::executor() {
  return impl_->executor;
}

namespace {

core::Error unsupported_here(const hw::GpuSpec& spec, std::string_view what) {
  return core::Error(Domain::kDevice, Code::kUnsupported,
                     fmt::format("{} (the CUDA backend) does not support {}; check "
                                 "capabilities() first",
                                 spec.name, what));
}

}  // namespace

core::Result<device::DomainId> CudaGpu::create_bandwidth_domain(double share) {
  (void)share;
  return std::unexpected(unsupported_here(impl_->spec, "bandwidth domains"));
}

core::Status CudaGpu::Impl::usable() const {
  if (error) return std::unexpected(*error);
  return {};
}

core::Status CudaGpu::Impl::check_stream(device::StreamId stream) const {
  return device::check_stream_id(stream, streams.size());
}

core::Status CudaGpu::Impl::check_config(const device::StreamConfig& config) const {
  TESSERA_TRY(device::check_sm_mask(spec, config.sms));
  if (config.max_sms != 0) {
    return std::unexpected(unsupported_here(spec, "SM caps (StreamConfig::max_sms)"));
  }
  if (config.bandwidth_domain != device::kWholeDevice) {
    return core::failf(Domain::kDevice, Code::kNotFound,
                       "bandwidth domain {} does not exist: the CUDA backend has only the whole "
                       "device (0)",
                       config.bandwidth_domain);
  }
  return {};
}

core::Result<device::StreamId> CudaGpu::create_stream(const device::StreamConfig& config) {
  auto& s = *impl_;
  TESSERA_TRY(s.usable());
  TESSERA_TRY(s.check_config(config));
  StreamState st;
  st.config = config;
  const auto id = static_cast<device::StreamId>(s.streams.size());
  if (s.control && static_cast<int>(id) < s.control->slots()) st.slot = static_cast<int>(id);
  s.streams.push_back(std::move(st));
  return id;
}

core::Status CudaGpu::configure_stream(device::StreamId stream,
                                       const device::StreamConfig& config) {
  auto& s = *impl_;
  TESSERA_TRY(s.usable());
  TESSERA_TRY(s.check_stream(stream));
  TESSERA_TRY(s.check_config(config));
  // The CUstreams behind a stream are made with its priority and kept; new ones for a new
  // priority could overtake kernels still queued on the old ones.
  if (config.priority != s.streams[stream].config.priority) {
    return core::failf(Domain::kDevice, Code::kFailedPrecondition,
                       "stream {} has priority {}; the CUDA backend fixes a stream's priority "
                       "when it is created: create another stream for priority {}",
                       stream, s.streams[stream].config.priority, config.priority);
  }
  // Applies from the first kernel not yet issued (the issue window keeps that close).
  s.streams[stream].config = config;
  return {};
}

core::Status CudaGpu::submit(device::StreamId stream, workload::KernelSequencePtr sequence,
                             std::uint64_t tag, device::DoneCallback done) {
  auto& s = *impl_;
  TESSERA_TRY(s.usable());
  TESSERA_TRY(s.check_stream(stream));
  TESSERA_TRY(device::check_submitted_sequence(stream, sequence));
  const auto first = SequenceCursor::first(*sequence);
  const std::int64_t count = sequence->kernel_count();
  return s.enqueue(stream, std::move(sequence), first, count, device::BlockRange{}, tag,
                   std::move(done));
}

core::Status CudaGpu::submit_span(device::StreamId stream, workload::KernelSequencePtr sequence,
                                  device::KernelSpan span, std::uint64_t tag,
                                  device::DoneCallback done) {
  auto& s = *impl_;
  TESSERA_TRY(s.usable());
  TESSERA_TRY(s.check_stream(stream));
  TESSERA_TRY(device::check_span(stream, sequence, span));
  return s.enqueue(stream, std::move(sequence), span.from, span.count, device::BlockRange{}, tag,
                   std::move(done));
}

core::Status CudaGpu::submit_range(device::StreamId stream, workload::KernelSequencePtr sequence,
                                   device::BlockRange range, std::uint64_t tag,
                                   device::DoneCallback done) {
  auto& s = *impl_;
  TESSERA_TRY(s.usable());
  TESSERA_TRY(s.check_stream(stream));
  TESSERA_TRY(device::validate_range_submission(stream, sequence, range.begin, range.end));
  const auto first = SequenceCursor::first(*sequence);
  return s.enqueue(stream, std::move(sequence), first, 1, range, tag, std::move(done));
}

core::Status CudaGpu::Impl::enqueue(device::StreamId stream, workload::KernelSequencePtr sequence,
                                    SequenceCursor from, std::int64_t count,
                                    device::BlockRange range, std::uint64_t tag,
                                    device::DoneCallback done) {
  StreamState& st = streams[stream];
  if (sequence != st.validated) {
    TESSERA_TRY(device::validate_stream_sequence(spec, stream, *sequence));
    st.validated = sequence;
  }
  auto sub = std::make_shared<Submission>();
  sub->next = from;
  sub->left = count;
  sub->sequence = std::move(sequence);
  sub->range = range;
  sub->tag = tag;
  sub->done = std::move(done);
  sub->submitted = executor.now();
  st.queue.push_back(std::move(sub));
  issue(stream);
  return usable();
}

core::Status CudaGpu::end_after_head(device::StreamId stream) {
  auto& s = *impl_;
  TESSERA_TRY(s.usable());
  TESSERA_TRY(s.check_stream(stream));
  return s.end_after_head(stream);
}

core::Status CudaGpu::Impl::end_after_head(device::StreamId stream) {
  StreamState& st = streams[stream];
  if (st.queue.empty()) return {};  // idle, or the current submission's last kernel is issued
  const auto sub = st.queue.front();
  // The stream's current submission is the one of its head launch: a yielded kernel's rest (the
  // head kernel, which still runs), else the oldest launch in flight. When that is not the front
  // of the queue, it has issued its last kernel already and ends as it is; the front is a later
  // submission, which must not be touched.
  const Launch* head = nullptr;
  if (st.rest) {
    head = &*st.rest;
  } else if (!st.in_flight.empty()) {
    head = &st.in_flight.front();
  }
  if (head != nullptr && head->submission != sub) return {};
  if (head == nullptr) {
    // Nothing issued yet (its first kernel waits for the yield flag to be lowered): that kernel
    // still runs, alone.
    sub->left = 1;
    return {};
  }
  // The last launch issued is its own (nothing of a later submission is issued before it leaves
  // the queue); what it has not issued never runs.
  Launch& last = st.rest ? *st.rest : st.in_flight.back();
  last.last_of_submission = true;
  sub->left = 0;
  st.queue.pop_front();
  issue(stream);  // the next submission may start behind it
  return usable();
}

core::Status CudaGpu::request_yield(device::StreamId stream) {
  auto& s = *impl_;
  TESSERA_TRY(s.usable());
  TESSERA_TRY(s.check_stream(stream));
  StreamState& st = s.streams[stream];
  // A stopped kernel whose rest has not run yet stops at its next checkpoint once it runs again.
  if (st.rest) {
    st.yield_rest = true;
    return {};
  }
  // Only a running checkpointed launch can stop; anything else runs to its end, and an idle
  // stream is left alone (as sim::SimGpu does).
  if (st.in_flight.empty() || !st.in_flight.front().yieldable || st.flag_raised) return {};
  return s.raise_yield_flag(stream);
}

core::Status CudaGpu::Impl::raise_yield_flag(device::StreamId stream) {
  StreamState& st = streams[stream];
  auto seq = control->request_yield(st.slot);
  if (!seq) return fail_with(seq.error().with_context(fmt::format("request_yield({})", stream)));
  st.flag_raised = true;
  return {};
}

core::Status CudaGpu::suspend_context(device::ContextId context) {
  (void)context;
  return std::unexpected(unsupported_here(impl_->spec, "context preemption (suspend_context)"));
}

core::Status CudaGpu::resume_context(device::ContextId context) {
  (void)context;
  return std::unexpected(unsupported_here(impl_->spec, "context preemption (resume_context)"));
}

core::Status CudaGpu::set_clock_mhz(double mhz) {
  auto& s = *impl_;
  TESSERA_TRY(s.usable());
  if (!capabilities().clock_control) {
    return std::unexpected(
        unsupported_here(s.spec, s.nvml ? "setting the clock here (NVML may not lock clocks: "
                                          "needs root or admin rights)"
                                        : "setting the clock without NVML (CudaGpuOptions::nvml)"));
  }
  TESSERA_TRY(device::check_clock_mhz(s.spec, mhz));
  TESSERA_ASSIGN_OR_RETURN(const int locked, s.nvml->set_locked_clock_mhz(mhz));
  s.locked_clock = locked;
  return {};
}

double CudaGpu::clock_mhz() const {
  // The clock tessera locked; unlocked, the policies plan with the boost clock (the driver's own
  // management runs at or below it).
  return impl_->locked_clock ? *impl_->locked_clock : impl_->spec.boost_clock_mhz;
}

void CudaGpu::add_observer(device::DeviceObserver* observer) {
  if (observer != nullptr) impl_->observers.push_back(observer);
}

device::DeviceStats CudaGpu::stats() const {
  const auto& s = *impl_;
  device::DeviceStats out;
  out.elapsed = s.executor.now() - s.created;
  out.kernels_completed = s.kernels_completed;
  if (out.elapsed <= 0) return out;
  const auto elapsed = static_cast<double>(out.elapsed);
  out.sm_busy_fraction = s.sm_ns / (s.spec.sms * elapsed);
  if (s.nvml && s.energy_at_creation) {
    if (auto now = s.nvml->sample(); now && now->energy_joules) {
      out.energy_joules = *now->energy_joules - *s.energy_at_creation;
      out.average_power_watts = out.energy_joules / (elapsed * 1e-9);
    }
  }
  return out;
}

void CudaGpu::bind_payload(std::string kernel_name, Payload payload) {
  impl_->payloads[std::move(kernel_name)] = std::move(payload);
}

core::Status CudaGpu::poll() {
  return impl_->poll();
}

bool CudaGpu::Impl::idle() const {
  for (const auto& st : streams) {
    if (!st.queue.empty() || !st.in_flight.empty() || st.rest) return false;
  }
  return true;
}

core::Status CudaGpu::run_until(core::Nanos deadline, bool stop_when_idle) {
  auto& s = *impl_;
  return device::poll_until(
      s.executor, deadline, kPollInterval, [&s] { return s.poll(); },
      [&s, stop_when_idle] { return stop_when_idle && s.idle() && !s.executor.has_pending(); });
}

core::Result<int> CudaGpu::partition_sms(device::StreamId stream) const {
  const auto& s = *impl_;
  TESSERA_TRY(s.check_stream(stream));
  const GranuleSet set = s.granules_for(s.streams[stream].config.sms);
  if (set.none()) return s.device.sms;
  for (const auto& c : s.green_contexts) {
    if (c->granules == set) return c->sms;
  }
  return static_cast<int>(set.count()) * s.granules->granule_sms;  // before it is made
}

int CudaGpu::granule_sms() const {
  return impl_->granules ? impl_->granules->granule_sms : 0;
}

int CudaGpu::granules() const {
  return impl_->granules ? static_cast<int>(impl_->granules->groups.size()) : 0;
}

}  // namespace tessera::cuda
