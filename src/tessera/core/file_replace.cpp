#include "tessera/core/file_replace.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tessera/core/write_all.hpp"

namespace tessera::core {

namespace {

Status io_error(std::string_view what, std::string_view step, const std::string& path, int err) {
  return failf(Domain::kIo, Code::kInternal, "cannot {} {} at {}: {}", step, what, path,
               std::strerror(err));
}

}  // namespace

Status replace_file(const std::string& path, std::string_view content, std::string_view what) {
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(what, "write", temporary, errno);
  // The data reaches the disk before the rename makes it the file, so a crash between the two
  // cannot leave an empty file under the real name.
  const bool written = write_all(fd, content) && ::fsync(fd) == 0;
  const int write_errno = errno;
  ::close(fd);
  if (!written) {
    ::unlink(temporary.c_str());
    return io_error(what, "write", temporary, write_errno);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    ::unlink(temporary.c_str());
    return io_error(what, "replace", path, rename_errno);
  }
  return {};
}

}  // namespace tessera::core
