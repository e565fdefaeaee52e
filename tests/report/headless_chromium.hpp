#pragma once
// Runs a page in headless Chromium for the tests: the DOM after its scripts ran, the browser's
// log (console messages included), and screenshots.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tessera::test {

// A chromium binary on PATH (chromium, chromium-browser), or nullopt.
std::optional<std::filesystem::path> find_chromium();

struct ChromiumRun {
  int exit_status = -1;  // 124: the run took longer than its timeout
  std::string stdout_text;
  std::string log;  // stderr, with --enable-logging=stderr
};

// `timeout 60 chromium --headless ... <args> file://<page>`, with a fresh profile folder under
// `work_dir` (a second browser would otherwise hand its page to the first and exit). Its output
// is left in `work_dir` as <page stem>.chromium.stdout and .stderr.
ChromiumRun run_chromium(const std::filesystem::path& chromium, const std::filesystem::path& page,
                         const std::vector<std::string>& args,
                         const std::filesystem::path& work_dir);

// The log's console messages that are errors: lines with CONSOLE and ERROR or Uncaught.
std::vector<std::string> console_errors(const std::string& log);

// The DOM of each plot's element ("<div ... id=\"plot-N\"" up to its data's <script>), in order.
std::vector<std::string> plot_elements(const std::string& dom);

// How often `needle` occurs in `text`.
std::size_t count(const std::string& text, const std::string& needle);

}  // namespace tessera::test
