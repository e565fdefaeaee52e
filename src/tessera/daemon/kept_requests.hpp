#pragma once
// Requests the daemon keeps in a file across its restarts, by key: what `set` changed, by tenant
// (settings_store.hpp), and the grants, by claim (grant_store.hpp). The file is one JSON object,
// {"<section>": {"<key>": <the request as its protocol line>}}, rewritten whole on every change;
// each entry is read back through the control protocol's own parser, so the file holds nothing
// a client could not have sent.

#include <map>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"
#include "tessera/daemon/control_protocol.hpp"

namespace tessera::daemon {

template <class R>
using KeptRequests = std::map<std::string, R, std::less<>>;

// How one kind of kept request is filed: the file's section, the request's field that is its key,
// and what its errors call the file and its entries.
template <class R>
struct KeptFile {
  std::string_view section;    // "tenants", "grants"
  std::string R::*key;         // &SetRequest::tenant, &GrantRequest::claim
  std::string_view key_name;   // "tenant", "claim"
  std::string_view file_what;  // "daemon settings file"
  std::string_view contents;   // "settings": "starting without the settings it held"
};

// What the file at `path` holds ("" or no file: nothing). A file that cannot be read as one is
// moved aside to PATH.unreadable and `warning` says so, naming what was wrong: the daemon starts
// without it, and nothing is lost.
template <class R>
KeptRequests<R> read_kept(const std::string& path, const KeptFile<R>& file, std::string& warning);

}  // namespace tessera::daemon
