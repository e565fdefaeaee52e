#include "tessera/core/config.hpp"

#include <charconv>
#include <cmath>
#include <limits>

#include "tessera/core/file_read.hpp"

namespace tessera::core {

namespace {

// How much of a value an error quotes.
constexpr std::size_t kQuotedBytes = 80;

// The first kQuotedBytes of `text` and "..." when it is longer, not cutting a UTF-8 sequence.
std::string cut(std::string_view text) {
  if (text.size() <= kQuotedBytes) return std::string(text);
  std::size_t end = kQuotedBytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  std::string out(text.substr(0, end));
  out.append("...");
  return out;
}

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return quote_value(n.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "something else";
}

std::string child_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : fmt::format("{}.{}", parent, key);
}

// A map key as text. Keys that are lists or maps are legal YAML but never field names; they are
// described instead of converted, since converting them throws.
std::string key_text(const YAML::Node& key) {
  return key.IsScalar() ? key.Scalar() : describe(key);
}

bool parse_number(std::string_view s, double& out) {
  if (s.empty()) return false;
  const char* first = s.data();
  // from_chars takes no '+'; skip one, but not before another sign ("+-5").
  if (*first == '+') {
    ++first;
    if (first != s.data() + s.size() && (*first == '-' || *first == '+')) return false;
  }
  const auto [ptr, ec] = std::from_chars(first, s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(out);
}

}  // namespace

Result<ConfigNode> ConfigNode::load_file(const std::string& file, std::string_view what) {
  auto text =
      read_file(file, {.what = what, .domain = Domain::kConfig, .max_bytes = kMaxDocumentBytes});
  if (!text) return std::unexpected(text.error());
  return parse(*text, file);
}

Result<ConfigNode> ConfigNode::parse(std::string_view text, std::string source_name) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsDefined() || root.IsNull()) {
      return failf(Domain::kConfig, Code::kParse, "{}: the document is empty", source_name);
    }
    return ConfigNode(root, std::make_shared<const std::string>(std::move(source_name)), "");
  } catch (const YAML::Exception& e) {
    return failf(Domain::kConfig, Code::kParse, "{}:{}:{}: {}", source_name, e.mark.line + 1,
                 e.mark.column + 1, e.msg);
  }
}

Error ConfigNode::error(std::string_view what) const {
  const std::string where = path_.empty() ? std::string("document") : path_;
  return Error(Domain::kConfig, Code::kInvalidArgument,
               fmt::format("{}:{}:{}: {}: {}", *source_, line(), column(), where, what));
}

bool ConfigNode::has(std::string_view key) const {
  return find(key).has_value();
}

std::optional<ConfigNode> ConfigNode::find(std::string_view key) const {
  if (!node_.IsMap()) return std::nullopt;
  YAML::Node child = node_[std::string(key)];
  if (!child.IsDefined() || child.IsNull()) return std::nullopt;
  return ConfigNode(child, source_, child_path(path_, key));
}

Result<ConfigNode> ConfigNode::at(std::string_view key) const {
  if (!node_.IsMap()) {
    return std::unexpected(
        error(fmt::format("expected a mapping with field '{}', got {}", key, describe(node_))));
  }
  if (auto child = find(key)) return *child;
  return std::unexpected(error(fmt::format("missing required field '{}'", key)));
}

Result<std::vector<ConfigNode>> ConfigNode::items() const {
  if (!node_.IsSequence()) {
    return std::unexpected(error(fmt::format("expected a list, got {}", describe(node_))));
  }
  std::vector<ConfigNode> out;
  out.reserve(node_.size());
  for (std::size_t i = 0; i < node_.size(); ++i) {
    out.push_back(ConfigNode(node_[i], source_, fmt::format("{}[{}]", path_, i)));
  }
  return out;
}

std::vector<std::string> ConfigNode::keys() const {
  std::vector<std::string> out;
  if (!node_.IsMap()) return out;
  for (const auto& kv : node_) out.push_back(key_text(kv.first));
  return out;
}

std::string ConfigNode::scalar_text() const {
  return node_.IsScalar() ? node_.Scalar() : "";
}

Result<std::string> ConfigNode::as_string() const {
  if (!node_.IsScalar()) {
    return std::unexpected(error(fmt::format("expected a string, got {}", describe(node_))));
  }
  return node_.Scalar();
}

Result<double> ConfigNode::as_double() const {
  double v = 0;
  if (!node_.IsScalar() || !parse_number(node_.Scalar(), v)) {
    return std::unexpected(error(fmt::format("expected a number, got {}", describe(node_))));
  }
  return v;
}

Result<std::int64_t> ConfigNode::as_int() const {
  std::int64_t v = 0;
  const std::string s = scalar_text();
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (!node_.IsScalar() || s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
    return std::unexpected(error(fmt::format("expected an integer, got {}", describe(node_))));
  }
  return v;
}

Result<bool> ConfigNode::as_bool() const {
  const std::string s = scalar_text();
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  return std::unexpected(error(fmt::format("expected true or false, got {}", describe(node_))));
}

Result<Nanos> ConfigNode::as_duration() const {
  if (!node_.IsScalar()) {
    return std::unexpected(
        error(fmt::format("expected a duration like '200ms', got {}", describe(node_))));
  }
  auto d = parse_duration(node_.Scalar());
  if (!d) return std::unexpected(error(d.error().message()));
  return *d;
}

Result<std::string> ConfigNode::get_string(std::string_view key) const {
  auto c = at(key);
  if (!c) return std::unexpected(c.error());
  return c->as_string();
}
Result<double> ConfigNode::get_double(std::string_view key) const {
  auto c = at(key);
  if (!c) return std::unexpected(c.error());
  return c->as_double();
}
Result<std::int64_t> ConfigNode::get_int(std::string_view key) const {
  auto c = at(key);
  if (!c) return std::unexpected(c.error());
  return c->as_int();
}
Result<Nanos> ConfigNode::get_duration(std::string_view key) const {
  auto c = at(key);
  if (!c) return std::unexpected(c.error());
  return c->as_duration();
}

Result<std::string> ConfigNode::string_or(std::string_view key, std::string fallback) const {
  if (auto c = find(key)) return c->as_string();
  return fallback;
}
Result<double> ConfigNode::double_or(std::string_view key, double fallback) const {
  if (auto c = find(key)) return c->as_double();
  return fallback;
}
Result<std::int64_t> ConfigNode::int_or(std::string_view key, std::int64_t fallback) const {
  if (auto c = find(key)) return c->as_int();
  return fallback;
}
Result<bool> ConfigNode::bool_or(std::string_view key, bool fallback) const {
  if (auto c = find(key)) return c->as_bool();
  return fallback;
}
Result<Nanos> ConfigNode::duration_or(std::string_view key, Nanos fallback) const {
  if (auto c = find(key)) return c->as_duration();
  return fallback;
}

Status ConfigNode::check_keys(std::initializer_list<std::string_view> allowed) const {
  return check_keys(std::span(allowed.begin(), allowed.size()));
}

Status ConfigNode::check_keys(std::span<const std::string_view> allowed) const {
  if (!node_.IsMap()) {
    return std::unexpected(error(fmt::format("expected a mapping, got {}", describe(node_))));
  }
  for (const auto& kv : node_) {
    const std::string key = key_text(kv.first);
    // Point at the key itself, which is where the typo is.
    const ConfigNode key_node(kv.first, source_, child_path(path_, cut(key)));
    if (!kv.first.IsScalar()) {
      return std::unexpected(key_node.error(fmt::format(
          "expected a field name, got {}; allowed here: {}", key, fmt::join(allowed, ", "))));
    }
    bool ok = false;
    for (auto a : allowed) ok = ok || a == key;
    if (!ok) {
      return std::unexpected(key_node.error(fmt::format(
          "unknown field {}; allowed here: {}", quote_value(key), fmt::join(allowed, ", "))));
    }
  }
  return {};
}

Result<Nanos> parse_duration(std::string_view text) {
  struct Unit {
    std::string_view suffix;
    double nanos;
  };
  // Longest suffixes first so "ms" is not read as "s".
  static constexpr Unit kUnits[] = {{"min", 60e9}, {"ms", 1e6},   {"us", 1e3},
                                    {"ns", 1.0},   {"h", 3600e9}, {"s", 1e9}};
  for (const auto& u : kUnits) {
    if (text.size() > u.suffix.size() && text.ends_with(u.suffix)) {
      double v = 0;
      std::string_view number = text.substr(0, text.size() - u.suffix.size());
      while (!number.empty() && number.back() == ' ') number.remove_suffix(1);
      if (parse_number(number, v) && v >= 0) {
        const double nanos = std::round(v * u.nanos);
        // Past the int64 range llround is undefined; about 292 years is the limit.
        if (nanos >= static_cast<double>(std::numeric_limits<Nanos>::max())) {
          return failf(Domain::kConfig, Code::kInvalidArgument,
                       "duration {} is too long: at most about 292 years (in nanoseconds) fits",
                       quote_value(text));
        }
        return static_cast<Nanos>(nanos);
      }
      break;
    }
  }
  return failf(Domain::kConfig, Code::kParse,
               "expected a non-negative duration with a unit (ns, us, ms, s, min, h), got {}",
               quote_value(text));
}

std::string quote_value(std::string_view text) {
  if (text.size() <= kQuotedBytes) return fmt::format("'{}'", text);
  return fmt::format("'{}' ({} bytes)", cut(text), text.size());
}

}  // namespace tessera::core
