#include "native/io/file_stream_writer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "native/core/status.h"
#include "native/io/side_thread.h"

namespace hb {

namespace {

// Pieces small enough to stay in the cache between the copy (or write) that reads them
// and the hash that reads them again, at the same time.
constexpr size_t kPieceBytes = size_t(8) << 20;
// O_DIRECT wants offsets, lengths and memory aligned to the device's block: 4096 covers
// 512- and 4096-byte devices (a filesystem that wants more says EINVAL, and we fall back).
constexpr uint64_t kDirectAlignment = 4096;
// Below this a direct write saves less than its bounce copy and setup cost.
constexpr size_t kDirectMinBytes = size_t(1) << 20;
// Below this a piece is hashed after its write on this thread (a second thread costs more
// than it saves), and its writeback is left to the caller's fsync (a head or tail page
// shares its page with the next write, which would wait on a page under writeback).
constexpr size_t kSideThreadMinBytes = size_t(1) << 20;

// write(piece) on this thread and digest->update(piece) beside it.
template <typename Write>
void writeWhileHashing(Digest* digest, const char* hashed, size_t bytes, const Write& write) {
  if (digest == nullptr) {
    write();
  } else if (bytes < kSideThreadMinBytes) {
    write();
    digest->update(hashed, bytes);
  } else {
    runWithSideThread(write, [&] { digest->update(hashed, bytes); });
  }
}

}  // namespace

FileStreamWriter::FileStreamWriter(const std::string& path, Digest* digest, bool direct)
    : path_(path), buffered_(path, PosixFile::Mode::Write), digest_(digest), directWanted_(direct) {}

FileStreamWriter::~FileStreamWriter() { std::free(bounce_); }

bool FileStreamWriter::openDirect() {
  if (direct_) return true;
  if (!directWanted_) return false;
  directWanted_ = false;  // one try: a refusal stands for the rest of the file
  bounce_ = static_cast<char*>(std::aligned_alloc(kDirectAlignment, kPieceBytes));
  if (bounce_ == nullptr) return false;
  // Optional's move assignment needs PosixFile's; emplace makes it in place instead.
  if (std::optional<PosixFile> opened = PosixFile::openDirect(path_)) direct_.emplace(std::move(*opened));
  return direct_.has_value();
}

void FileStreamWriter::write(const char* data, size_t bytes, uint64_t position) {
  const uint64_t end = position + bytes;
  const uint64_t alignedBegin = (position + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
  const uint64_t alignedEnd = end / kDirectAlignment * kDirectAlignment;
  if (alignedEnd <= alignedBegin || alignedEnd - alignedBegin < kDirectMinBytes || !openDirect()) {
    writeBuffered(data, bytes, position);
    return;
  }
  // The unaligned head and tail share pages with their neighbours: through the page cache.
  writeBuffered(data, size_t(alignedBegin - position), position);
  writeDirect(data + (alignedBegin - position), size_t(alignedEnd - alignedBegin), alignedBegin);
  writeBuffered(data + (alignedEnd - position), size_t(end - alignedEnd), alignedEnd);
}

void FileStreamWriter::writeBuffered(const char* data, size_t bytes, uint64_t position, bool hash) {
  for (size_t done = 0; done < bytes;) {
    const size_t count = std::min(bytes - done, kPieceBytes);
    writeWhileHashing(hash ? digest_ : nullptr, data + done, count, [&] { buffered_.writeAt(data + done, count, position + done); });
    if (count >= kSideThreadMinBytes) buffered_.startWriteback(position + done, count);
    done += count;
  }
}

void FileStreamWriter::writeDirect(const char* data, size_t bytes, uint64_t position) {
  for (size_t done = 0; done < bytes;) {
    const size_t count = std::min(bytes - done, kPieceBytes);
    if (!direct_) {
      writeBuffered(data + done, bytes - done, position + done);
      return;
    }
    std::memcpy(bounce_, data + done, count);
    size_t written = 0;
    writeWhileHashing(digest_, data + done, count, [&] { written = direct_->writeDirectAt(bounce_, count, position + done); });
    if (written < count) {
      // Refused (alignment): the rest of this piece, and all later ones, via the page
      // cache. The digest has this whole piece already.
      direct_.reset();
      writeBuffered(data + done + written, count - written, position + done + written, /*hash=*/false);
    }
    done += count;
  }
}

}  // namespace hb
