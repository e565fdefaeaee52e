#pragma once
// Reading YAML and JSON input with errors that name the file, line and field.
//
// Both formats go through yaml-cpp (JSON is valid YAML), so every node keeps its source mark.
// A ConfigNode knows its dotted path from the document root ("tenants[1].slo.ttft"), and every
// accessor returns Result: a wrong type, a missing field or an unknown key becomes an Error such as
//   examples/demo.yaml:14:9: tenants[1].slo.ttft: expected a duration like '200ms', got 'fast'

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/time.hpp"

namespace tessera::core {

class ConfigNode {
 public:
  // The file is read through core::read_file (at most kMaxDocumentBytes); `what` names it in
  // errors ("cannot open job file 'jobs.yaml': permission denied").
  static Result<ConfigNode> load_file(const std::string& file, std::string_view what = "file");
  static Result<ConfigNode> parse(std::string_view text, std::string source_name);

  const std::string& path() const { return path_; }
  const std::string& source() const { return *source_; }
  int line() const { return node_.Mark().line + 1; }
  int column() const { return node_.Mark().column + 1; }

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool has(std::string_view key) const;

  Result<ConfigNode> at(std::string_view key) const;           // a required field
  std::optional<ConfigNode> find(std::string_view key) const;  // an optional field
  Result<std::vector<ConfigNode>> items() const;               // elements of a sequence
  std::vector<std::string> keys() const;                       // keys of a map, in file order

  Result<std::string> as_string() const;
  Result<double> as_double() const;
  Result<std::int64_t> as_int() const;
  Result<bool> as_bool() const;
  // "250ms", "1.5s", "40us", "100ns", "2min"; a bare number is rejected so units are never guessed.
  Result<Nanos> as_duration() const;

  // Required fields of a given type.
  Result<std::string> get_string(std::string_view key) const;
  Result<double> get_double(std::string_view key) const;
  Result<std::int64_t> get_int(std::string_view key) const;
  Result<Nanos> get_duration(std::string_view key) const;

  // Optional fields with a default.
  Result<std::string> string_or(std::string_view key, std::string fallback) const;
  Result<double> double_or(std::string_view key, double fallback) const;
  Result<std::int64_t> int_or(std::string_view key, std::int64_t fallback) const;
  Result<bool> bool_or(std::string_view key, bool fallback) const;
  Result<Nanos> duration_or(std::string_view key, Nanos fallback) const;

  // Rejects keys outside `allowed`, naming the unknown key and listing the allowed ones, so a
  // typo ("sl0:") is an error instead of a silently ignored field.
  Status check_keys(std::initializer_list<std::string_view> allowed) const;
  Status check_keys(std::span<const std::string_view> allowed) const;

  // An error located at this node: "file:line:col: path: what".
  Error error(std::string_view what) const;

 private:
  ConfigNode(YAML::Node node, std::shared_ptr<const std::string> source, std::string path)
      : node_(std::move(node)), source_(std::move(source)), path_(std::move(path)) {}
  std::string scalar_text() const;

  YAML::Node node_;
  std::shared_ptr<const std::string> source_;
  std::string path_;
};

// Parses a duration string such as "250ms"; exposed for CLI flags.
Result<Nanos> parse_duration(std::string_view text);

// A value as an error quotes it: 'text', or for one longer than 80 bytes its first 80 and its
// length ('aaaa...' (104857600 bytes)), so a huge scalar is not repeated whole.
std::string quote_value(std::string_view text);

}  // namespace tessera::core
