#include "tessera/k8s/placement_annotation.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace tessera::k8s {
namespace {

core::Error bad(std::string_view what) {
  return core::Error(core::Domain::kK8s, core::Code::kInvalidArgument,
                     fmt::format("annotation {}: {}", kPlacementAnnotation, what));
}

// ASSUMPTION: no node has more than 4096 GPUs or core groups; a larger index is a corrupt value.
constexpr int kMaxIndex = 4096;

core::Result<std::vector<int>> indices(const nlohmann::json& o, const char* key) {
  std::vector<int> out;
  if (!o.contains(key)) return out;
  const auto& a = o.at(key);
  if (!a.is_array()) return std::unexpected(bad(fmt::format("'{}' is not a list", key)));
  for (const auto& v : a) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= kMaxIndex) {
      return std::unexpected(bad(fmt::format("'{}' holds {}, not an index", key, v.dump())));
    }
    out.push_back(v.get<int>());
  }
  return out;
}

}  // namespace

std::string placement_annotation(const cluster::Assignment& a) {
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& m : a.memory) memory.push_back({{"numa", m.numa}, {"bytes", m.bytes}});
  return nlohmann::json{{"gpus", a.gpus},
                        {"core_groups", a.core_groups},
                        {"memory", memory},
                        {"affinity", cluster::to_string(a.affinity)}}
      .dump();
}

core::Result<cluster::Assignment> parse_placement_annotation(std::string_view text) {
  const auto o = nlohmann::json::parse(text, nullptr, false);
  if (!o.is_object()) return std::unexpected(bad("not a JSON object"));
  cluster::Assignment a;
  auto gpus = indices(o, "gpus");
  if (!gpus) return std::unexpected(gpus.error());
  a.gpus = std::move(*gpus);
  auto groups = indices(o, "core_groups");
  if (!groups) return std::unexpected(groups.error());
  a.core_groups = std::move(*groups);
  if (o.contains("memory")) {
    if (!o["memory"].is_array()) return std::unexpected(bad("'memory' is not a list"));
    for (const auto& m : o["memory"]) {
      if (!m.is_object() || !m.value("numa", nlohmann::json()).is_number_integer() ||
          !m.value("bytes", nlohmann::json()).is_number_integer() ||
          m["numa"].get<std::int64_t>() < 0 || m["numa"].get<std::int64_t>() >= kMaxIndex ||
          m["bytes"].get<std::int64_t>() < 0) {
        return std::unexpected(bad(fmt::format("'memory' holds {}", m.dump())));
      }
      a.memory.push_back({m["numa"].get<int>(), m["bytes"].get<std::int64_t>()});
    }
  }
  const std::string affinity = o.value("affinity", "");
  bool known = false;
  for (const auto c : {cluster::Affinity::kSameNuma, cluster::Affinity::kSameSocket,
                       cluster::Affinity::kCrossSocket}) {
    if (cluster::to_string(c) == affinity) {
      a.affinity = c;
      known = true;
    }
  }
  if (!known) return std::unexpected(bad(fmt::format("unknown affinity '{}'", affinity)));
  return a;
}

}  // namespace tessera::k8s
