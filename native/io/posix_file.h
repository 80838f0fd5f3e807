// A file opened by path for positioned reads or writes (pread/pwrite), closed when the
// object goes. Errors name the file: ErrorCode::IO with the system's reason for what the
// OS refuses, ErrorCode::Corrupt for a read that runs past the end of the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace hb {

class PosixFile {
 public:
  enum class Mode { Read, Write };

  // Write mode neither creates nor truncates: the caller made the file and lays out
  // its bytes itself.
  PosixFile(const std::string& path, Mode mode);
  // The existing file opened for writes that bypass the page cache (O_DIRECT), or nothing
  // where the filesystem or platform refuses them.
  static std::optional<PosixFile> openDirect(const std::string& path);
  // A copy of the open descriptor `fd` (F_DUPFD_CLOEXEC), owned and closed here, so the
  // caller may close its own at any time; `name` is what errors call the file.
  static PosixFile duplicate(int fd, const std::string& name);
  ~PosixFile();
  PosixFile(PosixFile&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) { other.fd_ = -1; }
  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;

  // All of `bytes`, at `position`.
  void writeAt(const void* data, size_t bytes, uint64_t position);
  // Exactly `bytes`, from `position`.
  void readAt(void* data, size_t bytes, uint64_t position);
  // On a file from openDirect: `bytes` at `position`, both and `data` aligned as the
  // device wants (4096 is safe). Returns how many were written: fewer than `bytes` when the
  // filesystem refuses the alignment (EINVAL), and the caller writes the rest through an
  // ordinary descriptor. Other failures throw as writeAt's.
  size_t writeDirectAt(const void* data, size_t bytes, uint64_t position);
  // Asks the kernel to start writing these bytes to disk now, without waiting (Linux; a
  // no-op elsewhere or where refused): the writer's fsync still makes them durable, and
  // reports any error.
  void startWriteback(uint64_t position, size_t bytes);

  const std::string& path() const { return path_; }

 private:
  PosixFile() = default;

  std::string path_;
  int fd_ = -1;
};

// The largest count one pread/pwrite is given; Linux moves at most about 2 GiB per call.
constexpr size_t kMaxIoCall = size_t(64) << 20;

}  // namespace hb
