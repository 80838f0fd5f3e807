#include "native/kernels/row_gather.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "native/core/status.h"

namespace hb {

namespace {

// Splits or offsets of one block, entries first .. first + count: from >= 0, never
// falling, the last <= limit. Errors start with `action` and give positions in the block.
void checkSplits(const int32_t* splits, int64_t first, int64_t count, int64_t limit, const std::string& name,
                 const char* what, int64_t block, const char* action) {
  HB_CHECK(splits != nullptr, action, " of column '", name, "': block ", block, " has no ", what);
  const int32_t* s = splits + first;
  HB_CHECK(s[0] >= 0, action, " of column '", name, "': block ", block, "'s ", what, " start at ", s[0]);
  for (int64_t i = 0; i < count; ++i) {
    HB_CHECK(s[i + 1] >= s[i], action, " of column '", name, "': block ", block, "'s ", what, " fall at ", first + i + 1,
             " (", s[i], " then ", s[i + 1], ")");
  }
  HB_CHECK(s[count] <= limit, action, " of column '", name, "': block ", block, "'s ", what, " end at ", s[count],
           " but it has ", limit);
}

std::shared_ptr<Buffer> hostBlock(size_t bytes) { return Buffer::allocate(Device::cpu(), bytes); }

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

// out[0] = 0, out[i + 1] = out[i] + lengthOf(i): the splits of n ranges laid end to end
// in one new block; returns their total, which must fit int32 splits.
template <typename LengthOf>
int64_t endToEndSplits(int64_t n, LengthOf lengthOf, int32_t* out, const std::string& name, const char* what) {
  int64_t total = 0;
  out[0] = 0;
  for (int64_t i = 0; i < n; ++i) {
    total += lengthOf(i);
    HB_CHECK(total <= kMaxInt32, "gather rows of column '", name, "': more than 2^31 - 1 ", what, " in one block");
    out[i + 1] = int32_t(total);
  }
  return total;
}

// How many picks ahead the loops fetch: the picks land at random in blocks larger than
// the caches, and the loads are independent.
constexpr int64_t kAhead = 16;

// Items of one fixed width: a copy of a known width is a register move, where a memcpy of
// a width known only at run time is a library call per item.
template <typename Word>
void gatherItems(const RowGatherColumn::ItemArray& a, const int32_t* which, const int32_t* index, int64_t items,
                 uint8_t* to) {
  Word fill;
  std::memcpy(&fill, a.fill.data(), sizeof(Word));
  for (int64_t k = 0; k < items; ++k) {
    if (k + kAhead < items) {
      const uint8_t* ahead = a.blocks[size_t(which[k + kAhead])];
      if (ahead != nullptr) __builtin_prefetch(ahead + size_t(index[k + kAhead]) * sizeof(Word));
    }
    const uint8_t* source = a.blocks[size_t(which[k])];
    Word value = fill;
    if (source != nullptr) std::memcpy(&value, source + size_t(index[k]) * sizeof(Word), sizeof(Word));
    std::memcpy(to + size_t(k) * sizeof(Word), &value, sizeof(Word));
  }
}

// Strings up to this long (Criteo's categoricals are 8 hex digits) are copied as one
// fixed-width move where both their block and the result have that many bytes left.
constexpr size_t kShortString = 16;

// The view covers every block with each of its arrays (the binding builds it so).
void checkColumnShape(const RowGatherColumn& c, const char* action) {
  const std::string& name = c.name;
  const size_t blocks = size_t(c.blocks);
  HB_CHECK(c.rows.size() == blocks && c.items.size() == blocks, action, " of column '", name, "': ", blocks,
           " blocks but ", c.rows.size(), " row counts");
  HB_CHECK(c.rowSplits.empty() || c.rowSplits.size() == blocks, action, " of column '", name, "': row splits for ",
           c.rowSplits.size(), " of ", blocks, " blocks");
  HB_CHECK(c.itemOffsets.empty() || (c.itemOffsets.size() == blocks && c.bytes.size() == blocks && c.byteLengths.size() == blocks),
           action, " of column '", name, "': string offsets for ", c.itemOffsets.size(), " of ", blocks, " blocks");
  for (const RowGatherColumn::ItemArray& a : c.itemArrays) {
    HB_CHECK(a.blocks.size() == blocks && a.fill.size() == a.elementBytes && a.elementBytes > 0, action, " of column '",
             name, "': an item array covers ", a.blocks.size(), " of ", blocks, " blocks");
  }
}

}  // namespace

void checkRowGatherBlocks(const RowGatherColumn& c) {
  const std::string& name = c.name;
  const size_t blocks = size_t(c.blocks);
  checkColumnShape(c, "gather rows");
  const bool ranged = !c.rowSplits.empty();
  const bool withBytes = !c.itemOffsets.empty();
  for (size_t b = 0; b < blocks; ++b) {
    HB_CHECK(c.rows[b] >= 0 && c.items[b] >= 0, "gather rows of column '", name, "': block ", b, " has a negative size");
    if (ranged) {
      checkSplits(c.rowSplits[b], 0, c.rows[b], c.items[b], name, "row splits", int64_t(b), "gather rows");
    } else {
      HB_CHECK(c.items[b] == c.rows[b], "gather rows of column '", name, "': block ", b, " has ", c.rows[b],
               " rows but ", c.items[b], " values");
    }
    if (withBytes) checkSplits(c.itemOffsets[b], 0, c.items[b], c.byteLengths[b], name, "string offsets", int64_t(b), "gather rows");
  }
}

void checkRowGatherPicks(const RowGatherColumn& c, const int32_t* which, const int32_t* rows, int64_t n) {
  const std::string& name = c.name;
  const size_t blocks = size_t(c.blocks);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t b = which[i];
    HB_CHECK(b >= 0 && size_t(b) < blocks, "gather rows of column '", name, "': pick ", i, " names block ", b, " of ",
             blocks);
    HB_CHECK(rows[i] >= 0 && rows[i] < c.rows[size_t(b)], "gather rows of column '", name, "': pick ", i, " names row ",
             rows[i], " of block ", b, ", which has ", c.rows[size_t(b)]);
  }
}

RowGatherResult gatherRows(const RowGatherColumn& c, const int32_t* which, const int32_t* rows, int64_t n) {
  RowGatherResult out;
  // The items the picked rows cover, as (block, item) pairs; each row its own item
  // without row splits.
  std::vector<int32_t> itemBlock, itemIndex;
  const int32_t* itemWhich = which;
  const int32_t* itemRows = rows;
  int64_t items = n;
  if (!c.rowSplits.empty()) {
    out.rowSplits = hostBlock(size_t(n + 1) * sizeof(int32_t));
    int32_t* splits = static_cast<int32_t*>(out.rowSplits->data());
    items = endToEndSplits(n, [&](int64_t i) {
      const int32_t* s = c.rowSplits[size_t(which[i])];
      return s[rows[i] + 1] - s[rows[i]];
    }, splits, c.name, "values");
    itemBlock.resize(size_t(items));
    itemIndex.resize(size_t(items));
    for (int64_t i = 0; i < n; ++i) {
      const int32_t* s = c.rowSplits[size_t(which[i])];
      for (int32_t k = s[rows[i]], at = splits[i]; k < s[rows[i] + 1]; ++k, ++at) {
        itemBlock[size_t(at)] = which[i];
        itemIndex[size_t(at)] = k;
      }
    }
    itemWhich = itemBlock.data();
    itemRows = itemIndex.data();
  }
  out.items = items;
  for (const RowGatherColumn::ItemArray& a : c.itemArrays) {
    std::shared_ptr<Buffer> block = hostBlock(std::max<size_t>(size_t(items) * a.elementBytes, 1));
    uint8_t* to = static_cast<uint8_t*>(block->data());
    switch (a.elementBytes) {
      case 1: gatherItems<uint8_t>(a, itemWhich, itemRows, items, to); break;
      case 4: gatherItems<uint32_t>(a, itemWhich, itemRows, items, to); break;
      case 8: gatherItems<uint64_t>(a, itemWhich, itemRows, items, to); break;
      default: {
        const size_t e = a.elementBytes;
        for (int64_t k = 0; k < items; ++k) {
          const uint8_t* source = a.blocks[size_t(itemWhich[k])];
          std::memcpy(to + size_t(k) * e, source != nullptr ? source + size_t(itemRows[k]) * e : a.fill.data(), e);
        }
      }
    }
    out.itemArrays.push_back(std::move(block));
  }
  if (!c.itemOffsets.empty()) {
    out.itemOffsets = hostBlock(size_t(items + 1) * sizeof(int32_t));
    int32_t* offsets = static_cast<int32_t*>(out.itemOffsets->data());
    // One pass reads each picked string's range (and fetches its bytes ahead); the copy
    // pass then reads the ranges in order instead of the offsets again at random.
    std::vector<int32_t> begins(static_cast<size_t>(items));
    const int64_t total = endToEndSplits(items, [&](int64_t k) {
      if (k + kAhead < items) {
        const int32_t* ahead = c.itemOffsets[size_t(itemWhich[k + kAhead])];
        __builtin_prefetch(ahead + itemRows[k + kAhead]);
      }
      const int32_t* o = c.itemOffsets[size_t(itemWhich[k])];
      const int32_t begin = o[itemRows[k]];
      begins[size_t(k)] = begin;
      __builtin_prefetch(c.bytes[size_t(itemWhich[k])] + begin);
      return o[itemRows[k] + 1] - begin;
    }, offsets, c.name, "string bytes");
    out.byteCount = total;
    out.bytes = hostBlock(std::max<size_t>(size_t(total), 1));
    uint8_t* to = static_cast<uint8_t*>(out.bytes->data());
    for (int64_t k = 0; k < items; ++k) {
      const size_t b = size_t(itemWhich[k]);
      const int32_t begin = begins[size_t(k)];
      const size_t length = size_t(offsets[k + 1] - offsets[k]);
      const uint8_t* from = c.bytes[b] + begin;
      if (length <= kShortString && begin + int64_t(kShortString) <= c.byteLengths[b] &&
          offsets[k] + int64_t(kShortString) <= total) {
        // Strings are written in order, so the bytes past this one's end are the next
        // ones' to overwrite; the last strings, within kShortString of the end, copy exactly.
        std::memcpy(to + offsets[k], from, kShortString);
      } else if (length > 0) {
        std::memcpy(to + offsets[k], from, length);
      }
    }
  }
  return out;
}

RowRangeExtents checkRowRanges(const RowGatherColumn& c, const int64_t* starts, const int64_t* counts) {
  const std::string& name = c.name;
  const size_t blocks = size_t(c.blocks);
  checkColumnShape(c, "concatenate rows");
  const bool ranged = !c.rowSplits.empty();
  const bool withBytes = !c.itemOffsets.empty();
  RowRangeExtents extents;
  int64_t rows = 0, items = 0, bytes = 0;
  for (size_t b = 0; b < blocks; ++b) {
    HB_CHECK(starts[b] >= 0 && counts[b] >= 0 && starts[b] + counts[b] <= c.rows[b], "concatenate rows of column '",
             name, "': piece ", b, " is rows ", starts[b], "..", starts[b] + counts[b], " of a block of ", c.rows[b]);
    // Only the splits and offsets the piece reads: a block cut into many batches is not
    // checked whole for each. Each bound is read once, here; the copy uses these values.
    int64_t itemBegin = starts[b], itemEnd = starts[b] + counts[b];
    if (ranged) {
      checkSplits(c.rowSplits[b], starts[b], counts[b], c.items[b], name, "row splits", int64_t(b), "concatenate rows");
      itemBegin = c.rowSplits[b][starts[b]];
      itemEnd = c.rowSplits[b][starts[b] + counts[b]];
      HB_CHECK(itemBegin >= 0 && itemBegin <= itemEnd && itemEnd <= c.items[b], "concatenate rows of column '", name,
               "': block ", b, "'s row splits changed while being read");
    } else {
      HB_CHECK(c.items[b] == c.rows[b], "concatenate rows of column '", name, "': block ", b, " has ", c.rows[b],
               " rows but ", c.items[b], " values");
    }
    int64_t byteBegin = 0, byteEnd = 0;
    if (withBytes) {
      checkSplits(c.itemOffsets[b], itemBegin, itemEnd - itemBegin, c.byteLengths[b], name, "string offsets", int64_t(b),
                  "concatenate rows");
      byteBegin = c.itemOffsets[b][itemBegin];
      byteEnd = c.itemOffsets[b][itemEnd];
      HB_CHECK(byteBegin >= 0 && byteBegin <= byteEnd && byteEnd <= c.byteLengths[b], "concatenate rows of column '",
               name, "': block ", b, "'s string offsets changed while being read");
    }
    rows += counts[b];
    items += itemEnd - itemBegin;
    bytes += byteEnd - byteBegin;
    HB_CHECK(rows <= kMaxInt32 && items <= kMaxInt32 && bytes <= kMaxInt32, "concatenate rows of column '", name,
             "': more than 2^31 - 1 rows, values or string bytes in one block");
    extents.itemBegin.push_back(itemBegin);
    extents.itemCount.push_back(itemEnd - itemBegin);
    extents.byteBegin.push_back(byteBegin);
    extents.byteCount.push_back(byteEnd - byteBegin);
  }
  return extents;
}

RowGatherResult concatRowRanges(const RowGatherColumn& c, const int64_t* starts, const int64_t* counts,
                                const RowRangeExtents& extents) {
  const size_t blocks = size_t(c.blocks);
  int64_t rows = 0, items = 0, bytes = 0;
  for (size_t b = 0; b < blocks; ++b) {
    rows += counts[b];
    items += extents.itemCount[b];
    bytes += extents.byteCount[b];
  }
  RowGatherResult out;
  // Splits and offsets are rebased values: they are written, never used here to address
  // memory, so the sizes above (from the checks) bound every copy.
  if (!c.rowSplits.empty()) {
    out.rowSplits = hostBlock(size_t(rows + 1) * sizeof(int32_t));
    int32_t* splits = static_cast<int32_t*>(out.rowSplits->data());
    splits[0] = 0;
    int64_t at = 0, base = 0;
    for (size_t b = 0; b < blocks; ++b) {
      const int32_t* s = c.rowSplits[b] + starts[b];
      const int32_t shift = int32_t(base - extents.itemBegin[b]);
      for (int64_t i = 1; i <= counts[b]; ++i) splits[at + i] = int32_t(uint32_t(s[i]) + uint32_t(shift));
      at += counts[b];
      base += extents.itemCount[b];
    }
  }
  out.items = items;
  for (const RowGatherColumn::ItemArray& a : c.itemArrays) {
    const size_t e = a.elementBytes;
    std::shared_ptr<Buffer> block = hostBlock(std::max<size_t>(size_t(items) * e, 1));
    uint8_t* to = static_cast<uint8_t*>(block->data());
    for (size_t b = 0; b < blocks; ++b) {
      const uint8_t* source = a.blocks[b];
      const int64_t count = extents.itemCount[b];
      if (source != nullptr) {
        if (count > 0) std::memcpy(to, source + size_t(extents.itemBegin[b]) * e, size_t(count) * e);
      } else {
        for (int64_t k = 0; k < count; ++k) std::memcpy(to + size_t(k) * e, a.fill.data(), e);
      }
      to += size_t(count) * e;
    }
    out.itemArrays.push_back(std::move(block));
  }
  if (!c.itemOffsets.empty()) {
    out.itemOffsets = hostBlock(size_t(items + 1) * sizeof(int32_t));
    int32_t* offsets = static_cast<int32_t*>(out.itemOffsets->data());
    offsets[0] = 0;
    int64_t at = 0, base = 0;
    for (size_t b = 0; b < blocks; ++b) {
      const int32_t* o = c.itemOffsets[b] + extents.itemBegin[b];
      const int32_t shift = int32_t(base - extents.byteBegin[b]);
      for (int64_t k = 1; k <= extents.itemCount[b]; ++k) offsets[at + k] = int32_t(uint32_t(o[k]) + uint32_t(shift));
      at += extents.itemCount[b];
      base += extents.byteCount[b];
    }
    out.byteCount = bytes;
    out.bytes = hostBlock(std::max<size_t>(size_t(bytes), 1));
    uint8_t* to = static_cast<uint8_t*>(out.bytes->data());
    for (size_t b = 0; b < blocks; ++b) {
      if (extents.byteCount[b] > 0) std::memcpy(to, c.bytes[b] + extents.byteBegin[b], size_t(extents.byteCount[b]));
      to += extents.byteCount[b];
    }
  }
  return out;
}

}  // namespace hb
