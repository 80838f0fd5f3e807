#include "native/data/shuffle_reservoir.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "native/core/status.h"

namespace hb {

ShuffleReservoir::ShuffleReservoir(int64_t capacity, uint32_t seed) : capacity_(capacity), random_(seed, 0) {
  HB_CHECK(capacity > 0, "shuffle: bufferSize must be positive, got ", capacity);
}

void ShuffleReservoir::leave(RowRef ref, std::vector<RowRef>* leaving) {
  leaving->push_back(ref);
  if (--references_[size_t(ref.slot)] == 0) {
    freed_.push_back(ref.slot);
    freeSlots_.push_back(ref.slot);
  }
}

void ShuffleReservoir::reserveFor(int64_t arriving, int64_t leavingRows, std::vector<RowRef>* leaving) {
  // Each slot is at most once in freed_ and in freeSlots_, and one slot may be added.
  references_.reserve(references_.size() + 1);
  freed_.reserve(references_.size() + 1);
  freeSlots_.reserve(references_.size() + 1);
  buffer_.reserve(size_t(std::min<int64_t>(capacity_, int64_t(buffer_.size()) + arriving)));
  leaving->reserve(leaving->size() + size_t(leavingRows));
}

int32_t ShuffleReservoir::add(int64_t rows, std::vector<RowRef>* leaving) {
  HB_CHECK(!draining_, "shuffle: a block arrived after the buffer began to drain");
  HB_CHECK(rows > 0 && rows <= std::numeric_limits<int32_t>::max(), "shuffle: a block of ", rows, " rows");
  // Everything this call may grow is grown first: should that fail, nothing has changed,
  // and nothing after it allocates.
  reserveFor(rows, rows, leaving);
  freed_.clear();
  // The slot is taken before any row leaves, so a slot freed by this very call is not
  // reused until the caller has read this call's rows.
  const int32_t slot = takeSlot();
  references_[size_t(slot)] = rows;
  for (int64_t r = 0; r < rows; ++r) {
    const RowRef incoming{slot, int32_t(r)};
    if (int64_t(buffer_.size()) < capacity_) {
      buffer_.push_back(incoming);
      continue;
    }
    RowRef& place = buffer_[size_t(random_.below(capacity_))];
    const RowRef outgoing = place;
    place = incoming;
    leave(outgoing, leaving);
  }
  return slot;
}

int32_t ShuffleReservoir::takeSlot() {
  if (!freeSlots_.empty()) {
    const int32_t slot = freeSlots_.back();
    freeSlots_.pop_back();
    return slot;
  }
  HB_CHECK(references_.size() < size_t(std::numeric_limits<int32_t>::max()), "shuffle: too many blocks buffered");
  references_.push_back(0);
  return int32_t(references_.size()) - 1;
}

int32_t ShuffleReservoir::compact() {
  HB_CHECK(!draining_, "shuffle: compacting a buffer that has begun to drain");
  HB_CHECK(buffer_.size() <= size_t(std::numeric_limits<int32_t>::max()), "shuffle: too many rows to compact");
  std::vector<RowRef> none;
  reserveFor(0, 0, &none);
  // The new slot is taken before the old ones are freed (and before anything changes,
  // should it fail), so it names none of the blocks the rows were read from.
  const int32_t slot = takeSlot();
  freed_.clear();
  for (size_t s = 0; s < references_.size(); ++s) {
    if (int32_t(s) != slot && references_[s] > 0) {
      references_[s] = 0;
      freed_.push_back(int32_t(s));
      freeSlots_.push_back(int32_t(s));
    }
  }
  for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] = RowRef{slot, int32_t(i)};
  references_[size_t(slot)] = int64_t(buffer_.size());
  return slot;
}

void ShuffleReservoir::drain(int64_t maxRows, std::vector<RowRef>* leaving) {
  reserveFor(0, std::min<int64_t>(buffered(), std::max<int64_t>(maxRows, 0)), leaving);
  freed_.clear();
  if (!draining_) {
    draining_ = true;
    // Fisher-Yates from the back, as the JS shuffle did.
    for (int64_t i = int64_t(buffer_.size()) - 1; i > 0; --i) {
      std::swap(buffer_[size_t(i)], buffer_[size_t(random_.below(i + 1))]);
    }
  }
  const int64_t end = std::min<int64_t>(int64_t(buffer_.size()), drained_ + std::max<int64_t>(maxRows, 0));
  for (; drained_ < end; ++drained_) leave(buffer_[size_t(drained_)], leaving);
}

}  // namespace hb
