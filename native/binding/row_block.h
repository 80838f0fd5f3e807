// Blocks of hb.data columns for the native row gathers (the batch op's concatenation and
// the shuffle buffer): how lib/data/row_gather.ts describes a block's columns, read into
// the shapes of native/kernels/row_gather.h, and the results made into JS arrays.
#pragma once

#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "native/core/buffer.h"
#include "native/kernels/row_gather.h"

namespace hb {
namespace binding {

// One column of a block (see native/kernels/row_gather.h for the shapes).
struct BlockColumn {
  std::string name;
  int64_t rows = 0;
  int64_t items = 0;
  std::shared_ptr<Buffer> rowSplits;  // int32, rows + 1; null: a row is one item
  int64_t rowSplitsLength = 0;
  struct Item {
    napi_typedarray_type type = napi_uint8_array;
    size_t elementBytes = 1;
    std::shared_ptr<Buffer> data;  // null: every item reads a fill value (a string column's valid flags: 1)
    int64_t length = 0;
  };
  std::vector<Item> itemArrays;
  std::shared_ptr<Buffer> itemOffsets;  // int32, items + 1; null: items have no bytes
  int64_t itemOffsetsLength = 0;
  std::shared_ptr<Buffer> bytes;
  int64_t byteLength = 0;
};

struct RowBlock {
  std::vector<BlockColumn> columns;
  int64_t rows = 0;
  // For a block of views: each JS array viewed, where and how long it was when viewed.
  struct View {
    napi_ref array;  // owned by the Buffer viewing it
    const void* data;
    size_t bytes;
  };
  std::vector<View> views;
};

// A block's columns (an array of { name, rowSplits, itemArrays, itemOffsets, bytes })
// viewed where they lie in JS memory, without a copy. Each array is referenced until the
// block goes, which must be on the JS thread (a task's captures are destroyed there), and
// must not change meanwhile: hb.data hands over arrays no one else holds. Types and
// lengths are checked here; the splits and offsets by checkRowBlock. `where` starts errors.
std::shared_ptr<RowBlock> viewRowBlock(const Napi::Value& specs, const std::string& where);

// Checks that every array `block` views is still where and as long as when it was viewed:
// reading the later arguments can run JS (a getter) that detaches or shrinks an earlier
// one. Call on the JS thread once every argument is read.
void confirmViews(Napi::Env env, const RowBlock& block, const std::string& where);

// The block's splits and offsets in range and never falling, and its columns of one row
// count: an Error naming the column otherwise. O(rows); safe off the JS thread.
void checkRowBlock(const RowBlock& block, const std::string& where);

// A copy of the block in native memory, for keeping past the call that brought it.
std::shared_ptr<RowBlock> copyRowBlock(const RowBlock& block);

// What the blocks gathered together share: column names and kinds, fixed by the first
// block admitted, and each item array's type, fixed by the first block that has it.
class RowBlockLayout {
 public:
  // Checks `block` against the layout (an Error naming the column when it differs) and
  // learns the types of item arrays seen for the first time. Changes nothing on error.
  void admit(const RowBlock& block, const std::string& where);

  struct Column {
    std::string name;
    bool ranged = false;
    bool strings = false;
    std::vector<int> itemTypes;  // napi_typedarray_type, or -1 where no block had it yet
  };
  const std::vector<Column>& columns() const { return columns_; }

 private:
  bool set_ = false;
  std::vector<Column> columns_;
};

// A gather's result: one RowGatherResult per column, with what JS needs to type them.
struct GatheredColumns {
  int64_t rows = 0;
  std::vector<RowGatherResult> columns;
  // Per column and item array: its typed-array type, whether any of the blocks read had
  // it, and whether all did (rows of blocks without it read the fill value).
  std::vector<std::vector<int>> types;
  std::vector<std::vector<bool>> anyHas, allHave;
};

// Row i is row rows[i] of blocks[which[i]] (the shuffle's pick). The blocks must have
// been admitted to `layout` and checked; the picks are checked here. Off the JS thread.
GatheredColumns gatherBlockRows(const std::vector<const RowBlock*>& blocks, const RowBlockLayout& layout,
                                const int32_t* which, const int32_t* rows, int64_t n);

// Rows [starts[b], starts[b] + counts[b]) of each block b, one block after another (the
// batch op's cut across blocks). The blocks must have been admitted to `layout`; the
// ranges, and the splits and offsets they read, are checked here. Off the JS thread.
GatheredColumns concatBlockRows(const std::vector<const RowBlock*>& blocks, const RowBlockLayout& layout,
                                const int64_t* starts, const int64_t* counts);

// A gather's result as a block of its own, for gathering from again. An item array some
// of the source blocks lacked keeps its fill values where it is one byte wide (a string's
// valid flag: 1, as read), and is left out where wider (weights: dropped, as a gather
// over blocks of which some lack them drops them).
std::shared_ptr<RowBlock> rowBlockOf(const GatheredColumns& gathered, const RowBlockLayout& layout);

// One JS object per column, { rowSplits, itemArrays, partial, itemOffsets, bytes }, over
// the results' native blocks: itemArrays[a] is null where no block read had array a,
// and partial[a] true where some lacked it. On the JS thread.
Napi::Value gatheredColumnsToJs(Napi::Env env, const GatheredColumns& gathered);

}  // namespace binding
}  // namespace hb
