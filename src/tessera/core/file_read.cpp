#include "tessera/core/file_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <system_error>

namespace tessera::core {

namespace {

// "permission denied": the system's message as the rest of a sentence.
std::string errno_text(int err) {
  std::string text = std::generic_category().message(err);
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::unexpected<Error> too_large(const std::string& path, const FileKind& kind) {
  return failf(kind.domain, Code::kInvalidArgument,
               "{} '{}' is larger than {}, the most tessera reads from one {}", kind.what, path,
               describe_size(kind.max_bytes), kind.what);
}

}  // namespace

std::string describe_size(std::uint64_t bytes) {
  constexpr std::uint64_t kGiB = 1024 * kMiB;
  if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  return fmt::format("{} bytes", bytes);
}

Result<std::string> read_file(const std::string& path, const FileKind& kind) {
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    const Code code = err == ENOENT || err == ENOTDIR ? Code::kNotFound : Code::kFailedPrecondition;
    return failf(kind.domain, code, "cannot open {} '{}': {}", kind.what, path, errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return failf(kind.domain, Code::kInvalidArgument, "cannot read {} '{}': it is a directory",
                   kind.what, path);
    }
    // A regular file says its size up front; devices and pipes say 0 and are cut while read.
    if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > kind.max_bytes) {
      return too_large(path, kind);
    }
  }
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(static_cast<std::size_t>(st.st_size));
  constexpr std::size_t kChunk = 64 * 1024;
  for (;;) {
    // One byte past the cap is enough to know the file is over it.
    const std::uint64_t room = kind.max_bytes + 1 - text.size();
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, room));
    const std::size_t old = text.size();
    text.resize(old + want);
    const ssize_t got = ::read(fd.get(), text.data() + old, want);
    if (got < 0) {
      const int err = errno;
      text.resize(old);
      if (err == EINTR) continue;
      if (err == EISDIR) {
        return failf(kind.domain, Code::kInvalidArgument, "cannot read {} '{}': it is a directory",
                     kind.what, path);
      }
      return failf(kind.domain, Code::kInternal, "reading {} '{}' failed: {}", kind.what, path,
                   errno_text(err));
    }
    text.resize(old + static_cast<std::size_t>(got));
    if (text.size() > kind.max_bytes) return too_large(path, kind);
    if (got == 0) return text;
  }
}

}  // namespace tessera::core
