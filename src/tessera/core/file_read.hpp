#pragma once
// Reading a whole user-given file: every reader of scenarios, job files, topologies and traces
// goes through read_file, so a file is never read past its kind's size cap (a path such as
// /dev/urandom or /dev/zero ends after cap + 1 bytes, not when memory runs out) and a failure says
// what the system said: no such file, permission denied, is a directory, larger than the cap.

#include <cstdint>
#include <string>
#include <string_view>

#include "tessera/core/error.hpp"

namespace tessera::core {

inline constexpr std::uint64_t kMiB = 1024 * 1024;

// Documents parsed whole (YAML and JSON scenarios and job files, topology XML and JSON): the
// largest real one is tens of KiB, so 64 MiB is a typo or the wrong file, never a real input.
inline constexpr std::uint64_t kMaxDocumentBytes = 64 * kMiB;
// Tables of records (request traces, cluster traces): the largest under ../shared/data is 3 MiB;
// a week of a busy service runs to hundreds of MiB, which 1 GiB still holds.
inline constexpr std::uint64_t kMaxTableBytes = 1024 * kMiB;

// What a file is, for errors ("cannot open scenario 'x.yaml': no such file or directory"), which
// domain its errors belong to, and how many bytes of it are read at most.
struct FileKind {
  std::string_view what;
  Domain domain;
  std::uint64_t max_bytes;
};

// The file's bytes, or an error naming the file and the cause. Reads at most max_bytes + 1 bytes.
Result<std::string> read_file(const std::string& path, const FileKind& kind);

// "64 MiB", "1 GiB", "1000 bytes": a size as its errors give it.
std::string describe_size(std::uint64_t bytes);

}  // namespace tessera::core
