// The test-side controls of the fake libcuda (tests/support/fake_cuda/fake_cuda.cpp). The fake
// exports the driver entry points tessera uses (and cuGetProcAddress/_v2, so that the real
// loading path and the interposer are exercised) plus these functions. Tests reach them by
// dlopen-ing the same file the code under test loaded (the same handle) and dlsym-ing them, or
// through tests/support/fake_cuda/fake_cuda_env.hpp.
//
// The fake models one or more GPUs with the driver's observable behaviour as far as tessera uses
// it: primary and green contexts; SM resources split by count with the driver's granularity rules
// (minimum partition and alignment, fewer groups than asked when SMs run out, optional shortfall
// in what a green context really gets); streams as FIFO queues of operations (launches, event
// records, event waits, copies) that run asynchronously: nothing runs at enqueue time; the device
// progresses only at synchronisation points (cuStreamSynchronize, cuCtxSynchronize,
// cuEventSynchronize, cuEventQuery, cuStreamQuery, fake_cuda_progress) and then picks runnable
// stream heads in a scripted order ("fifo": oldest enqueue first; "reverse": newest stream first;
// "round_robin"), so a missing cuStreamWaitEvent shows up as a reordering in the execution log.
// Event times advance by each launch's scripted duration on a virtual GPU clock.
//
// tessera's own kernels (kernel_params.h) are emulated on the host when they execute:
// tessera_emulate honours block_offset and writes progress and yielded_blocks from its yield flag;
// tessera_control is resident: it never completes on its own, and at every progress point it
// carries out the command in its mailbox (set or clear a yield flag, ack, exit);
// tessera_range_dot computes its output. Device memory is host memory, and mapped host memory has
// the same address on both sides, so emulation can read and write it.
#ifndef TESSERA_FAKE_CUDA_CONTROL_H_
#define TESSERA_FAKE_CUDA_CONTROL_H_

#ifdef __cplusplus
extern "C" {
#endif

// Replaces the fake's whole state with the script (JSON text; "" or null: the defaults) and
// clears the log. Script keys (all optional):
//   {"devices": [{"name": "NVIDIA H200", "sms": 132, "cc": [9, 0], "memory_mib": 144384,
//                 "min_partition": 8, "alignment": 8, "shortfall": 0, "uuid": "GPU-..."}],
//    "driver_version": 13000,
//    "green_contexts": true,          // false: the green-context entry points are not exported
//                                     // through cuGetProcAddress (a 12.3 driver)
//    "schedule": "fifo",              // or "reverse", "round_robin"
//    "kernel_ns": {"tessera_emulate": 10000, "*": 5000},  // per-launch virtual duration
//    "fail": [{"call": "cuGreenCtxCreate", "nth": 2, "ret": 2}],  // nth call from the reset
//    "no_device": false}              // cuInit returns CUDA_ERROR_NO_DEVICE
// Returns 0, or -1 when the script is malformed (then fake_cuda_last_error says why).
int fake_cuda_reset(const char* script_json);
// The execution log as JSON, one entry per executed operation in execution order:
//   [{"seq": 0, "op": "launch", "kernel": "tessera_emulate", "stream": 3, "green_ctx": 1,
//     "sms": 16, "grid": [4,1,1], "block": [256,1,1], "shared": 0, "params_hex": "...",
//     "start_ns": 0, "end_ns": 10000}, {"op": "event_record", ...}, {"op": "wait", ...}, ...]
// plus "calls": every API call in call order with its return code. The string is owned by the
// fake and valid until the next call into it.
const char* fake_cuda_log_json(void);
// Runs the device until nothing is runnable (as a synchronisation point would).
void fake_cuda_progress(void);
// The reason the last fake_cuda_reset failed.
const char* fake_cuda_last_error(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_FAKE_CUDA_CONTROL_H_
