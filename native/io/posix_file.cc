#include "native/io/posix_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <system_error>

#include "native/core/status.h"

namespace hb {

namespace {

// std::strerror may share a static buffer between threads; this does not.
std::string systemReason(int error) { return std::generic_category().message(error); }

// off_t is signed: the last byte touched must stay below its maximum.
void checkSpan(const std::string& path, size_t bytes, uint64_t position) {
  constexpr uint64_t kMaxOffset = uint64_t(std::numeric_limits<off_t>::max());
  HB_CHECK_CODE(position <= kMaxOffset && bytes <= kMaxOffset - position, OutOfRange, path, ": ", bytes,
                " bytes at position ", position, " lie beyond the largest file offset");
}

}  // namespace

PosixFile::PosixFile(const std::string& path, Mode mode) : path_(path) {
  HB_CHECK(path.find('\0') == std::string::npos, "path ", path, " contains a NUL character");
  const int flags = (mode == Mode::Write ? O_WRONLY : O_RDONLY) | O_CLOEXEC;
  do {
    fd_ = ::open(path.c_str(), flags);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) {
    const int error = errno;
    failWith(ErrorCode::IO, path, ": cannot open for ", mode == Mode::Write ? "writing" : "reading", ": ",
             systemReason(error));
  }
}

std::optional<PosixFile> PosixFile::openDirect(const std::string& path) {
#if defined(O_DIRECT)
  HB_CHECK(path.find('\0') == std::string::npos, "path ", path, " contains a NUL character");
  PosixFile file;
  file.path_ = path;
  do {
    file.fd_ = ::open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
  } while (file.fd_ < 0 && errno == EINTR);
  if (file.fd_ >= 0) return file;
#else
  (void)path;
#endif
  return std::nullopt;
}

size_t PosixFile::writeDirectAt(const void* data, size_t bytes, uint64_t position) {
  checkSpan(path_, bytes, position);
  const char* in = static_cast<const char*>(data);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t written = ::pwrite(fd_, in + done, std::min(bytes - done, kMaxIoCall), off_t(position + done));
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL) return done;  // alignment this filesystem refuses: the caller writes the rest
      const int error = errno;
      failWith(ErrorCode::IO, path_, ": write of ", bytes - done, " bytes at position ", position + done,
               " failed: ", systemReason(error));
    }
    HB_CHECK_CODE(written > 0, IO, path_, ": write at position ", position + done, " made no progress");
    done += size_t(written);
  }
  return done;
}

PosixFile PosixFile::duplicate(int fd, const std::string& name) {
  PosixFile file;
  file.path_ = name;
  file.fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (file.fd_ < 0) {
    const int error = errno;
    failWith(ErrorCode::IO, name, ": descriptor ", fd, " cannot be used: ", systemReason(error));
  }
  return file;
}

PosixFile::~PosixFile() {
  // Nothing to report from here: writers make their data durable with fsync on their
  // own descriptor (checkpoints do), and a close error cannot be acted on.
  if (fd_ >= 0) ::close(fd_);
}

void PosixFile::writeAt(const void* data, size_t bytes, uint64_t position) {
  checkSpan(path_, bytes, position);
  const char* in = static_cast<const char*>(data);
  for (size_t done = 0; done < bytes;) {
    const size_t count = std::min(bytes - done, kMaxIoCall);
    const ssize_t written = ::pwrite(fd_, in + done, count, off_t(position + done));
    if (written < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      failWith(ErrorCode::IO, path_, ": write of ", count, " bytes at position ", position + done,
               " failed: ", systemReason(error));
    }
    // A short write continues where it stopped; a full disk reports ENOSPC on the next
    // call. Zero for a non-empty request would repeat forever.
    HB_CHECK_CODE(written > 0, IO, path_, ": write at position ", position + done, " made no progress");
    done += size_t(written);
  }
}

void PosixFile::readAt(void* data, size_t bytes, uint64_t position) {
  checkSpan(path_, bytes, position);
  char* out = static_cast<char*>(data);
  for (size_t done = 0; done < bytes;) {
    const size_t count = std::min(bytes - done, kMaxIoCall);
    const ssize_t got = ::pread(fd_, out + done, count, off_t(position + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      failWith(ErrorCode::IO, path_, ": read of ", count, " bytes at position ", position + done,
               " failed: ", systemReason(error));
    }
    HB_CHECK_CODE(got > 0, Corrupt, path_, ": unexpected end of file at byte ", position + done, " (reading ",
                  bytes, " bytes from position ", position, ")");
    done += size_t(got);
  }
}

void PosixFile::startWriteback(uint64_t position, size_t bytes) {
#if defined(__linux__)
  (void)::sync_file_range(fd_, off_t(position), off_t(bytes), SYNC_FILE_RANGE_WRITE);
#else
  (void)position;
  (void)bytes;
#endif
}

}  // namespace hb
