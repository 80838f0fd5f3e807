#include "native/binding/row_block.h"

#include <cstring>
#include <utility>

#include "native/binding/arguments.h"
#include "native/core/status.h"

namespace hb {
namespace binding {

namespace {

size_t elementBytesOf(int type) {
  switch (type) {
    case napi_uint8_array: return 1;
    case napi_int32_array:
    case napi_float32_array: return 4;
    case napi_float64_array:
    case napi_bigint64_array: return 8;
    default: return 0;
  }
}

// A typed array's bytes viewed in place, referenced until the buffer goes (on the JS
// thread). `describe` names the argument, called only for an error.
template <typename Describe>
std::shared_ptr<Buffer> viewArray(const Napi::Value& value, Describe describe, napi_typedarray_type* type, int64_t* length,
                                  std::vector<RowBlock::View>* views) {
  Napi::Env env = value.Env();
  if (!value.IsTypedArray()) throw Napi::TypeError::New(env, describe() + " must be a typed array");
  Napi::TypedArray array = value.As<Napi::TypedArray>();
  *type = array.TypedArrayType();
  if (elementBytesOf(*type) == 0) {
    throw Napi::TypeError::New(env, describe() + " must be a Uint8Array, Int32Array, Float32Array, Float64Array or BigInt64Array");
  }
  refuseSharedMemory(value, describe());
  Napi::ArrayBuffer buffer = array.ArrayBuffer();
  if (buffer.IsDetached()) throw Napi::Error::New(env, describe() + "'s ArrayBuffer was transferred or detached");
  *length = int64_t(array.ElementLength());
  napi_ref ref = nullptr;
  napi_env rawEnv = env;
  if (napi_create_reference(rawEnv, array, 1, &ref) != napi_ok) throw Napi::Error::New(env, describe() + ": could not reference the array");
  void* data = static_cast<char*>(buffer.Data()) + array.ByteOffset();
  std::shared_ptr<Buffer> view = Buffer::wrapHost(data, array.ByteLength(), [rawEnv, ref] { napi_delete_reference(rawEnv, ref); });
  views->push_back(RowBlock::View{ref, data, array.ByteLength()});
  return view;
}

std::shared_ptr<Buffer> viewInt32Array(const Napi::Value& value, const std::string& what, int64_t* length,
                                       std::vector<RowBlock::View>* views) {
  napi_typedarray_type type;
  std::shared_ptr<Buffer> view = viewArray(value, [&] { return what; }, &type, length, views);
  if (type != napi_int32_array) throw Napi::TypeError::New(value.Env(), what + " must be an Int32Array");
  if (*length < 1) throw Napi::Error::New(value.Env(), what + " is empty: it needs one more entry than rows");
  return view;
}

BlockColumn viewBlockColumn(const Napi::Value& value, size_t index, const std::string& owner, std::vector<RowBlock::View>* views) {
  Napi::Env env = value.Env();
  if (!value.IsObject()) throw Napi::TypeError::New(env, owner + ": columns[" + std::to_string(index) + "] must be an object");
  Napi::Object spec = value.As<Napi::Object>();
  BlockColumn col;
  const Napi::Value nameValue = spec.Get("name");
  col.name = nameValue.IsString() ? nameValue.As<Napi::String>().Utf8Value() : "#" + std::to_string(index);
  const std::string where = owner + ": column '" + col.name + "'";
  const Napi::Value splits = spec.Get("rowSplits");
  if (!splits.IsNull() && !splits.IsUndefined()) col.rowSplits = viewInt32Array(splits, where + ": rowSplits", &col.rowSplitsLength, views);
  const Napi::Value offsets = spec.Get("itemOffsets");
  if (!offsets.IsNull() && !offsets.IsUndefined()) {
    col.itemOffsets = viewInt32Array(offsets, where + ": itemOffsets", &col.itemOffsetsLength, views);
    napi_typedarray_type type;
    col.bytes = viewArray(spec.Get("bytes"), [&] { return where + ": bytes"; }, &type, &col.byteLength, views);
    if (type != napi_uint8_array) throw Napi::TypeError::New(env, where + ": bytes must be a Uint8Array");
  }
  const Napi::Value arraysValue = spec.Get("itemArrays");
  if (!arraysValue.IsArray()) throw Napi::TypeError::New(env, where + ": itemArrays must be an array");
  Napi::Array arrays = arraysValue.As<Napi::Array>();
  int64_t items = col.itemOffsets ? col.itemOffsetsLength - 1 : -1;
  for (uint32_t a = 0; a < arrays.Length(); ++a) {
    const Napi::Value entry = arrays.Get(a);
    BlockColumn::Item item;
    if (entry.IsNull() || entry.IsUndefined()) {
      // Absent: a string column's flags where none is missing (read as 1), a ragged
      // column's weights in a block without them (the caller drops them then).
      col.itemArrays.push_back(item);
      continue;
    }
    item.data = viewArray(entry, [&] { return where + ": itemArrays[" + std::to_string(a) + "]"; }, &item.type, &item.length, views);
    item.elementBytes = elementBytesOf(item.type);
    // A string's valid flags are bytes (a block without them reads 1s, one byte each).
    if (col.itemOffsets && item.type != napi_uint8_array) {
      throw Napi::TypeError::New(env, where + ": itemArrays[" + std::to_string(a) + "] (valid flags) must be a Uint8Array");
    }
    if (items >= 0 && item.length != items) {
      throw Napi::Error::New(env, where + ": itemArrays[" + std::to_string(a) + "] has " + std::to_string(item.length) +
                                      " values for " + std::to_string(items) + " items");
    }
    items = item.length;
    col.itemArrays.push_back(item);
  }
  if (items < 0) throw Napi::Error::New(env, where + ": no values");
  col.items = items;
  col.rows = col.rowSplits ? col.rowSplitsLength - 1 : items;
  return col;
}

// The kernel's view of one column of one block, for its checks.
RowGatherColumn singleBlockView(const BlockColumn& col) {
  RowGatherColumn view;
  view.name = col.name;
  view.blocks = 1;
  view.rows.push_back(col.rows);
  view.items.push_back(col.items);
  if (col.rowSplits) view.rowSplits.push_back(static_cast<const int32_t*>(col.rowSplits->data()));
  for (const BlockColumn::Item& item : col.itemArrays) {
    RowGatherColumn::ItemArray a;
    a.elementBytes = item.elementBytes;
    a.fill.assign(item.elementBytes, 0);
    a.blocks.push_back(item.data ? static_cast<const uint8_t*>(item.data->data()) : nullptr);
    view.itemArrays.push_back(std::move(a));
  }
  if (col.itemOffsets) {
    view.itemOffsets.push_back(static_cast<const int32_t*>(col.itemOffsets->data()));
    view.bytes.push_back(static_cast<const uint8_t*>(col.bytes->data()));
    view.byteLengths.push_back(col.byteLength);
  }
  return view;
}

std::shared_ptr<Buffer> copyOf(const std::shared_ptr<Buffer>& from) {
  if (!from) return nullptr;
  std::shared_ptr<Buffer> copy = Buffer::allocate(Device::cpu(), std::max<size_t>(from->bytes(), 1));
  if (from->bytes() > 0) std::memcpy(copy->data(), from->data(), from->bytes());
  return copy;
}

// The kernel's view of column c over `blocks`.
RowGatherColumn gatherView(const std::vector<const RowBlock*>& blocks, const RowBlockLayout& layout, size_t c) {
  const RowBlockLayout::Column& shape = layout.columns()[c];
  RowGatherColumn view;
  view.name = shape.name;
  view.blocks = int64_t(blocks.size());
  view.itemArrays.resize(shape.itemTypes.size());
  for (size_t a = 0; a < shape.itemTypes.size(); ++a) {
    // Blocks without the array read zeros (weights the caller drops), or 1 for one-byte
    // flags (a string that is not missing); an array no block had is one-byte flags.
    const size_t width = shape.itemTypes[a] < 0 ? 1 : elementBytesOf(shape.itemTypes[a]);
    view.itemArrays[a].elementBytes = width;
    view.itemArrays[a].fill.assign(width, 0);
    if (width == 1) view.itemArrays[a].fill[0] = 1;
  }
  for (const RowBlock* block : blocks) {
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

// The result's typing: each item array's type, and which of `blocks` had it.
void describePresence(const std::vector<const RowBlock*>& blocks, const RowBlockLayout& layout, GatheredColumns* out) {
  for (size_t c = 0; c < layout.columns().size(); ++c) {
    const std::vector<int>& types = layout.columns()[c].itemTypes;
    std::vector<bool> any(types.size(), false), all(types.size(), true);
    for (const RowBlock* block : blocks) {
      for (size_t a = 0; a < types.size(); ++a) {
        const bool has = bool(block->columns[c].itemArrays[a].data);
        any[a] = any[a] || has;
        all[a] = all[a] && has;
      }
    }
    out->types.push_back(types);
    out->anyHas.push_back(std::move(any));
    out->allHave.push_back(std::move(all));
  }
}

Napi::Value orNull(Napi::Env env, const std::shared_ptr<Buffer>& block, napi_typedarray_type type, size_t length) {
  if (!block) return env.Null();
  return typedArrayOverBlock(env, type, block, length);
}

}  // namespace

std::shared_ptr<RowBlock> viewRowBlock(const Napi::Value& specs, const std::string& where) {
  Napi::Env env = specs.Env();
  if (!specs.IsArray()) throw Napi::TypeError::New(env, where + ": columns must be an array");
  Napi::Array list = specs.As<Napi::Array>();
  auto block = std::make_shared<RowBlock>();
  for (uint32_t i = 0; i < list.Length(); ++i) {
    block->columns.push_back(viewBlockColumn(list.Get(i), i, where, &block->views));
    const BlockColumn& col = block->columns.back();
    if (i > 0 && col.rows != block->rows) {
      throw Napi::Error::New(env, where + ": column '" + col.name + "' has " + std::to_string(col.rows) + " rows but '" +
                                      block->columns.front().name + "' " + std::to_string(block->rows));
    }
    block->rows = col.rows;
  }
  return block;
}

void confirmViews(Napi::Env env, const RowBlock& block, const std::string& where) {
  for (const RowBlock::View& view : block.views) {
    napi_value array = nullptr;
    void* data = nullptr;
    size_t length = 0;
    napi_typedarray_type type;
    napi_value buffer = nullptr;
    size_t offset = 0;
    bool detached = true;
    const bool readable = napi_get_reference_value(env, view.array, &array) == napi_ok && array != nullptr &&
                          napi_get_typedarray_info(env, array, &type, &length, &data, &buffer, &offset) == napi_ok &&
                          napi_is_detached_arraybuffer(env, buffer, &detached) == napi_ok;
    if (!readable || detached || data != view.data || length * elementBytesOf(type) < view.bytes) {
      throw Napi::Error::New(env, where + ": an array was detached or shrunk while the arguments were read");
    }
  }
}

void checkRowBlock(const RowBlock& block, const std::string& where) {
  for (const BlockColumn& col : block.columns) {
    try {
      checkRowGatherBlocks(singleBlockView(col));
    } catch (const Error& e) {
      throw Error(where + ": " + e.what(), e.code());
    }
  }
}

std::shared_ptr<RowBlock> copyRowBlock(const RowBlock& block) {
  auto copy = std::make_shared<RowBlock>(block);
  copy->views.clear();  // the copy views nothing
  for (BlockColumn& col : copy->columns) {
    col.rowSplits = copyOf(col.rowSplits);
    for (BlockColumn::Item& item : col.itemArrays) item.data = copyOf(item.data);
    col.itemOffsets = copyOf(col.itemOffsets);
    col.bytes = copyOf(col.bytes);
  }
  return copy;
}

void RowBlockLayout::admit(const RowBlock& block, const std::string& where) {
  if (!set_) {
    for (const BlockColumn& col : block.columns) {
      Column shape{col.name, bool(col.rowSplits), bool(col.itemOffsets), {}};
      for (const BlockColumn::Item& item : col.itemArrays) shape.itemTypes.push_back(item.data ? int(item.type) : -1);
      columns_.push_back(std::move(shape));
    }
    set_ = true;
    return;
  }
  HB_CHECK(block.columns.size() == columns_.size(), where, ": a block has ", block.columns.size(),
           " columns but the first ", columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    const Column& x = columns_[c];
    const BlockColumn& y = block.columns[c];
    HB_CHECK(x.name == y.name, where, ": a block's column ", c, " is '", y.name, "' but the first block's '", x.name, "'");
    const bool same = x.ranged == bool(y.rowSplits) && x.strings == bool(y.itemOffsets) && x.itemTypes.size() == y.itemArrays.size();
    HB_CHECK_CODE(same, Type, "column '", x.name, "' changes type between blocks");
    // An item array has one type in every block that has it: gatherView reads each
    // block with that one element width.
    for (size_t a = 0; a < x.itemTypes.size(); ++a) {
      const BlockColumn::Item& item = y.itemArrays[a];
      HB_CHECK_CODE(!item.data || x.itemTypes[a] < 0 || x.itemTypes[a] == int(item.type), Type, "column '", x.name,
                    "' changes type between blocks");
    }
  }
  for (size_t c = 0; c < columns_.size(); ++c) {
    for (size_t a = 0; a < columns_[c].itemTypes.size(); ++a) {
      const BlockColumn::Item& item = block.columns[c].itemArrays[a];
      if (item.data && columns_[c].itemTypes[a] < 0) columns_[c].itemTypes[a] = int(item.type);
    }
  }
}

GatheredColumns gatherBlockRows(const std::vector<const RowBlock*>& blocks, const RowBlockLayout& layout,
                                const int32_t* which, const int32_t* rows, int64_t n) {
  GatheredColumns out;
  out.rows = n;
  std::vector<RowGatherColumn> views;
  for (size_t c = 0; c < layout.columns().size(); ++c) views.push_back(gatherView(blocks, layout, c));
  // Every column of a block has the block's rows (viewRowBlock checks), so the picks
  // checked against one column hold for all.
  if (!views.empty()) checkRowGatherPicks(views.front(), which, rows, n);
  for (const RowGatherColumn& view : views) out.columns.push_back(gatherRows(view, which, rows, n));
  describePresence(blocks, layout, &out);
  return out;
}

GatheredColumns concatBlockRows(const std::vector<const RowBlock*>& blocks, const RowBlockLayout& layout,
                                const int64_t* starts, const int64_t* counts) {
  GatheredColumns out;
  for (size_t b = 0; b < blocks.size(); ++b) out.rows += counts[b];
  std::vector<RowGatherColumn> views;
  for (size_t c = 0; c < layout.columns().size(); ++c) views.push_back(gatherView(blocks, layout, c));
  // Each column's splits and offsets, within the ranges read, before any is copied.
  std::vector<RowRangeExtents> extents;
  for (const RowGatherColumn& view : views) extents.push_back(checkRowRanges(view, starts, counts));
  for (size_t c = 0; c < views.size(); ++c) out.columns.push_back(concatRowRanges(views[c], starts, counts, extents[c]));
  describePresence(blocks, layout, &out);
  return out;
}

std::shared_ptr<RowBlock> rowBlockOf(const GatheredColumns& gathered, const RowBlockLayout& layout) {
  auto block = std::make_shared<RowBlock>();
  block->rows = gathered.rows;
  for (size_t c = 0; c < gathered.columns.size(); ++c) {
    const RowGatherResult& g = gathered.columns[c];
    BlockColumn col;
    col.name = layout.columns()[c].name;
    col.rows = gathered.rows;
    col.items = g.items;
    col.rowSplits = g.rowSplits;
    col.rowSplitsLength = g.rowSplits ? gathered.rows + 1 : 0;
    for (size_t a = 0; a < g.itemArrays.size(); ++a) {
      BlockColumn::Item item;
      const int type = gathered.types[c][a];
      item.type = napi_typedarray_type(type < 0 ? napi_uint8_array : type);
      item.elementBytes = elementBytesOf(item.type);
      item.length = g.items;
      const bool kept = gathered.allHave[c][a] || (gathered.anyHas[c][a] && item.elementBytes == 1);
      if (kept) item.data = g.itemArrays[a];
      col.itemArrays.push_back(item);
    }
    col.itemOffsets = g.itemOffsets;
    col.itemOffsetsLength = g.itemOffsets ? g.items + 1 : 0;
    col.bytes = g.bytes;
    col.byteLength = g.byteCount;
    block->columns.push_back(std::move(col));
  }
  return block;
}

Napi::Value gatheredColumnsToJs(Napi::Env env, const GatheredColumns& gathered) {
  Napi::Array out = Napi::Array::New(env, gathered.columns.size());
  const size_t n = size_t(gathered.rows);
  for (size_t c = 0; c < gathered.columns.size(); ++c) {
    const RowGatherResult& g = gathered.columns[c];
    Napi::Object o = Napi::Object::New(env);
    o.Set("rowSplits", orNull(env, g.rowSplits, napi_int32_array, n + 1));
    Napi::Array arrays = Napi::Array::New(env, g.itemArrays.size());
    Napi::Array partial = Napi::Array::New(env, g.itemArrays.size());
    for (size_t a = 0; a < g.itemArrays.size(); ++a) {
      const int type = gathered.types[c][a];
      const bool any = gathered.anyHas[c][a];
      arrays.Set(uint32_t(a), any ? Napi::Value(typedArrayOverBlock(env, napi_typedarray_type(type), g.itemArrays[a], size_t(g.items)))
                                  : env.Null());
      partial.Set(uint32_t(a), Napi::Boolean::New(env, any && !gathered.allHave[c][a]));
    }
    o.Set("itemArrays", arrays);
    o.Set("partial", partial);
    o.Set("itemOffsets", orNull(env, g.itemOffsets, napi_int32_array, size_t(g.items) + 1));
    o.Set("bytes", orNull(env, g.bytes, napi_uint8_array, size_t(g.byteCount)));
    out.Set(uint32_t(c), o);
  }
  return out;
}

}  // namespace binding
}  // namespace hb
