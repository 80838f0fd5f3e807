#include "native/io/file_stream_writer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "native/core/status.h"
#include "native/core/thread_pool.h"

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

// write(piece) on this thread and digest->update(piece) on a pool thread, at once.
template <typename Write>
void writeWhileHashing(Sha256* digest, const char* hashed, size_t bytes, const Write& write) {
  if (digest == nullptr) {
    write();
    return;
  }
  parallelFor(2, 1, [&](int64_t first, int64_t last) {
    for (int64_t part = first; part < last; ++part) {
      if (part == 0) write();
      else digest->update(hashed, bytes);
    }
  });
}

}  // namespace

FileStreamWriter::FileStreamWriter(const std::string& path, Sha256* digest, bool direct)
    : buffered_(path, PosixFile::Mode::Write),
      direct_(direct ? PosixFile::openDirect(path) : std::nullopt),
      digest_(digest) {
  if (!direct_) return;
  bounce_ = static_cast<char*>(std::aligned_alloc(kDirectAlignment, kPieceBytes));
  if (bounce_ == nullptr) direct_.reset();
}

FileStreamWriter::~FileStreamWriter() { std::free(bounce_); }

void FileStreamWriter::write(const char* data, size_t bytes, uint64_t position) {
  const uint64_t end = position + bytes;
  const uint64_t alignedBegin = (position + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
  const uint64_t alignedEnd = end / kDirectAlignment * kDirectAlignment;
  if (!direct_ || alignedEnd <= alignedBegin || alignedEnd - alignedBegin < kDirectMinBytes) {
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
    buffered_.startWriteback(position + done, count);
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
