// tf.data's shuffle over rows, as bookkeeping only: which buffered row leaves when a new
// one arrives. Rows are (slot, row) references into blocks the caller keeps; the
// reservoir counts each block's live references and says when a block's last row has
// left, so the caller frees it. Slots of freed blocks are reused, so the slot count stays
// bounded by the buffer however long the stream runs.
#pragma once

#include <cstdint>
#include <vector>

#include "native/data/row_random.h"

namespace hb {

struct RowRef {
  int32_t slot;
  int32_t row;
};

class ShuffleReservoir {
 public:
  ShuffleReservoir(int64_t capacity, uint32_t seed);

  // A block of `rows` rows (> 0) enters under a free slot, which is returned. Each of its
  // rows fills the buffer while it has room, and after that takes the place of a buffered
  // row picked uniformly, which is appended to `leaving`.
  int32_t add(int64_t rows, std::vector<RowRef>* leaving);

  // Once the input has ended: up to `maxRows` of the rows left, in a random order (the
  // first call permutes them); none when the buffer is empty. No add() after it.
  void drain(int64_t maxRows, std::vector<RowRef>* leaving);

  // The buffered rows, in buffer order (before the buffer begins to drain).
  const std::vector<RowRef>& bufferedRows() const { return buffer_; }

  // Every buffered row moves to one new block, made by the caller from bufferedRows():
  // buffer entry i becomes row i of the returned slot, and every other slot is freed.
  // The picks to come are unchanged; only where the rows lie changes. (A block keeps a
  // few rows long after most of it left, so without this the buffer's rows end up spread
  // over many times their own size.)
  int32_t compact();

  // The slots whose last row left in the latest add(), drain() or compact(): their
  // blocks can go once that call's rows are read.
  const std::vector<int32_t>& freed() const { return freed_; }

  // Rows buffered now, and at most.
  int64_t buffered() const { return int64_t(buffer_.size()) - drained_; }
  int64_t capacity() const { return capacity_; }

 private:
  void leave(RowRef ref, std::vector<RowRef>* leaving);
  int32_t takeSlot();
  // Grows what a call may grow, before it changes anything (the calls do not allocate after).
  void reserveFor(int64_t arriving, int64_t leavingRows, std::vector<RowRef>* leaving);

  int64_t capacity_;
  RowRandom random_;
  std::vector<RowRef> buffer_;
  std::vector<int64_t> references_;  // per slot: rows of its block still buffered
  std::vector<int32_t> freeSlots_;
  std::vector<int32_t> freed_;
  bool draining_ = false;
  int64_t drained_ = 0;  // rows of buffer_ already given out by drain()
};

}  // namespace hb
