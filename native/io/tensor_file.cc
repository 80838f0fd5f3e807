#include "native/io/tensor_file.h"

#include <algorithm>
#include <limits>

#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/io/file_stream_writer.h"
#include "native/io/posix_file.h"
#include "native/io/sha256.h"
#include "native/io/side_thread.h"

namespace hb {

namespace {

// CUDA rows cross into host memory a piece at a time, so a table larger than the host's
// free memory can still be saved.
constexpr size_t kStagingBytes = size_t(16) << 20;

// Host reads from this size on are split between two threads.
constexpr uint64_t kSplitReadBytes = uint64_t(16) << 20;
// Pieces below this are hashed on the calling thread: a thread for them costs more than it saves.
constexpr size_t kSideThreadMinBytes = size_t(1) << 20;

// Files are read and hashed in pieces of 4 MiB per pool thread (8-64 MiB): a piecewise
// digest (native/io/piecewise_sha256.h) hashes a piece's 4 MiB parts on every thread.
uint64_t hashPieceBytes() {
  return std::clamp<uint64_t>(uint64_t(threadPoolSize()) << 22, uint64_t(8) << 20, uint64_t(64) << 20);
}

// Reads bytes [position, position + bytes) of `file` a piece at a time into
// `destination(done)` (where the piece that starts `done` bytes in goes) and adds
// each piece to `digest` in order: the next piece is read on this thread while a thread
// beside it hashes the last (two destinations must not overlap).
template <typename Destination>
void readAndHashPieces(PosixFile& file, uint64_t position, uint64_t bytes, Digest& digest,
                       const Destination& destination) {
  const uint64_t pieceBytes = hashPieceBytes();
  size_t count = size_t(std::min<uint64_t>(bytes, pieceBytes));
  if (count == 0) return;
  char* current = destination(0);
  file.readAt(current, count, position);
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t next = done + count;
    const size_t nextCount = size_t(std::min<uint64_t>(bytes - next, pieceBytes));
    char* following = nextCount > 0 ? destination(next) : nullptr;
    const auto readNext = [&] { if (nextCount > 0) file.readAt(following, nextCount, position + next); };
    const auto hashThis = [&] { digest.update(current, count); };
    // A last or small piece is hashed here, after the read.
    if (nextCount == 0 || count < kSideThreadMinBytes) {
      readNext();
      hashThis();
    } else {
      runWithSideThread(readNext, hashThis);
    }
    done = next;
    current = following;
    count = nextCount;
  }
}

char* rowStart(const Tensor& tensor, const RowLayout& layout, int64_t row) {
  return static_cast<char*>(tensor.buffer->data()) + size_t(row) * layout.rowBytes;
}

}  // namespace

RowLayout rowLayout(const Tensor& tensor) {
  RowLayout layout;
  layout.rows = tensor.shape.empty() ? 1 : tensor.shape[0];
  // Checked here too: a tensor with no rows passes shapeSize whatever its other dimensions.
  constexpr uint64_t kMaxElements = uint64_t(1) << 53;
  uint64_t width = 1;
  for (size_t i = 1; i < tensor.shape.size(); ++i) {
    const uint64_t d = uint64_t(tensor.shape[i]);
    HB_CHECK_CODE(d == 0 || width <= kMaxElements / d, OutOfRange, "tensor ", tensor.shapeString(),
                  ": a row has more than 2^53 elements");
    width *= d;
  }
  layout.rowBytes = size_t(width) * dtypeSize(tensor.dtype);
  return layout;
}

uint64_t checkRowRange(const Tensor& tensor, int64_t rowBegin, int64_t rowEnd, uint64_t position) {
  const RowLayout layout = rowLayout(tensor);
  HB_CHECK_CODE(rowEnd >= 0 && rowEnd <= layout.rows, OutOfRange, "rowEnd (", rowEnd, ") must be in [0, ",
                layout.rows, "], the rows of the tensor ", tensor.shapeString());
  HB_CHECK_CODE(rowBegin >= 0 && rowBegin <= rowEnd, OutOfRange, "rowBegin (", rowBegin, ") must be in [0, rowEnd = ",
                rowEnd, "]");
  // Within the tensor's own bytes, which fit in memory, so the product cannot overflow.
  const uint64_t bytes = uint64_t(rowEnd - rowBegin) * layout.rowBytes;
  HB_CHECK_CODE(tensor.buffer && uint64_t(rowEnd) * layout.rowBytes <= tensor.buffer->bytes(), Internal, "tensor ",
                tensor.shapeString(), " has a buffer of ", tensor.buffer ? tensor.buffer->bytes() : 0,
                " bytes, smaller than its shape");
  constexpr uint64_t kMaxOffset = uint64_t(std::numeric_limits<int64_t>::max());
  HB_CHECK_CODE(position <= kMaxOffset && bytes <= kMaxOffset - position, OutOfRange, "position (", position,
                ") plus the rows' ", bytes, " bytes is beyond the largest file offset");
  return bytes;
}

uint64_t writeTensorRows(const Tensor& tensor, int64_t rowBegin, int64_t rowEnd, const std::string& path,
                         uint64_t position, Digest* digest, bool direct) {
  const uint64_t bytes = checkRowRange(tensor, rowBegin, rowEnd, position);
  const RowLayout layout = rowLayout(tensor);
  FileStreamWriter file(path, digest, direct);
  const char* rows = rowStart(tensor, layout, rowBegin);
  if (!tensor.device().isCuda()) {
    // In pieces a size_t always holds (bytes is 64-bit on every platform).
    for (uint64_t done = 0; done < bytes;) {
      const size_t count = size_t(std::min<uint64_t>(bytes - done, kMaxIoCall));
      file.write(rows + done, count, position + done);
      done += count;
    }
    return bytes;
  }
  const size_t stagingBytes = size_t(std::min<uint64_t>(bytes, kStagingBytes));
  std::shared_ptr<Buffer> staging = Buffer::allocate(Device::cpu(), stagingBytes);
  char* host = static_cast<char*>(staging->data());
  for (uint64_t done = 0; done < bytes;) {
    const size_t count = size_t(std::min<uint64_t>(bytes - done, stagingBytes));
    copyBytes(host, Device::cpu(), rows + done, tensor.device(), count);
    file.write(host, count, position + done);
    done += count;
  }
  return bytes;
}

void readTensorRows(const Tensor& tensor, int64_t rowBegin, int64_t rowEnd, const std::string& path,
                    uint64_t position, Digest* digest) {
  const uint64_t bytes = checkRowRange(tensor, rowBegin, rowEnd, position);
  const RowLayout layout = rowLayout(tensor);
  PosixFile file(path, PosixFile::Mode::Read);
  char* rows = rowStart(tensor, layout, rowBegin);
  if (!tensor.device().isCuda()) {
    if (digest) {
      // Straight into the rows, each piece hashed there while the next is read: one pass
      // over the file where a read after a verification took two.
      readAndHashPieces(file, position, bytes, *digest, [rows](uint64_t done) { return rows + done; });
      return;
    }
    // Halves on two threads: one thread's copy out of the page cache (a file verified
    // before it is read, which that left cached) runs at about half what two reach.
    if (bytes < kSplitReadBytes) {
      file.readAt(rows, size_t(bytes), position);
      return;
    }
    const uint64_t half = bytes / 2;
    runWithSideThread([&] { file.readAt(rows, size_t(half), position); },
                      [&] { file.readAt(rows + half, size_t(bytes - half), position + half); });
    return;
  }
  const size_t stagingBytes = size_t(std::min<uint64_t>(bytes, kStagingBytes));
  std::shared_ptr<Buffer> staging = Buffer::allocate(Device::cpu(), stagingBytes);
  char* host = static_cast<char*>(staging->data());
  for (uint64_t done = 0; done < bytes;) {
    const size_t count = size_t(std::min<uint64_t>(bytes - done, stagingBytes));
    file.readAt(host, count, position + done);
    if (digest) digest->update(host, count);
    copyBytes(rows + done, tensor.device(), host, Device::cpu(), count);
    done += count;
  }
}

void hashFileRange(PosixFile& file, uint64_t position, uint64_t bytes, Digest& digest) {
  const uint64_t fullPiece = hashPieceBytes();
  const size_t pieceBytes = size_t(std::min<uint64_t>(bytes, fullPiece));
  if (pieceBytes == 0) return;
  // Two pieces: the next is read into one while the last is hashed out of the other.
  std::shared_ptr<Buffer> pieces = Buffer::allocate(Device::cpu(), 2 * pieceBytes);
  char* piece[2] = {static_cast<char*>(pieces->data()), static_cast<char*>(pieces->data()) + pieceBytes};
  readAndHashPieces(file, position, bytes, digest,
                    [&piece, fullPiece](uint64_t done) { return piece[(done / fullPiece) % 2]; });
}

}  // namespace hb
