#pragma once
// The fake libcuda's model of the GPUs (fake_cuda_control.h describes the behaviour): devices,
// contexts, green contexts and their SM sets, streams as FIFO queues of operations, events, memory,
// libraries and kernels, the scheduler that runs the queues at synchronisation points, the host
// emulation of tessera's kernels, injected failures and the log. One State per process, guarded
// by one mutex (state_mutex()); the exported entry points (fake_cuda.cpp) lock it.

#include <cuda.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fake_cuda {

// Handles are (kind << 40) | id, ids never reused: a handle of the wrong kind or a destroyed one
// is found invalid instead of aliasing a newer object.
enum class Kind : std::uint64_t {
  kContext = 1,
  kStream,
  kEvent,
  kGreenCtx,
  kLibrary,
  kKernel,
  kDesc,
  kGraph,
  kGraphExec,
};
template <typename H>
H make_handle(Kind kind, std::uint64_t id) {
  return reinterpret_cast<H>((static_cast<std::uint64_t>(kind) << 40) | id);
}
// The id in `handle`, or 0 when it is not a handle of `kind`.
std::uint64_t handle_id(const void* handle, Kind kind);

struct Device {
  std::string name;
  int sms = 0;
  int cc_major = 0;
  int cc_minor = 0;
  std::uint64_t memory_bytes = 0;
  std::uint64_t used_bytes = 0;
  int min_partition = 0;
  int alignment = 0;
  int shortfall = 0;
  int clock_khz = 0;
  unsigned char uuid[16] = {};
  std::map<int, int> attributes;  // script overrides by CUdevice_attribute value
};

struct Context {
  int device = 0;
  std::uint64_t green = 0;  // 0: the device's primary context
  std::uint64_t default_stream = 0;
};

enum class OpKind { kLaunch, kEventRecord, kWait, kCopyHtoD, kCopyDtoH, kMemset, kGraphLaunch };

struct Op {
  std::uint64_t id = 0;  // enqueue order, over all streams
  OpKind kind = OpKind::kLaunch;
  // Launch.
  std::string kernel;
  std::string entry;  // the entry point that enqueued it (cuLaunchKernel_ptsz, ...)
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared = 0;
  std::vector<unsigned char> params;
  // Event record / wait: the event, and for a wait the record operation it waits for (0: none).
  std::uint64_t event = 0;
  std::uint64_t record_op = 0;
  // Copies and memset.
  std::uint64_t dst = 0;
  std::uint64_t src = 0;
  std::uint64_t bytes = 0;
  unsigned char value = 0;
  std::uint64_t graph = 0;
};

struct Stream {
  std::uint64_t ctx = 0;
  std::uint64_t green = 0;
  int device = 0;
  unsigned flags = 0;
  int priority = 0;
  int sms = 0;             // the SMs its work runs on: its green context's, else the device's
  bool destroyed = false;  // no handle any more; dropped once its queue drains
  bool resident = false;   // the head is a running tessera_control
  std::uint64_t resident_log = 0;  // index of that launch in the log
  std::uint64_t time_ns = 0;       // virtual time at which its last operation ended
  std::deque<Op> queue;
};

struct Event {
  unsigned flags = 0;
  std::uint64_t last_record = 0;  // the latest record operation enqueued (0: never recorded)
};

struct Resource {
  int device = 0;
  std::vector<int> sms;
  std::uint64_t split = 0;  // the split call that made it (0: from a device or green context)
  bool splittable = true;
};

struct Desc {
  int device = 0;
  std::vector<int> sms;
};

struct GreenCtx {
  int device = 0;
  std::vector<int> sms;  // what it really got (after the scripted shortfall)
  std::uint64_t ctx = 0;
};

struct Library {
  std::vector<unsigned char> image;
};

struct Kernel {
  std::uint64_t library = 0;
  std::string name;
  int max_dynamic_shared = 48 * 1024;  // the driver's default without opt-in (cuda.h, attribute 8)
};

struct Allocation {
  std::uint64_t bytes = 0;
  bool host = false;  // cuMemHostAlloc
  int device = 0;
  bool physical = false;  // cuMemCreate: named by its handle, released with cuMemRelease
};

struct FailRule {
  std::string call;
  int nth = 0;
  CUresult ret = CUDA_SUCCESS;
};

class State {
 public:
  // The defaults of fake_cuda_control.h; `script` overrides them. Throws std::runtime_error with
  // the reason when the script is malformed.
  explicit State(const nlohmann::json& script);
  ~State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // Called by every entry point before its body: counts the call, applies injected failures and
  // the initialisation check. CUDA_SUCCESS lets the body run.
  CUresult before_call(const std::string& name, bool needs_init);
  void log_call(const std::string& name, CUresult ret);
  void note(nlohmann::json entry);

  // The current thread's context (0: none), checked against the live contexts.
  std::uint64_t current_context() const;
  Context* context(std::uint64_t id);
  Stream* stream(CUstream handle);  // 0/legacy/per-thread: the current context's default stream
  std::uint64_t stream_id(CUstream handle);
  std::uint64_t default_stream(std::uint64_t ctx);
  std::uint64_t new_stream(std::uint64_t ctx, unsigned flags, int priority);

  // Appends `op` to the stream's queue; returns its id (enqueue order).
  std::uint64_t enqueue(std::uint64_t stream, Op op);
  // A synchronisation point: services resident control kernels and runs every runnable
  // operation until none is left.
  void run();
  // Runs the device, then CUDA_SUCCESS when `stream`'s queue has drained; otherwise the queue
  // can never drain (a resident kernel or a wait that cannot be met): notes why and returns
  // CUDA_ERROR_LAUNCH_TIMEOUT instead of hanging as the real driver would.
  CUresult drain(std::uint64_t stream, const char* call);
  bool record_done(std::uint64_t op) const { return record_times_.count(op) != 0; }
  std::uint64_t record_time(std::uint64_t op) const { return record_times_.at(op); }

  // Memory bookkeeping. The host address of a device pointer (they are the same), or nullptr
  // when [ptr, ptr + bytes) is not inside one allocation.
  void* check_range(std::uint64_t ptr, std::uint64_t bytes) const;
  std::map<std::uint64_t, Allocation>& allocations() { return allocations_; }

  std::uint64_t next_id() { return ++ids_; }
  nlohmann::json log_json() const;
  CUresult sticky_error() const { return sticky_; }

  // Script state.
  std::vector<Device> devices;
  int driver_version = 13000;
  bool green_contexts = true;
  std::string schedule = "fifo";
  std::map<std::string, std::uint64_t> kernel_ns;
  std::vector<FailRule> fails;
  bool no_device = false;
  bool initialized = false;

  // Live objects by id.
  std::map<std::uint64_t, Context> contexts;
  std::map<std::uint64_t, Stream> streams;
  std::map<std::uint64_t, Event> events;
  std::map<std::uint64_t, Resource> resources;
  std::map<std::uint64_t, Desc> descs;
  std::map<std::uint64_t, GreenCtx> greens;
  std::map<std::uint64_t, Library> libraries;
  std::map<std::uint64_t, Kernel> kernels;
  std::set<std::uint64_t> graphs;
  std::map<std::uint64_t, std::uint64_t> graph_execs;  // exec -> graph
  std::vector<int> primary_retains;                    // per device
  nlohmann::json green_log = nlohmann::json::array();  // every green context ever created
  nlohmann::json init_log = nlohmann::json::object();

 private:
  Stream* pick();
  void execute_head(std::uint64_t stream_id, Stream& s);
  void execute_launch(Stream& s, std::uint64_t stream_id, const Op& op, nlohmann::json& entry);
  bool service_controls();
  void fault(const std::string& what);
  // Appends to the execution log (counts executions past the cap).
  void push_op(nlohmann::json entry);
  std::uint64_t duration(const std::string& kernel) const;

  // ASSUMPTION: no test needs more entries than this; benchmarks that make millions of calls
  // would otherwise grow the log without bound. Entries past it are only counted.
  static constexpr std::size_t kMaxLogEntries = 200000;
  std::uint64_t executed_ = 0;  // operations executed: the next log entry's seq
  std::uint64_t ops_dropped_ = 0;
  std::uint64_t calls_dropped_ = 0;
  std::uint64_t ids_ = 0;
  std::uint64_t device_clock_ns_ = 0;
  std::uint64_t last_rr_ = 0;
  std::map<std::string, int> call_counts_;
  std::map<std::uint64_t, std::uint64_t> record_times_;  // executed record op -> virtual time
  std::map<std::uint64_t, Allocation> allocations_;
  CUresult sticky_ = CUDA_SUCCESS;
  nlohmann::json ops_ = nlohmann::json::array();
  nlohmann::json calls_ = nlohmann::json::array();
  nlohmann::json notes_ = nlohmann::json::array();
};

std::recursive_mutex& state_mutex();
// The process's state: created from FAKE_CUDA_SCRIPT (or the defaults) on first use.
State& state();
// Replaces the state (fake_cuda_reset); keeps `initialized` from the old one (a reset is a fresh
// GPU, not a fresh process: code that already called cuInit keeps working).
void replace_state(std::unique_ptr<State> next);
bool was_reset();
// The calling thread's context stack (top: the current context).
std::vector<std::uint64_t>& ctx_stack();
// Writes the log to $FAKE_CUDA_LOG now (also done at exit).
void write_log_file_now();

// The byte size of a kernel's parameter struct (kernel_params.h), 0 for unknown kernels.
std::size_t params_size(const std::string& kernel);
// The size of a module image: fatbin header, ELF section table, else a NUL-terminated text.
std::size_t image_size(const void* image);

}  // namespace fake_cuda
