// Consecutive bytes written to a file (a checkpoint's rows), hashed in file order as they go.
//
// Each piece is written on the calling thread while a thread beside it hashes it
// (native/io/side_thread.h). Page-aligned stretches of 1 MiB or more go around the page
// cache (O_DIRECT, through an aligned bounce buffer): a new file's pages otherwise cost a
// fresh page each, which on the VMs we measure made the writes run at 300-400 MB/s
// against 1.1-1.5 GB/s direct, and a large checkpoint would push the trainer's memory out
// of the cache. Shorter writes, unaligned ends, and filesystems that refuse O_DIRECT
// (tmpfs before Linux 6.6, some network filesystems; tmpfs since then takes it and keeps
// the bytes in memory all the same) go through the page cache, each large piece's
// writeback started at once so the caller's fsync has little left. The caller chooses
// whether to try the direct path (lib/io/checkpoint_file.ts: not under HB_DIRECT_IO=0,
// nor when node's crypto must read the rows back to hash them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "native/io/posix_file.h"
#include "native/io/sha256.h"

namespace hb {

class FileStreamWriter {
 public:
  // `path` exists (it is neither created nor truncated). `digest` may be null. `direct`:
  // try O_DIRECT for page-aligned stretches (opened at the first one).
  FileStreamWriter(const std::string& path, Digest* digest, bool direct);
  ~FileStreamWriter();
  FileStreamWriter(const FileStreamWriter&) = delete;
  FileStreamWriter& operator=(const FileStreamWriter&) = delete;

  // `bytes` from `data` at `position`; the digest sees calls in the order they are made.
  void write(const char* data, size_t bytes, uint64_t position);

 private:
  // The O_DIRECT descriptor and bounce buffer, made at the first aligned stretch; false
  // when not wanted or refused (then never tried again for this file).
  bool openDirect();
  // `hash`: false for bytes the digest has already seen.
  void writeBuffered(const char* data, size_t bytes, uint64_t position, bool hash = true);
  void writeDirect(const char* data, size_t bytes, uint64_t position);

  std::string path_;
  PosixFile buffered_;
  std::optional<PosixFile> direct_;
  Digest* digest_;
  bool directWanted_;
  char* bounce_ = nullptr;
};

}  // namespace hb
