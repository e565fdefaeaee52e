#include "tessera/dra/cdi_spec.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "tessera/core/file_replace.hpp"
#include "tessera/core/try.hpp"

namespace tessera::dra {

namespace {

using nlohmann::json;

core::Status invalid(std::string message) {
  return core::fail(core::Domain::kK8s, core::Code::kInvalidArgument,
                    "CDI spec: " + std::move(message));
}

bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alnum(char c) {
  return is_letter(c) || is_digit(c);
}

// A name of `allowed` characters that starts with a letter (or, with `digit_first`, a digit) and
// ends with a letter or digit: the shape of every CDI name.
bool well_formed(std::string_view s, std::string_view allowed, bool digit_first) {
  if (s.empty() || !(is_letter(s.front()) || (digit_first && is_digit(s.front())))) return false;
  if (!is_alnum(s.back())) return false;
  for (const char c : s) {
    if (!is_alnum(c) && allowed.find(c) == std::string_view::npos) return false;
  }
  return true;
}

core::Status validate_kind(std::string_view kind) {
  const auto slash = kind.find('/');
  if (slash == std::string_view::npos) {
    return invalid(fmt::format("kind '{}' is not vendor/class", kind));
  }
  const auto vendor = kind.substr(0, slash);
  const auto cls = kind.substr(slash + 1);
  if (!well_formed(vendor, ".-_", false)) {
    return invalid(fmt::format(
        "kind '{}': vendor '{}' must start with a letter, end with a letter or digit and hold "
        "only letters, digits, '.', '-' and '_'",
        kind, vendor));
  }
  if (!well_formed(cls, "-_", false)) {
    return invalid(fmt::format(
        "kind '{}': class '{}' must start with a letter, end with a letter or digit and hold "
        "only letters, digits, '-' and '_'",
        kind, cls));
  }
  return {};
}

core::Status validate_edits(const CdiEdits& edits, std::string_view where) {
  for (const auto& e : edits.env) {
    const auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) {
      return invalid(fmt::format("{}: env entry '{}' is not NAME=VALUE", where, e));
    }
  }
  for (const auto& path : edits.device_nodes) {
    if (path.empty() || path.front() != '/') {
      return invalid(fmt::format("{}: device node '{}' is not an absolute path", where, path));
    }
  }
  for (const auto& m : edits.mounts) {
    if (m.host_path.empty()) return invalid(fmt::format("{}: a mount has no hostPath", where));
    if (m.container_path.empty() || m.container_path.front() != '/') {
      return invalid(fmt::format("{}: mount of '{}' has containerPath '{}', not an absolute path",
                                 where, m.host_path, m.container_path));
    }
  }
  return {};
}

bool empty(const CdiEdits& e) {
  return e.env.empty() && e.device_nodes.empty() && e.mounts.empty();
}

json edits_json(const CdiEdits& e) {
  json out = json::object();
  if (!e.env.empty()) out["env"] = e.env;
  if (!e.device_nodes.empty()) {
    json nodes = json::array();
    for (const auto& path : e.device_nodes) nodes.push_back({{"path", path}});
    out["deviceNodes"] = std::move(nodes);
  }
  if (!e.mounts.empty()) {
    json mounts = json::array();
    for (const auto& m : e.mounts) {
      json mount{{"hostPath", m.host_path}, {"containerPath", m.container_path}};
      if (!m.options.empty()) mount["options"] = m.options;
      mounts.push_back(std::move(mount));
    }
    out["mounts"] = std::move(mounts);
  }
  return out;
}

core::Status only_keys(const json& j, std::initializer_list<std::string_view> keys,
                       std::string_view where) {
  if (!j.is_object()) return invalid(fmt::format("{} is not an object", where));
  for (const auto& [key, value] : j.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      return invalid(fmt::format("{}: unknown field '{}'", where, key));
    }
  }
  return {};
}

core::Result<std::vector<std::string>> strings(const json& j, std::string_view where) {
  if (!j.is_array())
    return std::unexpected(invalid(fmt::format("{} is not a list", where)).error());
  std::vector<std::string> out;
  for (const auto& s : j) {
    if (!s.is_string()) {
      return std::unexpected(invalid(fmt::format("{} holds a non-string", where)).error());
    }
    out.push_back(s.get<std::string>());
  }
  return out;
}

core::Result<std::string> string_at(const json& j, std::string_view key, std::string_view where) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    return std::unexpected(
        invalid(fmt::format("{}: '{}' is missing or not a string", where, key)).error());
  }
  return it->get<std::string>();
}

core::Result<CdiEdits> edits_from_json(const json& j, std::string_view where) {
  TESSERA_TRY(only_keys(j, {"env", "deviceNodes", "mounts"}, where));
  CdiEdits e;
  if (j.contains("env")) {
    TESSERA_ASSIGN_OR_RETURN(e.env, strings(j["env"], "env"));
  }
  if (j.contains("deviceNodes")) {
    if (!j["deviceNodes"].is_array()) {
      return std::unexpected(invalid(fmt::format("{}: deviceNodes is not a list", where)).error());
    }
    for (const auto& node : j["deviceNodes"]) {
      TESSERA_TRY(only_keys(node, {"path"}, "a device node"));
      TESSERA_ASSIGN_OR_RETURN(auto path, string_at(node, "path", "a device node"));
      e.device_nodes.push_back(std::move(path));
    }
  }
  if (j.contains("mounts")) {
    if (!j["mounts"].is_array()) {
      return std::unexpected(invalid(fmt::format("{}: mounts is not a list", where)).error());
    }
    for (const auto& m : j["mounts"]) {
      TESSERA_TRY(only_keys(m, {"hostPath", "containerPath", "options"}, "a mount"));
      CdiMount mount;
      TESSERA_ASSIGN_OR_RETURN(mount.host_path, string_at(m, "hostPath", "a mount"));
      TESSERA_ASSIGN_OR_RETURN(mount.container_path, string_at(m, "containerPath", "a mount"));
      if (m.contains("options")) {
        TESSERA_ASSIGN_OR_RETURN(mount.options, strings(m["options"], "a mount's options"));
      }
      e.mounts.push_back(std::move(mount));
    }
  }
  return e;
}

}  // namespace

core::Status validate(const CdiSpec& spec) {
  TESSERA_TRY(validate_kind(spec.kind));
  if (spec.devices.empty()) return invalid("it names no device");
  std::set<std::string, std::less<>> names;
  for (const auto& d : spec.devices) {
    if (!well_formed(d.name, "-_.:", true)) {
      return invalid(fmt::format(
          "device name '{}' must start and end with a letter or digit and hold only letters, "
          "digits, '-', '_', '.' and ':'",
          d.name));
    }
    if (!names.insert(d.name).second) {
      return invalid(fmt::format("device name '{}' appears twice", d.name));
    }
    if (empty(d.edits)) return invalid(fmt::format("device '{}' edits nothing", d.name));
    TESSERA_TRY(validate_edits(d.edits, fmt::format("device '{}'", d.name)));
  }
  return validate_edits(spec.common, "the spec's containerEdits");
}

json to_json(const CdiSpec& spec) {
  json devices = json::array();
  for (const auto& d : spec.devices) {
    devices.push_back({{"name", d.name}, {"containerEdits", edits_json(d.edits)}});
  }
  json out{{"cdiVersion", kCdiVersion}, {"kind", spec.kind}, {"devices", std::move(devices)}};
  if (!empty(spec.common)) out["containerEdits"] = edits_json(spec.common);
  return out;
}

core::Result<CdiSpec> cdi_spec_from_json(const json& j) {
  TESSERA_TRY(only_keys(j, {"cdiVersion", "kind", "devices", "containerEdits"}, "the spec"));
  TESSERA_ASSIGN_OR_RETURN(const auto version, string_at(j, "cdiVersion", "the spec"));
  if (version != kCdiVersion) {
    return std::unexpected(
        invalid(fmt::format("cdiVersion is '{}', not '{}'", version, kCdiVersion)).error());
  }
  CdiSpec spec;
  TESSERA_ASSIGN_OR_RETURN(spec.kind, string_at(j, "kind", "the spec"));
  const auto devices = j.find("devices");
  if (devices == j.end() || !devices->is_array()) {
    return std::unexpected(invalid("'devices' is missing or not a list").error());
  }
  for (const auto& d : *devices) {
    TESSERA_TRY(only_keys(d, {"name", "containerEdits"}, "a device"));
    CdiDevice device;
    TESSERA_ASSIGN_OR_RETURN(device.name, string_at(d, "name", "a device"));
    if (!d.contains("containerEdits")) {
      return std::unexpected(
          invalid(fmt::format("device '{}' has no containerEdits", device.name)).error());
    }
    TESSERA_ASSIGN_OR_RETURN(device.edits, edits_from_json(d["containerEdits"], device.name));
    spec.devices.push_back(std::move(device));
  }
  if (j.contains("containerEdits")) {
    TESSERA_ASSIGN_OR_RETURN(spec.common,
                             edits_from_json(j["containerEdits"], "the spec's containerEdits"));
  }
  TESSERA_TRY(validate(spec));
  return spec;
}

std::string qualified_device_id(std::string_view kind, std::string_view device) {
  return fmt::format("{}={}", kind, device);
}

std::string spec_path(std::string_view folder, std::string_view kind, std::string_view stem) {
  std::string prefix(kind);
  std::replace(prefix.begin(), prefix.end(), '/', '-');
  return fmt::format("{}/{}_{}.json", folder, prefix, stem);
}

core::Status write_spec(const std::string& path, const CdiSpec& spec) {
  TESSERA_TRY(validate(spec));
  return core::replace_file(path, to_json(spec).dump(2) + "\n", "a CDI spec");
}

core::Status remove_spec(const std::string& path) {
  if (std::remove(path.c_str()) != 0 && errno != ENOENT) {
    return core::failf(core::Domain::kIo, core::Code::kInternal, "cannot remove CDI spec {}: {}",
                       path, std::strerror(errno));
  }
  return {};
}

}  // namespace tessera::dra
