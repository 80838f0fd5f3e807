// Consecutive bytes written to a file (a checkpoint's rows), hashed in file order as they go.
//
// Each piece is written on the calling thread while a pool thread hashes it. Page-aligned
// stretches go around the page cache (O_DIRECT, through an aligned bounce buffer): a new
// file's pages otherwise cost a fresh page each, which on the VMs we measure made the
// writes run at 300-400 MB/s against 1.1-1.5 GB/s direct, and a large checkpoint would
// push the trainer's memory out of the cache. Small writes, unaligned ends, and
// filesystems that refuse O_DIRECT (tmpfs, some network filesystems) take the page
// cache, each piece's writeback started at once so the caller's fsync has little left.
// The caller chooses whether to try the direct path (lib/io/checkpoint_file.ts: not under
// HB_DIRECT_IO=0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "native/io/posix_file.h"
#include "native/io/sha256.h"

namespace hb {

class FileStreamWriter {
 public:
  // `path` exists (it is neither created nor truncated). `digest` may be null. `direct`:
  // try O_DIRECT for page-aligned stretches.
  FileStreamWriter(const std::string& path, Sha256* digest, bool direct);
  ~FileStreamWriter();
  FileStreamWriter(const FileStreamWriter&) = delete;
  FileStreamWriter& operator=(const FileStreamWriter&) = delete;

  // `bytes` from `data` at `position`; the digest sees calls in the order they are made.
  void write(const char* data, size_t bytes, uint64_t position);

  // Whether page-aligned stretches still go around the page cache.
  bool direct() const { return direct_.has_value(); }

 private:
  // `hash`: false for bytes the digest has already seen.
  void writeBuffered(const char* data, size_t bytes, uint64_t position, bool hash = true);
  void writeDirect(const char* data, size_t bytes, uint64_t position);

  PosixFile buffered_;
  std::optional<PosixFile> direct_;
  Sha256* digest_;
  char* bounce_ = nullptr;
};

}  // namespace hb
