#include "native/io/piecewise_sha256.h"

#include <algorithm>

#include "native/core/status.h"
#include "native/core/thread_pool.h"

namespace hb {

PiecewiseSha256::PiecewiseSha256(uint64_t origin) : origin_(origin), skip_((kPieceBytes - origin % kPieceBytes) % kPieceBytes) {
  HB_CHECK(Sha256::available(), "SHA-256: this process has no OpenSSL digest calls to use");
}

void PiecewiseSha256::checkUsable() const {
  HB_CHECK(!broken_, "SHA-256: an earlier update of this digest failed, so it cannot be taken");
  HB_CHECK(!finished_, "SHA-256: the digest was already taken");
}

void PiecewiseSha256::update(const void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  checkUsable();
  const char* at = static_cast<const char*>(data);
  const size_t passed = size_t(std::min<uint64_t>(bytes, skip_));
  skip_ -= passed;
  at += passed;
  bytes -= passed;
  if (bytes == 0) return;
  // The bytes split at piece boundaries: the end of the piece begun before (head), whole
  // pieces, and the start of the next (tail). Each is its own hash, so all run at once.
  const size_t head = filled_ > 0 ? std::min(bytes, kPieceBytes - filled_) : 0;
  const bool headCloses = head > 0 && filled_ + head == kPieceBytes;
  const size_t whole = (bytes - head) / kPieceBytes;
  const size_t tail = bytes - head - whole * kPieceBytes;
  const char* wholeAt = at + head;
  const char* tailAt = wholeAt + whole * kPieceBytes;
  const int64_t headTasks = head > 0 ? 1 : 0;
  const int64_t tasks = headTasks + int64_t(whole) + (tail > 0 ? 1 : 0);
  std::unique_ptr<Sha256> next;
  try {
    const size_t firstSlot = pieces_.size();
    pieces_.resize(firstSlot + 32 * ((headCloses ? 1 : 0) + whole));
    unsigned char* slots = pieces_.data() + firstSlot;
    unsigned char* wholeSlots = slots + (headCloses ? 32 : 0);
    if (tail > 0) next = std::make_unique<Sha256>();
    parallelForIfFree(tasks, 1, [&](int64_t first, int64_t last) {
      for (int64_t task = first; task < last; ++task) {
        if (task < headTasks) {
          current_->update(at, head);
          if (headCloses) current_->finish(slots);
        } else if (task < headTasks + int64_t(whole)) {
          const size_t k = size_t(task - headTasks);
          Sha256::of(wholeAt + k * kPieceBytes, kPieceBytes, wholeSlots + 32 * k);
        } else {
          next->update(tailAt, tail);
        }
      }
    });
  } catch (...) {
    // Some pieces hashed, some not: nothing more can be added to this digest.
    broken_ = true;
    throw;
  }
  filled_ += head;
  if (headCloses) {
    current_.reset();
    filled_ = 0;
  }
  if (tail > 0) {
    current_ = std::move(next);
    filled_ = tail;
  }
}

std::vector<unsigned char> PiecewiseSha256::takePieces(bool fileEnds) {
  std::lock_guard<std::mutex> lock(mutex_);
  checkUsable();
  finished_ = true;
  if (fileEnds && filled_ > 0) {
    pieces_.resize(pieces_.size() + 32);
    current_->finish(pieces_.data() + pieces_.size() - 32);
  }
  return std::move(pieces_);
}

std::string PiecewiseSha256::hexDigest() {
  HB_CHECK(origin_ == 0, "SHA-256: a run from file offset ", origin_, " has no whole-file digest (take its pieces)");
  std::vector<unsigned char> pieces = takePieces(true);
  unsigned char digest[32];
  Sha256::of(pieces.data(), pieces.size(), digest);
  return hexOf(digest);
}

}  // namespace hb
