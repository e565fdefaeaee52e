// The test-side controls of the fake libcuda (tests/support/native/fake_cuda/fake_cuda.cpp). The
// fake exports the driver entry points tessera uses (and cuGetProcAddress/_v2, so that the real
// loading path and the interposer are exercised) plus these functions. Tests reach them by
// dlopen-ing the same file the code under test loaded (the same handle) and dlsym-ing them, or
// through tests/support/cuda_test_env.hpp (testing::FakeCuda).
//
// Processes a test cannot reset directly (the interposer's test program) use the environment:
//   FAKE_CUDA_SCRIPT  a script as below (JSON text, or @file), applied when the fake is first
//                     used unless fake_cuda_reset is called;
//   FAKE_CUDA_LOG     a file that gets fake_cuda_log_json() at exit and at every
//                     fake_cuda_progress.
//
// The fake models one or more GPUs with the driver's observable behaviour as far as tessera uses
// it: primary and green contexts; SM resources split by count with the driver's granularity rules
// (minimum partition and alignment, fewer groups than asked when SMs run out, optional shortfall
// in what a green context really gets); streams as FIFO queues of operations (launches, event
// records, event waits, copies) that run asynchronously: nothing runs at enqueue time; the device
// progresses only at synchronisation points (cuStreamSynchronize, cuCtxSynchronize,
// cuEventSynchronize, cuEventQuery, cuStreamQuery, fake_cuda_progress) and then picks runnable
// stream heads in a scripted order ("fifo": oldest enqueue first; "reverse": newest stream first;
// "round_robin": the next stream in id order), so a missing cuStreamWaitEvent shows up as a
// reordering in the execution log. A query (cuEventQuery, cuStreamQuery) is a full progress
// point: it runs every operation that can run, then answers. A wait makes the stream's next
// operation wait until the event's last record (enqueued before the wait) has executed; an event
// never recorded does not hold a wait. A synchronisation that could never return on a real GPU
// (a stream behind a resident control kernel) returns CUDA_ERROR_LAUNCH_TIMEOUT and is noted.
// Each stream has a virtual clock: a launch takes its scripted duration from its stream's clock,
// a wait moves the clock to the event's time; cuEventElapsedTime subtracts event times.
// Synchronous copies and memsets go through the current context's default stream and drain it;
// the legacy default stream's implicit synchronisation with other streams is not modelled.
//
// tessera's own kernels (kernel_params.h) are emulated on the host when they execute:
// tessera_emulate honours block_offset and writes progress and yielded_blocks from its yield flag;
// tessera_control is resident: it never completes on its own, and at every progress point it
// carries out the command in its mailbox (set or clear a yield flag, ack with ack_seq = seq and
// ack_time_ns = the device's virtual clock, exit); tessera_range_dot computes its output (summed
// in index order: equal to the GPU's only to rounding). tessera_emulate, per virtual block bid in
// [offset, offset + grid) and below virtual_blocks, with checkpoints > 0: without a yield flag
// set, progress[bid] = checkpoints + 1; with it set, progress[bid] += 1 and, if the block is then
// unfinished, *yielded_blocks += 1. Kernels' pointers are checked against the allocations first.
// A launch copies kernelParams[0] (the size of the kernel's struct) at launch time; kernels of
// other names record no parameters and do nothing but take time. cuLibraryGetKernel finds a
// name only if it occurs in the image's bytes as a whole symbol. Device memory is host memory, and
// mapped host memory has the same address on both sides, so emulation can read and write it.
#ifndef TESSERA_FAKE_CUDA_CONTROL_H_
#define TESSERA_FAKE_CUDA_CONTROL_H_

#ifdef __cplusplus
extern "C" {
#endif

// Replaces the fake's whole state with the script (JSON text; "" or null: the defaults) and
// clears the log. Every object (context, stream, event, memory, library) of the old state is
// gone; whether cuInit was called is kept (a reset is a fresh GPU, not a fresh process). Script
// keys (all optional; an unknown key, here or in a device, is an error):
//   {"devices": [{"name": "NVIDIA H200", "sms": 132, "cc": [9, 0], "memory_mib": 144384,
//                 "min_partition": 8, "alignment": 8, "shortfall": 0, "uuid": "GPU-...",
//                 "clock_khz": 1980000, "attributes": {"<CUdevice_attribute>": value}}],
//    "driver_version": 13000,        // cuDriverGetVersion; cuGetProcAddress does not know entry
//                                     // points newer than it (12030: no green contexts)
//    "green_contexts": true,          // false: cuGetProcAddress does not find the green-context
//                                     // entry points (a 12.3 driver); called anyway they return
//                                     // CUDA_ERROR_NOT_SUPPORTED
//    "schedule": "fifo",              // or "reverse", "round_robin"
//    "kernel_ns": {"tessera_emulate": 10000, "*": 5000},  // per-launch virtual duration
//    "fail": [{"call": "cuGreenCtxCreate", "nth": 2, "ret": 2}],  // nth call from the reset
//    "no_device": false}              // cuInit returns CUDA_ERROR_NO_DEVICE
// Defaults: one device as above except memory_mib 144384 (141 GiB) and the CC-dependent
// granularity of cuda.h:24711-24715 (CC 9.0+: 8 and 8; CC 8.x: 4 and 2); every kernel 1000 ns.
// "fail" names the base entry point ("cuMemAlloc", not "cuMemAlloc_v2"; the _ptsz variants count
// as their base); that call returns `ret` and does nothing.
// Returns 0, or -1 when the script is malformed (then fake_cuda_last_error says why).
int fake_cuda_reset(const char* script_json);
// The log as one JSON object, owned by the fake and valid until the next call of this function:
//   {"ops": [...],   one entry per executed operation, in execution order:
//      {"seq": 0, "op": "launch", "enqueue": 17, "stream": 9, "ctx": 8, "green_ctx": 7,
//       "device": 0, "kernel": "tessera_emulate", "entry": "cuLaunchKernel", "sms": 16,
//       "grid": [4,1,1], "block": [256,1,1], "shared": 0, "params_hex": "...", "start_ns": 0,
//       "end_ns": 10000, "yielded": 0}
//      (tessera_control: "resident": true, and "end_ns" only once it has exited), and
//      {"op": "event_record", "event", "time_ns"}, {"op": "wait", "event", "record" (the
//      enqueue id of the record waited for, null when the event was never recorded), "time_ns"},
//      {"op": "memcpy_htod" | "memcpy_dtoh" | "memset", "bytes", "time_ns"},
//      {"op": "graph_launch", "graph", "start_ns", "end_ns"},
//      {"op": "control", "stream", "command" (TesseraControlOp), "slot", "mailbox_seq",
//       "time_ns"} when a resident control kernel carries out a mailbox command,
//      {"op": "fault", "what"} when an emulated kernel or copy touches memory outside every
//       allocation (later synchronisations return CUDA_ERROR_ILLEGAL_ADDRESS);
//    "calls": [{"call": "cuMemAlloc", "ret": 0}, ...]   every API call in call order;
//    "notes": [...]   things a test may want to know: a synchronisation that could never finish
//                     (the fake returns CUDA_ERROR_LAUNCH_TIMEOUT instead of hanging), a green
//                     context destroyed with live streams, a library's image size, an
//                     unmodelled device attribute;
//    "green_contexts": [{"id", "device", "requested", "sm_ids": [...], "ctx", "destroyed"}]
//                     every green context created, with the SMs it really holds;
//    "init": {"CUDA_DEVICE_MAX_CONNECTIONS": "32" or null,
//             "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30" or null},  the environment cuInit saw;
//    "ops_dropped", "calls_dropped": entries past the first 200000 of each, counted, not kept}
// Stream, context and event numbers are the fake's ids, the same in every entry.
const char* fake_cuda_log_json(void);
// Runs the device until nothing is runnable (as a synchronisation point would), then writes the
// log to $FAKE_CUDA_LOG if set.
void fake_cuda_progress(void);
// The reason the last fake_cuda_reset failed.
const char* fake_cuda_last_error(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_FAKE_CUDA_CONTROL_H_
