// docs/reference.md against what it documents. The command line: every command has its
// `### tessera <command>` section under "## Commands", every option of it is named there and the
// section names no option the command lacks; the global options are named before the first
// command. The registries: every sharing mode, MIG scheme, preemption method and experiment has
// its `### name` section under its heading, every mode option its table row, and the page names
// nothing the registries do not hold. A renamed, added or removed entry fails here, not in a
// reader's hands.

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/cli/command_line.hpp"
#include "tessera/cluster/registry.hpp"
#include "tessera/experiment/registry.hpp"
#include "tessera/gpu/registry.hpp"
#include "tessera/mig/registry.hpp"

namespace tessera::cli {
namespace {

std::string reference_text() {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/docs/reference.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Sections {
  // "## name" -> the `### ` headings under it.
  std::map<std::string, std::set<std::string>> headings;
  // "### heading" under "## Commands" -> its text; "" -> the text before the first of them.
  std::map<std::string, std::string> commands;
};

Sections sections(const std::string& text) {
  Sections out;
  std::istringstream lines(text);
  std::string line;
  std::string section;
  std::string heading;
  while (std::getline(lines, line)) {
    if (line.rfind("## ", 0) == 0) {
      section = line.substr(3);
      heading.clear();
    } else if (line.rfind("### ", 0) == 0) {
      heading = line.substr(4);
      out.headings[section].insert(heading);
    } else if (section == "Commands") {
      out.commands[heading] += line + "\n";
    }
  }
  return out;
}

template <class Entries, class NameOf>
std::set<std::string> names(const Entries& entries, NameOf name_of) {
  std::set<std::string> out;
  for (const auto& e : entries) out.emplace(name_of(e));
  return out;
}

// The option names a section writes in its code spans: "--json" and "-q" of "`--json FILE`",
// "`-q`" and "`tessera [--log-level LEVEL] COMMAND`"; not those of another program's command
// line ("`lstopo --of xml`").
std::set<std::string> options_named(const std::string& text) {
  std::set<std::string> out;
  const auto is_name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-';
  };
  for (std::size_t open = text.find('`'); open != std::string::npos;) {
    const std::size_t close = text.find('`', open + 1);
    if (close == std::string::npos) break;
    const std::string span = text.substr(open + 1, close - open - 1);
    if (!span.starts_with('-') && !span.starts_with("tessera")) {
      open = text.find('`', close + 1);
      continue;
    }
    for (std::size_t i = 0; i < span.size();) {
      std::size_t end = i;
      while (end < span.size() && is_name_char(span[end])) ++end;
      const std::string token = span.substr(i, end - i);
      const std::size_t dashes = token.rfind("--", 0) == 0 ? 2 : token.rfind('-', 0) == 0 ? 1 : 0;
      if (dashes > 0 && token.size() > dashes &&
          std::isalpha(static_cast<unsigned char>(token[dashes])) != 0) {
        out.insert(token);
      }
      i = end == i ? i + 1 : end;
    }
    open = text.find('`', close + 1);
  }
  out.erase("--help");  // every command has it; the page says so once
  return out;
}

// Checks one command's section: each option is named by one of its names at least, and every
// long option the section names is the command's.
void expect_documents(const std::string& section, const CLI::App& app, const std::string& path) {
  const std::set<std::string> named = options_named(section);
  std::set<std::string> long_names;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_lnames().empty() && o->get_snames().empty()) continue;  // positional
    bool documented = false;
    for (const std::string& n : o->get_lnames()) {
      if (n == "help") documented = true;
      long_names.insert("--" + n);
      documented = documented || named.contains("--" + n);
    }
    for (const std::string& n : o->get_snames()) {
      documented = documented || n == "h" || named.contains("-" + n);
    }
    EXPECT_TRUE(documented) << path << ": " << o->get_name() << " is not in docs/reference.md";
  }
  for (const std::string& n : named) {
    if (n.rfind("--", 0) == 0) {
      EXPECT_TRUE(long_names.contains(n))
          << path << ": the page names " << n << ", which the command does not have";
    }
  }
}

// Every command that runs (the leaves: `tessera mig` only groups its three), by its path.
void leaves(CLI::App& app, const std::string& path, std::map<std::string, CLI::App*>& out) {
  const std::vector<CLI::App*> subs = app.get_subcommands([](CLI::App*) { return true; });
  if (subs.empty()) out[path] = &app;
  for (CLI::App* sub : subs) leaves(*sub, path + " " + sub->get_name(), out);
}

TEST(ReferenceDoc, HasASectionForEveryCommandAndNothingElse) {
  const Sections doc = sections(reference_text());
  ASSERT_FALSE(doc.commands.empty()) << "cannot read docs/reference.md";
  CommandLine line;
  std::map<std::string, CLI::App*> commands;
  for (CLI::App* sub : line.app().get_subcommands([](CLI::App*) { return true; })) {
    leaves(*sub, "tessera " + sub->get_name(), commands);
  }
  EXPECT_EQ(doc.headings.at("Commands"), names(commands, [](const auto& c) { return c.first; }));
}

TEST(ReferenceDoc, NamesEveryOptionOfEachCommandAndNoOther) {
  const Sections doc = sections(reference_text());
  ASSERT_FALSE(doc.commands.empty()) << "cannot read docs/reference.md";
  CommandLine line;
  expect_documents(doc.commands.at(""), line.app(), "tessera (before the first command)");
  std::map<std::string, CLI::App*> commands;
  for (CLI::App* sub : line.app().get_subcommands([](CLI::App*) { return true; })) {
    leaves(*sub, "tessera " + sub->get_name(), commands);
  }
  for (const auto& [path, app] : commands) {
    const auto section = doc.commands.find(path);
    if (section == doc.commands.end()) continue;  // the test above names it
    expect_documents(section->second, *app, path);
  }
}

TEST(ReferenceDoc, HasASectionForEveryRegistryEntryAndNothingElse) {
  const Sections doc = sections(reference_text());
  ASSERT_FALSE(doc.headings.empty()) << "cannot read docs/reference.md";
  const auto named = [](const auto& e) { return std::string(e.name); };
  EXPECT_EQ(doc.headings.at("Sharing modes"), names(gpu::sharing_modes(), named));
  EXPECT_EQ(doc.headings.at("MIG schemes"), names(mig::schemes(), named));
  EXPECT_EQ(doc.headings.at("Preemption methods"), names(cluster::preemption_methods(), named));
  EXPECT_EQ(doc.headings.at("Experiments"),
            names(experiment::experiments(), [](const auto& e) { return std::string(e.name()); }));
}

TEST(ReferenceDoc, HasARowForEveryModeOption) {
  const std::string text = reference_text();
  ASSERT_FALSE(text.empty()) << "cannot read docs/reference.md";
  for (const auto& e : gpu::sharing_modes()) {
    for (const auto& option : e.options) {
      EXPECT_NE(text.find("\n| `" + std::string(option.key) + "` |"), std::string::npos)
          << e.name << "'s option " << option.key << " has no row in docs/reference.md";
    }
  }
}

}  // namespace
}  // namespace tessera::cli
