// The fake GPU's execution: the scheduler that runs stream queues at synchronisation points, the
// virtual clock, and the host emulation of tessera's kernels (kernel_params.h).
//
// Scheduling: an operation is runnable when it heads its stream's queue and, for a wait, the
// record operation it waits for has executed. A resident tessera_control heads its stream until
// an EXIT command, so nothing behind it runs. run() repeatedly services the resident control
// kernels' mailboxes and executes one runnable operation chosen by the script's schedule
// ("fifo": the oldest enqueued; "reverse": the newest stream's; "round_robin": the next stream
// after the last one served, in id order) until none is runnable.
//
// Virtual time: each stream has a clock; a launch starts at its stream's clock and ends
// kernel_ns later; a wait moves the stream's clock to the recorded event's time; an event's time
// is its stream's clock when the record executes. Streams overlap in time as on a GPU.
#include <atomic>
#include <cstring>

#include "fake_cuda_state.hpp"
#include "tessera/backends/cuda/kernel_params.h"

namespace fake_cuda {
namespace {

using nlohmann::json;

std::string hex(const std::vector<unsigned char>& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

template <typename T>
T params_as(const Op& op) {
  T p{};
  std::memcpy(&p, op.params.data(), sizeof p);
  return p;
}

std::uint32_t load32(const void* p) {
  return __atomic_load_n(static_cast<const std::uint32_t*>(p), __ATOMIC_ACQUIRE);
}
void store32(void* p, std::uint32_t v) {
  __atomic_store_n(static_cast<std::uint32_t*>(p), v, __ATOMIC_RELEASE);
}

const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::kLaunch: return "launch";
    case OpKind::kEventRecord: return "event_record";
    case OpKind::kWait: return "wait";
    case OpKind::kCopyHtoD: return "memcpy_htod";
    case OpKind::kCopyDtoH: return "memcpy_dtoh";
    case OpKind::kMemset: return "memset";
    case OpKind::kGraphLaunch: return "graph_launch";
  }
  return "?";
}

}  // namespace

std::size_t params_size(const std::string& kernel) {
  if (kernel == TESSERA_KERNEL_EMULATE) return sizeof(TesseraEmulateParams);
  if (kernel == TESSERA_KERNEL_CONTROL) return sizeof(TesseraControlParams);
  if (kernel == TESSERA_KERNEL_RANGE_DOT) return sizeof(TesseraRangeDotParams);
  return 0;
}

std::size_t image_size(const void* image) {
  const auto* b = static_cast<const unsigned char*>(image);
  std::uint32_t magic = 0;
  std::memcpy(&magic, b, 4);
  // The fatbin header (fatbinary_section.h): magic 0xBA55ED50, u16 version, u16 header size,
  // u64 size of what follows the header.
  if (magic == 0xBA55ED50u) {
    std::uint16_t header = 0;
    std::uint64_t body = 0;
    std::memcpy(&header, b + 6, 2);
    std::memcpy(&body, b + 8, 8);
    return header + body;
  }
  // An ELF cubin: its section header table is its end (ELF64: e_shoff at 0x28, e_shentsize at
  // 0x3A, e_shnum at 0x3C).
  if (std::memcmp(b,
                  "\x7f"
                  "ELF",
                  4) == 0) {
    std::uint64_t shoff = 0;
    std::uint16_t shentsize = 0;
    std::uint16_t shnum = 0;
    std::memcpy(&shoff, b + 0x28, 8);
    std::memcpy(&shentsize, b + 0x3A, 2);
    std::memcpy(&shnum, b + 0x3C, 2);
    return shoff + std::uint64_t{shentsize} * shnum;
  }
  return std::strlen(reinterpret_cast<const char*>(b)) + 1;  // PTX text
}

std::uint64_t State::duration(const std::string& kernel) const {
  auto it = kernel_ns.find(kernel);
  return it != kernel_ns.end() ? it->second : kernel_ns.at("*");
}

void State::fault(const std::string& what) {
  // Like an illegal address on a GPU: the context is broken and every later synchronisation
  // returns the error (CUDA_ERROR_ILLEGAL_ADDRESS is sticky, cuda.h).
  sticky_ = CUDA_ERROR_ILLEGAL_ADDRESS;
  push_op(json{{"seq", executed_}, {"op", "fault"}, {"what", what}});
}

Stream* State::pick() {
  std::vector<std::pair<std::uint64_t, Stream*>> ready;
  for (auto& [id, s] : streams) {
    if (s.queue.empty() || s.resident) continue;
    const Op& head = s.queue.front();
    if (head.kind == OpKind::kWait && head.record_op != 0 && !record_done(head.record_op)) continue;
    ready.emplace_back(id, &s);
  }
  if (ready.empty()) return nullptr;
  std::pair<std::uint64_t, Stream*> chosen = ready.front();
  if (schedule == "fifo") {
    for (const auto& r : ready) {
      if (r.second->queue.front().id < chosen.second->queue.front().id) chosen = r;
    }
  } else if (schedule == "reverse") {
    chosen = ready.back();  // streams are ordered by id: the last is the newest
  } else {
    for (const auto& r : ready) {
      if (r.first > last_rr_) {
        chosen = r;
        break;
      }
    }
    last_rr_ = chosen.first;
  }
  return chosen.second;
}

void State::run() {
  for (;;) {
    const bool exited = service_controls();
    Stream* s = pick();
    if (s == nullptr && !exited) break;
    if (s == nullptr) continue;
    std::uint64_t id = 0;
    for (auto& [sid, st] : streams) {
      if (&st == s) id = sid;
    }
    execute_head(id, *s);
  }
  // Destroyed streams go once their work is done.
  for (auto it = streams.begin(); it != streams.end();) {
    it = it->second.destroyed && it->second.queue.empty() ? streams.erase(it) : std::next(it);
  }
}

CUresult State::drain(std::uint64_t stream, const char* call) {
  run();
  if (sticky_ != CUDA_SUCCESS) return sticky_;
  const Stream& s = streams.at(stream);
  if (s.queue.empty()) return CUDA_SUCCESS;
  const Op& head = s.queue.front();
  note(json{
      {"call", call},
      {"stream", stream},
      {"blocked_on", s.resident ? "a resident " + head.kernel : std::string(op_name(head.kind))},
      {"why",
       "the real driver would wait forever; the fake returns "
       "CUDA_ERROR_LAUNCH_TIMEOUT"}});
  return CUDA_ERROR_LAUNCH_TIMEOUT;
}

void State::execute_head(std::uint64_t stream_id, Stream& s) {
  Op op = s.queue.front();
  json entry{{"seq", executed_},    {"op", op_name(op.kind)}, {"enqueue", op.id},
             {"stream", stream_id}, {"ctx", s.ctx},           {"green_ctx", s.green},
             {"device", s.device},  {"priority", s.priority}};
  bool keep_head = false;
  switch (op.kind) {
    case OpKind::kLaunch:
      execute_launch(s, stream_id, op, entry);
      keep_head = s.resident;
      break;
    case OpKind::kEventRecord:
      record_times_[op.id] = s.time_ns;
      entry["event"] = op.event;
      entry["time_ns"] = s.time_ns;
      break;
    case OpKind::kWait:
      entry["event"] = op.event;
      if (op.record_op != 0) {
        entry["record"] = op.record_op;
        s.time_ns = std::max(s.time_ns, record_times_.at(op.record_op));
      } else {
        entry["record"] = nullptr;  // never recorded: no wait, as in CUDA
      }
      entry["time_ns"] = s.time_ns;
      break;
    case OpKind::kCopyHtoD:
    case OpKind::kCopyDtoH:
    case OpKind::kMemset: {
      entry["bytes"] = op.bytes;
      entry["time_ns"] = s.time_ns;
      const bool to_device = op.kind != OpKind::kCopyDtoH;
      void* dst = to_device ? check_range(op.dst, op.bytes) : reinterpret_cast<void*>(op.dst);
      if (dst == nullptr || (op.kind == OpKind::kCopyDtoH && !check_range(op.src, op.bytes))) {
        fault(std::string(op_name(op.kind)) + " outside any allocation");
        break;
      }
      if (op.kind == OpKind::kMemset) {
        std::memset(dst, op.value, op.bytes);
      } else {
        std::memmove(dst, reinterpret_cast<const void*>(op.src), op.bytes);
      }
      break;
    }
    case OpKind::kGraphLaunch:
      entry["graph"] = op.graph;
      entry["start_ns"] = s.time_ns;
      s.time_ns += duration("graph");
      entry["end_ns"] = s.time_ns;
      break;
  }
  device_clock_ns_ = std::max(device_clock_ns_, s.time_ns);
  if (keep_head) {
    s.resident_log = ops_.size();  // where push_op puts it (ops_.size() if the log is full)
  } else {
    s.queue.pop_front();
  }
  push_op(std::move(entry));
}

void State::execute_launch(Stream& s, std::uint64_t stream_id, const Op& op, json& entry) {
  (void)stream_id;
  entry["kernel"] = op.kernel;
  entry["entry"] = op.entry;
  entry["sms"] = s.sms;
  entry["grid"] = {op.grid[0], op.grid[1], op.grid[2]};
  entry["block"] = {op.block[0], op.block[1], op.block[2]};
  entry["shared"] = op.shared;
  entry["params_hex"] = hex(op.params);
  entry["start_ns"] = s.time_ns;
  if (op.kernel == TESSERA_KERNEL_CONTROL) {
    const auto p = params_as<TesseraControlParams>(op);
    if (!check_range(p.mailbox, sizeof(TesseraControlMailbox)) ||
        !check_range(p.yield_flags, std::uint64_t{p.slots} * 4)) {
      fault("tessera_control: mailbox or yield_flags outside any allocation");
      entry["end_ns"] = s.time_ns;
      return;
    }
    s.resident = true;  // it never completes on its own
    entry["resident"] = true;
    return;
  }
  const std::uint64_t grid = op.grid[0];
  if (op.kernel == TESSERA_KERNEL_EMULATE) {
    const auto p = params_as<TesseraEmulateParams>(op);
    const std::uint64_t end = std::min(p.block_offset + grid, p.virtual_blocks);
    const bool bad = (p.yield_flag != 0 && !check_range(p.yield_flag, 4)) ||
                     (p.yielded_blocks != 0 && !check_range(p.yielded_blocks, 4)) ||
                     (p.checkpoints > 0 && !check_range(p.progress, p.virtual_blocks * 4));
    if (bad) {
      fault("tessera_emulate: yield_flag, yielded_blocks or progress outside any allocation");
    } else {
      const bool yield = p.yield_flag != 0 && load32(reinterpret_cast<void*>(p.yield_flag)) != 0;
      auto* progress = reinterpret_cast<std::uint32_t*>(p.progress);
      std::uint32_t yielded = 0;
      for (std::uint64_t bid = p.block_offset; bid < end && p.checkpoints > 0; ++bid) {
        const std::uint32_t done = p.checkpoints + 1;
        if (progress[bid] >= done) continue;
        if (!yield) {
          progress[bid] = done;
        } else if (++progress[bid] < done) {
          ++yielded;
        }
      }
      if (yielded > 0 && p.yielded_blocks != 0) {
        auto* y = reinterpret_cast<std::uint32_t*>(p.yielded_blocks);
        *y += yielded;
      }
      entry["yielded"] = yielded;
    }
  } else if (op.kernel == TESSERA_KERNEL_RANGE_DOT) {
    const auto p = params_as<TesseraRangeDotParams>(op);
    const std::uint64_t end = std::min(p.block_offset + grid, p.virtual_blocks);
    if (!check_range(p.x, p.virtual_blocks * p.per_block * 4) ||
        !check_range(p.w, std::uint64_t{p.per_block} * 4) ||
        !check_range(p.out, p.virtual_blocks * 4)) {
      fault("tessera_range_dot: x, w or out outside any allocation");
    } else {
      const auto* x = reinterpret_cast<const float*>(p.x);
      const auto* w = reinterpret_cast<const float*>(p.w);
      auto* out = reinterpret_cast<float*>(p.out);
      // Index order: the GPU's reduction tree is not reproduced, so results match the GPU's
      // only to rounding.
      for (std::uint64_t bid = p.block_offset; bid < end; ++bid) {
        float sum = 0.0f;
        for (std::uint32_t i = 0; i < p.per_block; ++i) sum += x[bid * p.per_block + i] * w[i];
        out[bid] = sum;
      }
    }
  }
  s.time_ns += duration(op.kernel);
  entry["end_ns"] = s.time_ns;
}

bool State::service_controls() {
  bool exited = false;
  for (auto& [id, s] : streams) {
    if (!s.resident) continue;
    const Op& head = s.queue.front();
    const auto p = params_as<TesseraControlParams>(head);
    auto* box = reinterpret_cast<TesseraControlMailbox*>(p.mailbox);
    const std::uint32_t seq = load32(&box->seq);
    if (seq == load32(&box->ack_seq)) continue;
    const std::uint32_t cmd = box->op;
    const std::uint32_t slot = box->slot;
    json entry{{"seq", executed_},
               {"op", "control"},
               {"stream", id},
               {"command", cmd},
               {"slot", slot},
               {"mailbox_seq", seq},
               {"time_ns", device_clock_ns_}};
    if (cmd == TESSERA_CONTROL_YIELD || cmd == TESSERA_CONTROL_CLEAR) {
      if (slot < p.slots) {
        store32(reinterpret_cast<std::uint32_t*>(p.yield_flags) + slot,
                cmd == TESSERA_CONTROL_YIELD ? 1 : 0);
      } else {
        entry["ignored"] = "slot out of range";
      }
    }
    box->ack_time_ns = device_clock_ns_;
    store32(&box->ack_seq, seq);
    if (cmd == TESSERA_CONTROL_EXIT) {
      s.resident = false;
      s.time_ns = std::max(s.time_ns, device_clock_ns_);
      if (s.resident_log < ops_.size()) ops_[s.resident_log]["end_ns"] = s.time_ns;
      s.queue.pop_front();
      exited = true;
    }
    push_op(std::move(entry));
  }
  return exited;
}

}  // namespace fake_cuda
