// docs/reference.md against the registries it documents: every sharing mode and experiment has
// its `### name` section under its heading, every mode option its table row, and the page names
// nothing the registries do not hold (a renamed or removed entry fails here, not in a reader's
// hands).

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "tessera/experiment/registry.hpp"
#include "tessera/gpu/registry.hpp"

namespace tessera::experiment {
namespace {

std::string reference_text() {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/docs/reference.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The `### name` headings between `## section` and the next `## `.
std::set<std::string> headings_under(const std::string& text, const std::string& section) {
  std::set<std::string> out;
  std::istringstream lines(text);
  std::string line;
  bool inside = false;
  while (std::getline(lines, line)) {
    if (line.rfind("## ", 0) == 0) inside = line == "## " + section;
    if (inside && line.rfind("### ", 0) == 0) out.insert(line.substr(4));
  }
  return out;
}

TEST(ReferenceDoc, NamesEverySharingModeAndNothingElse) {
  const std::string text = reference_text();
  ASSERT_FALSE(text.empty()) << "cannot read docs/reference.md";
  std::set<std::string> registered;
  for (const auto& e : gpu::sharing_modes()) registered.emplace(e.name);
  EXPECT_EQ(headings_under(text, "Sharing modes"), registered);
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

TEST(ReferenceDoc, NamesEveryExperimentAndNothingElse) {
  const std::string text = reference_text();
  ASSERT_FALSE(text.empty()) << "cannot read docs/reference.md";
  std::set<std::string> registered;
  for (const auto& e : experiments()) registered.insert(e.name());
  EXPECT_EQ(headings_under(text, "Experiments"), registered);
}

}  // namespace
}  // namespace tessera::experiment
