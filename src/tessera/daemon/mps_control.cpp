#include "tessera/daemon/mps_control.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "tessera/core/log.hpp"
#include "tessera/core/try.hpp"
#include "tessera/core/write_all.hpp"

extern char** environ;

namespace tessera::daemon {
namespace {

// Runs `control [args]` with the MPS directories in its environment and `input` on its stdin;
// returns its exit status (-1 when it did not exit within 10 s and was killed).
core::Result<int> run_control(const MpsOptions& o, const std::vector<std::string>& args,
                              const std::string& input) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("CUDA_MPS_PIPE_DIRECTORY=", 0) == 0 ||
        entry.rfind("CUDA_MPS_LOG_DIRECTORY=", 0) == 0) {
      continue;
    }
    env_text.push_back(entry);
  }
  env_text.push_back("CUDA_MPS_PIPE_DIRECTORY=" + o.pipe_directory);
  env_text.push_back("CUDA_MPS_LOG_DIRECTORY=" + o.log_directory);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_text{o.control};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) {
    return core::failf(core::Domain::kIo, core::Code::kInternal, "pipe: {}", std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, o.control.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  if (rc != 0) {
    close(in[1]);
    return core::failf(core::Domain::kIo, core::Code::kNotFound,
                       "cannot run the MPS control program '{}': {} (is the NVIDIA driver's "
                       "nvidia-cuda-mps-control installed?)",
                       o.control, std::strerror(rc));
  }
  (void)core::write_all(in[1], input);
  close(in[1]);
  int status = 0;
  // ASSUMPTION: the control program answers a command or daemonises within 10 s.
  for (int i = 0; i < 1000; ++i) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

}  // namespace

core::Result<std::unique_ptr<MpsControl>> MpsControl::start(const MpsOptions& options) {
  std::error_code error;
  for (const std::string& d : {options.pipe_directory, options.log_directory}) {
    std::filesystem::create_directories(d, error);
    if (error) {
      return core::failf(core::Domain::kIo, core::Code::kFailedPrecondition,
                         "cannot make the MPS directory '{}': {}", d, error.message());
    }
  }
  // The control daemon listens on "control" in its pipe directory.
  struct stat st {};
  const std::string socket = options.pipe_directory + "/control";
  if (stat(socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    auto alive = run_control(options, {}, "get_server_list\n");
    if (alive && *alive == 0) {
      core::logger().info("MPS: a control daemon already runs in {}; using it", socket);
      return std::unique_ptr<MpsControl>(new MpsControl(options, false));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(const int status, run_control(options, {"-d"}, ""));
  if (status != 0) {
    return core::failf(core::Domain::kIo, core::Code::kFailedPrecondition,
                       "'{} -d' exited with status {}: the MPS control daemon did not start (its "
                       "log is in {})",
                       options.control, status, options.log_directory);
  }
  return std::unique_ptr<MpsControl>(new MpsControl(options, true));
}

MpsControl::~MpsControl() {
  if (!owned_) return;
  auto status = run_control(options_, {}, "quit\n");
  if (!status || *status != 0) {
    core::logger().warn("MPS: 'quit' to the control daemon in {} did not succeed",
                        options_.pipe_directory);
  }
}

}  // namespace tessera::daemon
