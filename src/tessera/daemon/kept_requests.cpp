#include "tessera/daemon/kept_requests.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>
#include <variant>

#include "tessera/core/file_read.hpp"

namespace tessera::daemon {
namespace {

// ASSUMPTION: the requests of 64 tenants (the table's limit), some 300 bytes each, fit in far
// less than 1 MiB.
constexpr std::uint64_t kMaxBytes = core::kMiB;

template <class R>
core::Result<KeptRequests<R>> parse_kept(const std::string& text, const KeptFile<R>& file) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains(file.section) ||
      !j[file.section].is_object()) {
    return core::failf(core::Domain::kConfig, core::Code::kParse,
                       "not a JSON object with a \"{}\" object", file.section);
  }
  KeptRequests<R> kept;
  for (const auto& [key, entry] : j[file.section].items()) {
    auto request = parse_request(entry.dump());
    if (!request) {
      return core::failf(core::Domain::kConfig, core::Code::kParse, "{} '{}': {}", file.key_name,
                         key, request.error().message());
    }
    const auto* r = std::get_if<R>(&*request);
    if (r == nullptr || (*r).*file.key != key) {
      return core::failf(core::Domain::kConfig, core::Code::kParse,
                         "{} '{}': not a request of its kind for it", file.key_name, key);
    }
    kept.emplace(key, *r);
  }
  return kept;
}

}  // namespace

template <class R>
KeptRequests<R> read_kept(const std::string& path, const KeptFile<R>& file, std::string& warning) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return {};
  const core::FileKind kind{
      .what = file.file_what, .domain = core::Domain::kConfig, .max_bytes = kMaxBytes};
  auto text = core::read_file(path, kind);
  auto kept =
      text ? parse_kept(*text, file) : core::Result<KeptRequests<R>>(std::unexpected(text.error()));
  if (kept) return std::move(*kept);
  const std::string aside = path + ".unreadable";
  std::filesystem::rename(path, aside, ec);
  warning = fmt::format("{}: {}; moved to {}, starting without the {} it held", path,
                        kept.error().message(), ec ? "(could not move it)" : aside, file.contents);
  return {};
}

template KeptRequests<SetRequest> read_kept(const std::string&, const KeptFile<SetRequest>&,
                                            std::string&);
template KeptRequests<GrantRequest> read_kept(const std::string&, const KeptFile<GrantRequest>&,
                                              std::string&);

}  // namespace tessera::daemon
