// The batch op's cut across blocks, natively: ranges of rows of several blocks (views of
// the JS arrays, no copy) into one new block with one copy per array and block, in place
// of a JS loop over the rows of every string and ragged column.
//   concatRows        synchronous: the arrays are read before it returns, so nothing JS
//                     does with them later reaches it.
//   concatRowsAsync   on the "data" queue, off the JS thread: the arrays must not change
//                     until it settles (hb.data passes only blocks no one else holds).
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/row_block.h"

namespace hb {
namespace binding {

namespace {

// An integer in [0, 2^31) for piece `index`'s `key`.
int64_t rowCount(const Napi::Object& piece, const char* key, uint32_t index, const std::string& owner) {
  const std::string argument = owner + ": pieces[" + std::to_string(index) + "]." + key;
  const double value = numberArgument(piece.Get(key), argument.c_str());
  if (!(value >= 0 && value < 2147483648.0) || value != double(int64_t(value))) {
    throw Napi::RangeError::New(piece.Env(), argument + " must be an integer in [0, 2^31), got " + std::to_string(value));
  }
  return int64_t(value);
}

// The pieces read on the JS thread: each block's arrays viewed and typed, and its range.
struct Pieces {
  std::vector<std::shared_ptr<RowBlock>> held;
  std::vector<const RowBlock*> blocks;
  std::vector<int64_t> starts, counts;
  RowBlockLayout layout;
};

// pieces[p] = { columns, start, count }: rows [start, start + count) of a block described
// as lib/data/row_gather.ts does.
std::shared_ptr<Pieces> readPieces(const Napi::Value& value, const std::string& owner) {
  Napi::Env env = value.Env();
  if (!value.IsArray()) throw Napi::TypeError::New(env, owner + ": pieces must be an array");
  Napi::Array list = value.As<Napi::Array>();
  if (list.Length() == 0) throw Napi::Error::New(env, owner + ": no pieces to concatenate");
  auto pieces = std::make_shared<Pieces>();
  for (uint32_t p = 0; p < list.Length(); ++p) {
    const Napi::Value entry = list.Get(p);
    if (!entry.IsObject()) throw Napi::TypeError::New(env, owner + ": pieces[" + std::to_string(p) + "] must be an object");
    Napi::Object piece = entry.As<Napi::Object>();
    pieces->held.push_back(viewRowBlock(piece.Get("columns"), owner + ": pieces[" + std::to_string(p) + "]"));
    pieces->layout.admit(*pieces->held.back(), owner);
    pieces->blocks.push_back(pieces->held.back().get());
    pieces->starts.push_back(rowCount(piece, "start", p, owner));
    pieces->counts.push_back(rowCount(piece, "count", p, owner));
  }
  for (const auto& block : pieces->held) confirmViews(env, *block, owner);
  return pieces;
}

GatheredColumns concatPieces(const Pieces& pieces) {
  return concatBlockRows(pieces.blocks, pieces.layout, pieces.starts.data(), pieces.counts.data());
}

// concatRows(pieces): one entry per column (see gatheredColumnsToJs), the pieces' rows one
// after another.
Napi::Value concatRowsBinding(const Napi::CallbackInfo& info) {
  return gatheredColumnsToJs(info.Env(), concatPieces(*readPieces(info[0], "concatRows")));
}

// concatRowsAsync(pieces): the same, as a promise.
Napi::Value concatRowsAsyncBinding(const Napi::CallbackInfo& info) {
  std::shared_ptr<Pieces> pieces = readPieces(info[0], "concatRowsAsync");
  auto gathered = std::make_shared<GatheredColumns>();
  // The task holds the views until it is destroyed, on the JS thread.
  return scheduleOnQueue(info.Env(), "data", Device::cpu(), makeTask(
      [pieces, gathered] { *gathered = concatPieces(*pieces); },
      [gathered](Napi::Env env) { return gatheredColumnsToJs(env, *gathered); }));
}

}  // namespace

void exportRowGather(Napi::Env env, Napi::Object exports) {
  exports.Set("concatRows", Napi::Function::New(env, guarded<concatRowsBinding>, "concatRows"));
  exports.Set("concatRowsAsync", Napi::Function::New(env, guarded<concatRowsAsyncBinding>, "concatRowsAsync"));
}

}  // namespace binding
}  // namespace hb
