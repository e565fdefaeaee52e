#pragma once
// Container Device Interface (CDI) specs: what a container runtime (containerd, CRI-O) adds to a
// container for each device id the kubelet passes it from a DRA driver. tessera writes one spec
// per prepared claim, in JSON, to the runtime's spec folder (/var/run/cdi): the interposer
// library mounted and preloaded, the daemon's socket, the tenant's identity and limits, and the
// GPU's device nodes. The rules checked here are the CDI specification's (v0.6.0, SPEC.md of
// github.com/cncf-tags/container-device-interface), so a spec the runtime would refuse is caught
// before the claim is reported prepared.

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::dra {

// The CDI version written: 0.6.0 has every edit used here and is read by containerd 1.7+ and
// CRI-O 1.28+ (CDI 0.3.0 would do for the edits alone).
inline constexpr std::string_view kCdiVersion = "0.6.0";

struct CdiMount {
  std::string host_path;
  std::string container_path;
  std::vector<std::string> options;  // "ro", "nosuid", "nodev", "bind"
};

struct CdiEdits {
  std::vector<std::string> env;           // "NAME=VALUE"
  std::vector<std::string> device_nodes;  // absolute paths
  std::vector<CdiMount> mounts;
};

struct CdiDevice {
  std::string name;
  CdiEdits edits;
};

struct CdiSpec {
  std::string kind;  // "vendor/class"
  std::vector<CdiDevice> devices;
  CdiEdits common;  // applied once for any of the spec's devices
};

// Why `spec` breaks a rule of the CDI specification (the first found), naming the field.
core::Status validate(const CdiSpec& spec);
// The spec as its JSON file holds it (fields empty in `spec` are left out).
nlohmann::json to_json(const CdiSpec& spec);
// The spec read back from its JSON (what `to_json` writes; unknown fields are errors).
core::Result<CdiSpec> cdi_spec_from_json(const nlohmann::json& j);

// "vendor/class=name", the id a container is given the device by.
std::string qualified_device_id(std::string_view kind, std::string_view device);

// The spec's file in `folder`: "<vendor>-<class>_<stem>.json", the naming the CDI project's own
// tools use, so one driver's files are easy to tell apart and remove.
std::string spec_path(std::string_view folder, std::string_view kind, std::string_view stem);
// Validates `spec`, then writes it to `path` whole (temporary and rename: a runtime reading the
// folder never sees half a spec).
core::Status write_spec(const std::string& path, const CdiSpec& spec);
// Removes the file; one that is already gone is not an error.
core::Status remove_spec(const std::string& path);

}  // namespace tessera::dra
