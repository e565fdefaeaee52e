#include "headless_chromium.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tessera::test {

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::optional<std::filesystem::path> find_chromium() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    for (const char* name : {"chromium", "chromium-browser"}) {
      const std::filesystem::path candidate = std::filesystem::path(dir) / name;
      std::error_code ec;
      if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
    }
  }
  return std::nullopt;
}

ChromiumRun run_chromium(const std::filesystem::path& chromium, const std::filesystem::path& page,
                         const std::vector<std::string>& args,
                         const std::filesystem::path& work_dir) {
  // Named after the page, so that tests run in parallel on different pages do not share them.
  const std::string stem = page.stem().string();
  const std::filesystem::path profile = work_dir / (stem + ".chromium-profile");
  const std::filesystem::path out = work_dir / (stem + ".chromium.stdout");
  const std::filesystem::path err = work_dir / (stem + ".chromium.stderr");
  std::filesystem::remove_all(profile);
  std::filesystem::create_directories(profile);
  // The virtual time budget lets the page's asynchronous work (vega-embed's promises) finish
  // before the DOM is dumped or the screenshot taken.
  std::string command = fmt::format(
      "timeout 60 {} --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 "
      "--user-data-dir={} --virtual-time-budget=30000",
      shell_quote(chromium.string()), shell_quote(profile.string()));
  for (const std::string& a : args) {
    command += ' ';
    command += shell_quote(a);
  }
  command +=
      fmt::format(" {} >{} 2>{}", shell_quote("file://" + std::filesystem::absolute(page).string()),
                  shell_quote(out.string()), shell_quote(err.string()));
  const int status = std::system(command.c_str());
  ChromiumRun run;
  run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.stdout_text = read_file(out);
  run.log = read_file(err);
  std::filesystem::remove_all(profile);
  return run;
}

std::vector<std::string> console_errors(const std::string& log) {
  std::vector<std::string> errors;
  std::stringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("CONSOLE") == std::string::npos) continue;
    if (line.find("ERROR") != std::string::npos || line.find("Uncaught") != std::string::npos) {
      errors.push_back(line);
    }
  }
  return errors;
}

std::vector<std::string> plot_elements(const std::string& dom) {
  std::vector<std::string> plots;
  for (std::size_t i = 0;; ++i) {
    const std::size_t at = dom.find(fmt::format("id=\"plot-{}\"", i));
    if (at == std::string::npos) break;
    const std::size_t div = dom.rfind("<div", at);
    const std::size_t start = div == std::string::npos ? at : div;
    const std::size_t end = std::min(dom.find("<script", at), dom.size());
    plots.push_back(dom.substr(start, end - start));
  }
  return plots;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

}  // namespace tessera::test
