#include "tessera/dra/prepared_claims.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tessera/core/file_read.hpp"
#include "tessera/core/file_replace.hpp"
#include "tessera/core/try.hpp"

namespace tessera::dra {

namespace {

using nlohmann::json;

constexpr int kVersion = 1;

json device_json(const PreparedDevice& d) {
  return {{"request", d.request}, {"pool", d.pool}, {"device", d.device}, {"cdi_ids", d.cdi_ids}};
}

json claim_json(const PreparedClaim& c) {
  json devices = json::array();
  for (const auto& d : c.devices) devices.push_back(device_json(d));
  json out{{"namespace", c.ns},
           {"name", c.name},
           {"state", c.complete ? "prepared" : "preparing"},
           {"tenant", c.tenant},
           {"cdi_spec", c.cdi_spec},
           {"devices", std::move(devices)}};
  if (c.mig_gpu >= 0) out["mig"] = {{"gpu", c.mig_gpu}, {"instance", c.mig_instance}};
  return out;
}

// nlohmann's typed reads throw on a wrong type; the checkpoint's reader turns that into an error.
PreparedClaim claim_from(const json& j) {
  PreparedClaim c;
  c.ns = j.at("namespace").get<std::string>();
  c.name = j.at("name").get<std::string>();
  const auto state = j.at("state").get<std::string>();
  if (state != "prepared" && state != "preparing") throw std::invalid_argument("state " + state);
  c.complete = state == "prepared";
  c.tenant = j.at("tenant").get<std::string>();
  c.cdi_spec = j.at("cdi_spec").get<std::string>();
  if (j.contains("mig")) {
    c.mig_gpu = j["mig"].at("gpu").get<int>();
    c.mig_instance = j["mig"].at("instance").get<std::int64_t>();
  }
  for (const auto& d : j.at("devices")) {
    c.devices.push_back({d.at("request").get<std::string>(), d.at("pool").get<std::string>(),
                         d.at("device").get<std::string>(),
                         d.at("cdi_ids").get<std::vector<std::string>>()});
  }
  return c;
}

}  // namespace

core::Result<PreparedClaims> PreparedClaims::open(std::string path) {
  PreparedClaims out;
  out.path_ = std::move(path);
  std::error_code ec;
  if (!std::filesystem::exists(out.path_, ec)) return out;
  TESSERA_ASSIGN_OR_RETURN(const std::string text,
                           core::read_file(out.path_, {"DRA plugin checkpoint", core::Domain::kK8s,
                                                       core::kMaxDocumentBytes}));
  try {
    const json j = json::parse(text);
    if (j.at("version").get<int>() != kVersion) {
      return core::failf(core::Domain::kK8s, core::Code::kParse,
                         "DRA plugin checkpoint {}: version {} is not {}", out.path_,
                         j.at("version").dump(), kVersion);
    }
    for (const auto& [uid, claim] : j.at("claims").items()) out.claims_[uid] = claim_from(claim);
  } catch (const std::exception& e) {
    return core::failf(core::Domain::kK8s, core::Code::kParse,
                       "DRA plugin checkpoint {} cannot be read ({}); move it aside only after "
                       "checking no claim it lists is still prepared",
                       out.path_, e.what());
  }
  return out;
}

const PreparedClaim* PreparedClaims::find(std::string_view uid) const {
  const auto it = claims_.find(uid);
  return it == claims_.end() ? nullptr : &it->second;
}

core::Status PreparedClaims::put(const std::string& uid, PreparedClaim claim) {
  auto previous = claims_;
  claims_[uid] = std::move(claim);
  auto written = write();
  if (!written) claims_ = std::move(previous);  // the entries stay what the file says
  return written;
}

core::Status PreparedClaims::erase(std::string_view uid) {
  const auto it = claims_.find(uid);
  if (it == claims_.end()) return {};
  auto previous = claims_;
  claims_.erase(std::string(uid));
  auto written = write();
  if (!written) claims_ = std::move(previous);
  return written;
}

core::Status PreparedClaims::write() const {
  json claims = json::object();
  for (const auto& [uid, claim] : claims_) claims[uid] = claim_json(claim);
  return core::replace_file(path_, json{{"version", kVersion}, {"claims", claims}}.dump(2) + "\n",
                            "the DRA plugin's checkpoint");
}

}  // namespace tessera::dra
