#pragma once
// The MPS control daemon tesserad owns with --mps: green contexts in several processes run at
// once only as clients of one MPS server (shared/notes/cuda-api-facts.md, section 2). At start
// tesserad runs `nvidia-cuda-mps-control -d` with its own pipe and log directories
// (CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY), which its tenants must be given too, and at
// exit it sends the control daemon "quit". A control daemon already running in that pipe
// directory is used and left running.

#include <memory>
#include <string>

#include "tessera/core/error.hpp"

namespace tessera::daemon {

struct MpsOptions {
  std::string control = "nvidia-cuda-mps-control";  // found on PATH unless a path
  std::string pipe_directory;
  std::string log_directory;
};

class MpsControl {
 public:
  // Makes the directories, starts the control daemon (or finds one running there) and returns
  // the handle that stops it. Fails naming the program and its exit status.
  static core::Result<std::unique_ptr<MpsControl>> start(const MpsOptions& options);
  // Sends "quit" when this handle started the control daemon.
  ~MpsControl();
  MpsControl(const MpsControl&) = delete;
  MpsControl& operator=(const MpsControl&) = delete;

  const std::string& pipe_directory() const { return options_.pipe_directory; }
  bool owned() const { return owned_; }

 private:
  MpsControl(MpsOptions options, bool owned) : options_(std::move(options)), owned_(owned) {}
  MpsOptions options_;
  bool owned_;
};

}  // namespace tessera::daemon
