// Row gathers for the input pipeline's shuffle and batch: rows of one column picked from
// several blocks, in any order (or in ranges, one after another), into one new block. Bytes and counts only; the binding
// (native/binding/row_block.cc) maps hb.data's column kinds onto it:
//   numeric column     a row is one item of one item array
//   hb.StringColumn    a row is one item: a range of bytes (itemOffsets), its valid flag an item array
//   hb.Ragged          a row is a range of items (rowSplits): values and weights item arrays
//   ListColumn         a range of items: numbers, or strings as above
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "native/core/buffer.h"

namespace hb {

// One column over `blocks` blocks. Pointers view memory the caller keeps alive.
struct RowGatherColumn {
  std::string name;  // for errors
  int64_t blocks = 0;
  // Per block: rows + 1 splits into its items; empty when each row is one item.
  std::vector<const int32_t*> rowSplits;
  std::vector<int64_t> rows;   // per block
  std::vector<int64_t> items;  // per block
  struct ItemArray {
    size_t elementBytes = 1;
    std::vector<const uint8_t*> blocks;  // null: every item reads as `fill`
    std::vector<uint8_t> fill;           // elementBytes bytes
  };
  std::vector<ItemArray> itemArrays;
  // Per block: items + 1 byte offsets and the bytes; empty when items have no bytes.
  std::vector<const int32_t*> itemOffsets;
  std::vector<const uint8_t*> bytes;
  std::vector<int64_t> byteLengths;
};

struct RowGatherResult {
  std::shared_ptr<Buffer> rowSplits;   // int32, rows + 1 (null without source splits)
  std::vector<std::shared_ptr<Buffer>> itemArrays;
  int64_t items = 0;
  std::shared_ptr<Buffer> itemOffsets;  // int32, items + 1 (null without bytes)
  std::shared_ptr<Buffer> bytes;
  int64_t byteCount = 0;
};

// Checks the blocks' shapes: splits and offsets start at >= 0, never fall and end inside
// their arrays; item arrays agree on the items. An Error naming the column otherwise.
void checkRowGatherBlocks(const RowGatherColumn& column);

// Checks the picks: which[i] a block, rows[i] one of its rows (blocks already checked).
void checkRowGatherPicks(const RowGatherColumn& column, const int32_t* which, const int32_t* rows, int64_t n);

// Row i of the result is row rows[i] of block which[i]. Call both checks first.
RowGatherResult gatherRows(const RowGatherColumn& column, const int32_t* which, const int32_t* rows, int64_t n);

// Where each piece's items and string bytes lie, as the checks read them.
struct RowRangeExtents {
  std::vector<int64_t> itemBegin, itemCount, byteBegin, byteCount;  // per piece
};

// Checks the ranges, piece p being rows [starts[p], starts[p] + counts[p]) of block p: each
// inside its block, and the splits and offsets it reads in range and never falling.
// Returns the extents the copy is then bounded by.
RowRangeExtents checkRowRanges(const RowGatherColumn& column, const int64_t* starts, const int64_t* counts);

// The pieces one after another (the batch op's cut across blocks): one copy per array
// and piece, of the extents checkRowRanges returned (all the checking this needs).
RowGatherResult concatRowRanges(const RowGatherColumn& column, const int64_t* starts, const int64_t* counts,
                                const RowRangeExtents& extents);

}  // namespace hb
