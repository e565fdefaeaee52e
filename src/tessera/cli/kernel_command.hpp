#pragma once
// `tessera kernel gemm|attention|memcpy|step`: one operation's kernels on a simulated GPU, each
// with its launch shape and simulated time, so a single measurement on a real GPU can be compared
// with the model (`tessera validate` does the same for whole files). `step` is a whole prefill or
// decode step of a catalog model, its kernels summed by name.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "tessera/cli/command.hpp"

namespace tessera::cli {

struct KernelFlags {
  CLI::App* command = nullptr;
  CLI::App* gemm = nullptr;
  CLI::App* attention = nullptr;
  CLI::App* memcpy = nullptr;
  CLI::App* step = nullptr;
  std::string model = "llama-3-8b";
  std::string gpu = "H100-SXM5-80GB";
  std::string dtype = "bf16";
  std::int64_t m = 4096;
  std::int64_t n = 4096;
  std::int64_t k = 4096;
  std::string phase = "prefill";
  int heads = 32;
  int kv_heads = 8;
  int head_dim = 128;
  int batch = 1;
  int seq_len = 1024;
  int kv_len = 1024;
  int tp = 1;
  std::int64_t bytes = 256 << 20;
  bool stream_k = false;
};

void add_kernel_options(CLI::App& command, KernelFlags& flags);
Outcome run_kernel_command(const KernelFlags& flags);

}  // namespace tessera::cli
