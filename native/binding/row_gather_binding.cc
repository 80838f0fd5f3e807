// The input pipeline's shuffle, natively: rowBlock copies a block of columns into native
// memory when it enters the shuffle buffer (one memcpy per array, checked once), and
// gatherRows picks each outgoing block's rows from those blocks on a queue of its own,
// off the JS thread (the training step's executor stays free for the step). The blocks'
// memory is the addon's, so nothing JS does to its own arrays meanwhile (transfer,
// resize, drop) reaches a gather in flight.
#include <napi.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/core/buffer.h"
#include "native/core/status.h"
#include "native/kernels/row_gather.h"

namespace hb {
namespace binding {

namespace {

// One column of a block, in native memory (see native/kernels/row_gather.h for the shapes).
struct BlockColumn {
  std::string name;
  int64_t rows = 0;
  int64_t items = 0;
  std::shared_ptr<Buffer> rowSplits;  // int32, rows + 1; null: a row is one item
  struct Item {
    napi_typedarray_type type = napi_uint8_array;
    size_t elementBytes = 1;
    std::shared_ptr<Buffer> data;  // null: every item reads 1 (a string column's valid flags)
  };
  std::vector<Item> itemArrays;
  std::shared_ptr<Buffer> itemOffsets;  // int32, items + 1; null: items have no bytes
  std::shared_ptr<Buffer> bytes;
  int64_t byteLength = 0;
};

struct RowBlock {
  std::vector<BlockColumn> columns;
  int64_t rows = 0;
};

// Tags the JS objects that stand for row blocks, so gatherRows takes no other object.
constexpr napi_type_tag kRowBlockTag = {0x6862747352424c4bULL, 0x726f77626c6f636bULL};

size_t elementBytesOf(napi_typedarray_type type) {
  switch (type) {
    case napi_uint8_array: return 1;
    case napi_int32_array:
    case napi_float32_array: return 4;
    case napi_float64_array:
    case napi_bigint64_array: return 8;
    default: return 0;
  }
}

// A copy of a typed array's bytes in a host block, made now on the JS thread. `describe`
// names the argument, called only for an error.
template <typename Describe>
std::shared_ptr<Buffer> copyArray(const Napi::Value& value, Describe describe, napi_typedarray_type* type, int64_t* length) {
  Napi::Env env = value.Env();
  if (!value.IsTypedArray()) throw Napi::TypeError::New(env, describe() + " must be a typed array");
  Napi::TypedArray array = value.As<Napi::TypedArray>();
  *type = array.TypedArrayType();
  if (elementBytesOf(*type) == 0) {
    throw Napi::TypeError::New(env, describe() + " must be a Uint8Array, Int32Array, Float32Array, Float64Array or BigInt64Array");
  }
  Napi::ArrayBuffer buffer = array.ArrayBuffer();
  bool plain = false;
  if (napi_is_arraybuffer(env, buffer, &plain) != napi_ok || !plain) refuseSharedMemory(value, describe());
  if (buffer.IsDetached()) throw Napi::Error::New(env, describe() + "'s ArrayBuffer was transferred or detached");
  *length = int64_t(array.ElementLength());
  const size_t bytes = array.ByteLength();
  std::shared_ptr<Buffer> copy = Buffer::allocate(Device::cpu(), std::max<size_t>(bytes, 1));
  if (bytes > 0) std::memcpy(copy->data(), static_cast<const char*>(buffer.Data()) + array.ByteOffset(), bytes);
  return copy;
}

std::shared_ptr<Buffer> copyInt32Array(const Napi::Value& value, const std::string& what, int64_t* length) {
  napi_typedarray_type type;
  std::shared_ptr<Buffer> copy = copyArray(value, [&] { return what; }, &type, length);
  if (type != napi_int32_array) throw Napi::TypeError::New(value.Env(), what + " must be an Int32Array");
  if (*length < 1) throw Napi::Error::New(value.Env(), what + " is empty: it needs one more entry than rows");
  return copy;
}

// The kernel's view of column c over `blocks`.
RowGatherColumn gatherView(const std::vector<std::shared_ptr<RowBlock>>& blocks, size_t c) {
  RowGatherColumn view;
  const BlockColumn& first = blocks.front()->columns[c];
  view.name = first.name;
  view.blocks = int64_t(blocks.size());
  view.itemArrays.resize(first.itemArrays.size());
  for (size_t a = 0; a < first.itemArrays.size(); ++a) {
    // The width of the blocks that have the array (checkSameLayout: one type); absent
    // everywhere, one-byte flags. Absent flags read 1 (a string that is not missing);
    // wider arrays read zeros (weights the caller drops).
    size_t width = 1;
    for (const auto& block : blocks) {
      if (block->columns[c].itemArrays[a].data) width = block->columns[c].itemArrays[a].elementBytes;
    }
    view.itemArrays[a].elementBytes = width;
    view.itemArrays[a].fill.assign(width, 0);
    if (width == 1) view.itemArrays[a].fill[0] = 1;
  }
  for (const auto& block : blocks) {
    const BlockColumn& col = block->columns[c];
    view.rows.push_back(col.rows);
    view.items.push_back(col.items);
    if (col.rowSplits) view.rowSplits.push_back(static_cast<const int32_t*>(col.rowSplits->data()));
    for (size_t a = 0; a < col.itemArrays.size(); ++a) {
      const auto& data = col.itemArrays[a].data;
      view.itemArrays[a].blocks.push_back(data ? static_cast<const uint8_t*>(data->data()) : nullptr);
    }
    if (col.itemOffsets) {
      view.itemOffsets.push_back(static_cast<const int32_t*>(col.itemOffsets->data()));
      view.bytes.push_back(static_cast<const uint8_t*>(col.bytes->data()));
      view.byteLengths.push_back(col.byteLength);
    }
  }
  return view;
}

BlockColumn readBlockColumn(const Napi::Value& value, size_t index) {
  Napi::Env env = value.Env();
  if (!value.IsObject()) throw Napi::TypeError::New(env, "rowBlock: columns[" + std::to_string(index) + "] must be an object");
  Napi::Object spec = value.As<Napi::Object>();
  BlockColumn col;
  const Napi::Value nameValue = spec.Get("name");
  col.name = nameValue.IsString() ? nameValue.As<Napi::String>().Utf8Value() : "#" + std::to_string(index);
  const std::string where = "rowBlock: column '" + col.name + "'";
  int64_t splitsLength = 0;
  const Napi::Value splits = spec.Get("rowSplits");
  if (!splits.IsNull() && !splits.IsUndefined()) col.rowSplits = copyInt32Array(splits, where + ": rowSplits", &splitsLength);
  int64_t offsetsLength = 0;
  const Napi::Value offsets = spec.Get("itemOffsets");
  if (!offsets.IsNull() && !offsets.IsUndefined()) {
    col.itemOffsets = copyInt32Array(offsets, where + ": itemOffsets", &offsetsLength);
    napi_typedarray_type type;
    col.bytes = copyArray(spec.Get("bytes"), [&] { return where + ": bytes"; }, &type, &col.byteLength);
    if (type != napi_uint8_array) throw Napi::TypeError::New(env, where + ": bytes must be a Uint8Array");
  }
  const Napi::Value arraysValue = spec.Get("itemArrays");
  if (!arraysValue.IsArray()) throw Napi::TypeError::New(env, where + ": itemArrays must be an array");
  Napi::Array arrays = arraysValue.As<Napi::Array>();
  int64_t items = col.itemOffsets ? offsetsLength - 1 : -1;
  for (uint32_t a = 0; a < arrays.Length(); ++a) {
    const Napi::Value entry = arrays.Get(a);
    BlockColumn::Item item;
    if (entry.IsNull() || entry.IsUndefined()) {
      // Absent: a string column's flags where none is missing (read as 1), a ragged
      // column's weights in a block without them (the caller drops them then).
      col.itemArrays.push_back(item);
      continue;
    }
    int64_t length = 0;
    item.data = copyArray(entry, [&] { return where + ": itemArrays[" + std::to_string(a) + "]"; }, &item.type, &length);
    item.elementBytes = elementBytesOf(item.type);
    if (items >= 0 && length != items) {
      throw Napi::Error::New(env, where + ": itemArrays[" + std::to_string(a) + "] has " + std::to_string(length) +
                                      " values for " + std::to_string(items) + " items");
    }
    items = length;
    col.itemArrays.push_back(item);
  }
  if (items < 0) throw Napi::Error::New(env, where + ": no values");
  col.items = items;
  col.rows = col.rowSplits ? splitsLength - 1 : items;
  // The kernel's checks on this one block: splits and offsets in range and never falling.
  std::vector<std::shared_ptr<RowBlock>> one{std::make_shared<RowBlock>()};
  one.front()->columns.push_back(col);
  checkRowGatherBlocks(gatherView(one, 0));
  return col;
}

// rowBlock(columns): a block's columns copied into native memory, as an object gatherRows
// takes. Each column { name, rowSplits, itemArrays, itemOffsets, bytes } (lib/data/row_gather.ts).
Napi::Value rowBlockBinding(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "rowBlock: columns must be an array");
  Napi::Array specs = info[0].As<Napi::Array>();
  auto block = std::make_shared<RowBlock>();
  for (uint32_t i = 0; i < specs.Length(); ++i) {
    block->columns.push_back(readBlockColumn(specs.Get(i), i));
    const BlockColumn& col = block->columns.back();
    if (i > 0 && col.rows != block->rows) {
      throw Napi::Error::New(env, "rowBlock: column '" + col.name + "' has " + std::to_string(col.rows) + " rows but '" +
                                      block->columns.front().name + "' " + std::to_string(block->rows));
    }
    block->rows = col.rows;
  }
  Napi::Object handle = Napi::Object::New(env);
  auto* held = new std::shared_ptr<RowBlock>(block);
  napi_status status = napi_wrap(env, handle, held, [](napi_env, void* data, void*) { delete static_cast<std::shared_ptr<RowBlock>*>(data); },
                                 nullptr, nullptr);
  if (status != napi_ok) {
    delete held;
    throw Napi::Error::New(env, "rowBlock: could not make the block's handle");
  }
  if (napi_type_tag_object(env, handle, &kRowBlockTag) != napi_ok) throw Napi::Error::New(env, "rowBlock: could not tag the handle");
  handle.Set("rows", Napi::Number::New(env, double(block->rows)));
  return handle;
}

// The holder inside a row block's handle (its shared_ptr is empty once released).
std::shared_ptr<RowBlock>* blockHolder(const Napi::Value& value, const std::string& argument) {
  Napi::Env env = value.Env();
  bool tagged = false;
  if (value.IsObject()) napi_check_object_type_tag(env, value, &kRowBlockTag, &tagged);
  if (!tagged) throw Napi::TypeError::New(env, argument + " is not a row block (rowBlock's result)");
  void* data = nullptr;
  if (napi_unwrap(env, value, &data) != napi_ok || data == nullptr) throw Napi::Error::New(env, argument + " is unusable");
  return static_cast<std::shared_ptr<RowBlock>*>(data);
}

std::shared_ptr<RowBlock> unwrapBlock(const Napi::Value& value, size_t index) {
  const std::string argument = "gatherRows: blocks[" + std::to_string(index) + "]";
  std::shared_ptr<RowBlock> block = *blockHolder(value, argument);
  if (!block) throw Napi::Error::New(value.Env(), argument + " was released");
  return block;
}

// rowBlockRelease(block): its memory goes back now (gathers in flight keep what they
// read until they settle), not when JS collects the handle.
Napi::Value rowBlockReleaseBinding(const Napi::CallbackInfo& info) {
  blockHolder(info[0], "rowBlockRelease: block")->reset();
  return info.Env().Undefined();
}

// Blocks gathered together must have the same columns, kind for kind.
void checkSameLayout(const std::vector<std::shared_ptr<RowBlock>>& blocks) {
  const RowBlock& first = *blocks.front();
  for (size_t b = 1; b < blocks.size(); ++b) {
    const RowBlock& other = *blocks[b];
    HB_CHECK(other.columns.size() == first.columns.size(), "gatherRows: block ", b, " has ", other.columns.size(),
             " columns but block 0 ", first.columns.size());
    for (size_t c = 0; c < first.columns.size(); ++c) {
      const BlockColumn& x = first.columns[c];
      const BlockColumn& y = other.columns[c];
      HB_CHECK(x.name == y.name, "gatherRows: block ", b, "'s column ", c, " is '", y.name, "' but block 0's '", x.name, "'");
      const bool same = bool(x.rowSplits) == bool(y.rowSplits) && bool(x.itemOffsets) == bool(y.itemOffsets) &&
                        x.itemArrays.size() == y.itemArrays.size();
      HB_CHECK_CODE(same, Type, "column '", x.name, "' changes type between blocks");
    }
  }
  // An item array has one type in every block that has it (blocks without it read fill
  // values): gatherView reads each block with that one element width.
  for (size_t c = 0; c < first.columns.size(); ++c) {
    for (size_t a = 0; a < first.columns[c].itemArrays.size(); ++a) {
      const BlockColumn::Item* seen = nullptr;
      for (const auto& block : blocks) {
        const BlockColumn::Item& item = block->columns[c].itemArrays[a];
        if (!item.data) continue;
        HB_CHECK_CODE(seen == nullptr || item.type == seen->type, Type, "column '", first.columns[c].name,
                      "' changes type between blocks");
        seen = &item;
      }
    }
  }
}

Napi::Value orNull(Napi::Env env, const std::shared_ptr<Buffer>& block, napi_typedarray_type type, size_t length) {
  if (!block) return env.Null();
  return typedArrayOverBlock(env, type, block, length);
}

// gatherRows(blocks, which, rows): a promise of one result per column, { rowSplits,
// itemArrays, itemOffsets, bytes }, where row i is row rows[i] of blocks[which[i]].
Napi::Value gatherRowsBinding(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "gatherRows: blocks must be an array");
  Napi::Array list = info[0].As<Napi::Array>();
  auto blocks = std::make_shared<std::vector<std::shared_ptr<RowBlock>>>();
  for (uint32_t i = 0; i < list.Length(); ++i) blocks->push_back(unwrapBlock(list.Get(i), i));
  if (blocks->empty()) throw Napi::Error::New(env, "gatherRows: no blocks to gather from");
  checkSameLayout(*blocks);
  int64_t whichLength = 0, rowsLength = 0;
  auto which = std::make_shared<std::shared_ptr<Buffer>>();
  auto rows = std::make_shared<std::shared_ptr<Buffer>>();
  napi_typedarray_type type;
  *which = copyArray(info[1], [] { return std::string("gatherRows: which"); }, &type, &whichLength);
  if (type != napi_int32_array) throw Napi::TypeError::New(env, "gatherRows: which must be an Int32Array");
  *rows = copyArray(info[2], [] { return std::string("gatherRows: rows"); }, &type, &rowsLength);
  if (type != napi_int32_array) throw Napi::TypeError::New(env, "gatherRows: rows must be an Int32Array");
  if (whichLength != rowsLength) {
    throw Napi::Error::New(env, "gatherRows: which has " + std::to_string(whichLength) + " picks but rows " + std::to_string(rowsLength));
  }
  const int64_t n = whichLength;
  auto results = std::make_shared<std::vector<RowGatherResult>>();
  return scheduleOnQueue(env, "data", Device::cpu(), makeTask(
      [blocks, which, rows, n, results] {
        const auto* w = static_cast<const int32_t*>((*which)->data());
        const auto* r = static_cast<const int32_t*>((*rows)->data());
        std::vector<RowGatherColumn> views;
        for (size_t c = 0; c < blocks->front()->columns.size(); ++c) views.push_back(gatherView(*blocks, c));
        // Every column of a block has the block's rows (rowBlock checks), so the picks
        // checked against one column hold for all.
        if (!views.empty()) checkRowGatherPicks(views.front(), w, r, n);
        for (const RowGatherColumn& view : views) results->push_back(gatherRows(view, w, r, n));
      },
      [blocks, results, n](Napi::Env env) -> Napi::Value {
        Napi::Array out = Napi::Array::New(env, results->size());
        const RowBlock& first = *blocks->front();
        for (size_t c = 0; c < results->size(); ++c) {
          const RowGatherResult& g = (*results)[c];
          // An item array absent in every block (flags of strings never missing) has no type: Uint8.
          std::vector<napi_typedarray_type> types(first.columns[c].itemArrays.size(), napi_uint8_array);
          for (const auto& block : *blocks) {
            for (size_t a = 0; a < types.size(); ++a) {
              if (block->columns[c].itemArrays[a].data) types[a] = block->columns[c].itemArrays[a].type;
            }
          }
          Napi::Object o = Napi::Object::New(env);
          o.Set("rowSplits", orNull(env, g.rowSplits, napi_int32_array, size_t(n) + 1));
          Napi::Array arrays = Napi::Array::New(env, g.itemArrays.size());
          for (size_t a = 0; a < g.itemArrays.size(); ++a) {
            arrays.Set(uint32_t(a), typedArrayOverBlock(env, types[a], g.itemArrays[a], size_t(g.items)));
          }
          o.Set("itemArrays", arrays);
          o.Set("itemOffsets", orNull(env, g.itemOffsets, napi_int32_array, size_t(g.items) + 1));
          o.Set("bytes", orNull(env, g.bytes, napi_uint8_array, size_t(g.byteCount)));
          out.Set(uint32_t(c), o);
        }
        return out;
      }));
}

}  // namespace

void exportRowGather(Napi::Env env, Napi::Object exports) {
  exports.Set("rowBlock", Napi::Function::New(env, guarded<rowBlockBinding>, "rowBlock"));
  exports.Set("gatherRows", Napi::Function::New(env, guarded<gatherRowsBinding>, "gatherRows"));
  exports.Set("rowBlockRelease", Napi::Function::New(env, guarded<rowBlockReleaseBinding>, "rowBlockRelease"));
}

}  // namespace binding
}  // namespace hb
