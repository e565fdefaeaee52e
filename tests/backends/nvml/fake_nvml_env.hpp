#pragma once
// Points the NVML backend at the fake libnvidia-ml (tests/support/native/fake_nvml) with a script
// and a call log in a fresh temporary directory, and reads the log back.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "tessera/backends/nvml/nvml_library.hpp"

namespace tessera::test {

class FakeNvmlEnv {
 public:
  explicit FakeNvmlEnv(const nlohmann::json& script = nlohmann::json::object()) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           (std::string("fake_nvml_") + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    set_script(script);
    setenv("FAKE_NVML_LOG", log_path().c_str(), 1);
  }
  // Keeps the directory (script and call log) when the test failed, for a look at the calls.
  ~FakeNvmlEnv() {
    unsetenv("FAKE_NVML_SCRIPT");
    unsetenv("FAKE_NVML_LOG");
    if (!::testing::Test::HasFailure()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  // Read by the fake at its next nvmlInit_v2.
  void set_script(const nlohmann::json& script) {
    const std::string path = (dir_ / "script.json").string();
    std::ofstream(path) << script.dump();
    setenv("FAKE_NVML_SCRIPT", path.c_str(), 1);
  }

  static core::Result<std::shared_ptr<cuda::NvmlLibrary>> open_library() {
    auto lib = cuda::NvmlLibrary::open(TESSERA_FAKE_NVML);
    if (!lib) return std::unexpected(lib.error());
    return std::shared_ptr<cuda::NvmlLibrary>(std::move(*lib));
  }

  std::string log_path() const { return (dir_ / "calls.log").string(); }
  std::filesystem::path dir() const { return dir_; }

  std::vector<std::string> log() const {
    std::vector<std::string> lines;
    std::ifstream in(log_path());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  std::string log_text() const {
    std::ostringstream out;
    for (const std::string& l : log()) out << l << '\n';
    return out.str();
  }
  void clear_log() const { std::ofstream(log_path(), std::ios::trunc); }

 private:
  std::filesystem::path dir_;
};

}  // namespace tessera::test
