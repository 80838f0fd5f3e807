// The input pipeline's shuffle buffer, natively (lib/data/shuffle.ts drives it): each
// block pushed is viewed in JS memory for its push only, checked and copied into native
// memory on the "data" queue, enters the reservoir (native/data/shuffle_reservoir.h), and
// the rows it displaces come back as one gathered block. Nothing runs per row on the JS
// thread, and blocks kept in the buffer are the addon's own memory.
#include <napi.h>

#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "native/binding/arguments.h"
#include "native/binding/async_task.h"
#include "native/binding/exports.h"
#include "native/binding/row_block.h"
#include "native/binding/tagged_handle.h"
#include "native/core/status.h"
#include "native/data/shuffle_reservoir.h"

namespace hb {
namespace binding {

namespace {

struct ShuffleState {
  ShuffleState(int64_t capacity, uint32_t seed, bool compacts) : reservoir(capacity, seed), compacts(compacts) {}
  // Tasks of one buffer run one after another on the "data" queue; the lock keeps that
  // true should a caller not wait for one push before the next.
  std::mutex mutex;
  ShuffleReservoir reservoir;
  std::vector<std::shared_ptr<RowBlock>> slots;  // by reservoir slot; null once freed
  int64_t heldRows = 0;                          // rows of the blocks in `slots`
  RowBlockLayout layout;
  bool compacts;         // compactWhenSpread on (off to measure what it saves, or once it failed)
  int64_t compactions = 0;
};

// The blocks of freed slots go (their rows were read).
void dropFreed(ShuffleState& state) {
  for (int32_t slot : state.reservoir.freed()) {
    HB_CHECK_CODE(size_t(slot) < state.slots.size() && state.slots[size_t(slot)], Internal, "shuffle: slot ", slot, " has no block");
    state.heldRows -= state.slots[size_t(slot)]->rows;
    state.slots[size_t(slot)].reset();
  }
}

// Tags the JS objects that stand for shuffle buffers, so no other object is taken for one.
constexpr napi_type_tag kShuffleBufferTag = {0x6862747353485546ULL, 0x73687566666c6562ULL};

std::shared_ptr<ShuffleState>* stateHolder(const Napi::Value& value, const std::string& argument) {
  return taggedHolder<ShuffleState>(value, kShuffleBufferTag, argument, "a shuffle buffer (shuffleBufferNew's result)");
}

std::shared_ptr<ShuffleState> liveState(const Napi::Value& value, const std::string& argument) {
  std::shared_ptr<ShuffleState> state = *stateHolder(value, argument);
  if (!state) throw Napi::Error::New(value.Env(), argument + " was released");
  return state;
}

// Rows gathered from their blocks. Under the state's lock; changes nothing.
GatheredColumns gatherRowRefs(const ShuffleState& state, const std::vector<RowRef>& leaving) {
  // Blocks renumbered densely in the order the rows first name them.
  std::unordered_map<int32_t, int32_t> dense;
  std::vector<const RowBlock*> blocks;
  std::vector<int32_t> which(leaving.size()), rows(leaving.size());
  for (size_t i = 0; i < leaving.size(); ++i) {
    auto [at, added] = dense.try_emplace(leaving[i].slot, int32_t(blocks.size()));
    if (added) {
      const size_t slot = size_t(leaving[i].slot);
      HB_CHECK_CODE(slot < state.slots.size() && state.slots[slot], Internal, "shuffle: slot ", slot, " has no block");
      blocks.push_back(state.slots[slot].get());
    }
    which[i] = at->second;
    rows[i] = leaving[i].row;
  }
  return gatherBlockRows(blocks, state.layout, which.data(), rows.data(), int64_t(leaving.size()));
}

// The rows that left, gathered; then the blocks whose last row left go.
std::shared_ptr<GatheredColumns> gatherLeaving(ShuffleState& state, const std::vector<RowRef>& leaving) {
  std::shared_ptr<GatheredColumns> out;
  try {
    out = std::make_shared<GatheredColumns>(gatherRowRefs(state, leaving));
  } catch (...) {
    dropFreed(state);  // the rows left all the same: their blocks go (this does not allocate)
    throw;
  }
  dropFreed(state);
  return out;
}

// Whether a block held lacks an item array wider than a byte that another has (ragged
// weights in some blocks only). A compacted block cannot keep that per row, so the
// buffer is not compacted then (a gather over those blocks drops the weights; one over
// blocks that all have them keeps them, compaction or not).
bool widthsPartlyPresent(const ShuffleState& state) {
  for (size_t c = 0; c < state.layout.columns().size(); ++c) {
    const std::vector<int>& types = state.layout.columns()[c].itemTypes;
    for (size_t a = 0; a < types.size(); ++a) {
      if (types[a] < 0 || types[a] == napi_uint8_array) continue;
      for (const auto& block : state.slots) {
        if (block && !block->columns[c].itemArrays[a].data) return true;
      }
    }
  }
  return false;
}

// Once the blocks hold more than twice the buffer's rows (each block keeps a few rows
// long after most of it left: a buffer of 4 blocks' rows otherwise ends up over ~30
// blocks), the buffered rows move into one block of their own. Memory stays within about
// twice the buffer, and gathers read from that much instead of from all those blocks.
void compactWhenSpread(ShuffleState& state, int64_t incomingRows) {
  const int64_t buffered = state.reservoir.buffered();
  if (!state.compacts || buffered < state.reservoir.capacity() || buffered > std::numeric_limits<int32_t>::max()) return;
  if (state.heldRows <= 2 * buffered + incomingRows || widthsPartlyPresent(state)) return;
  // Gathered before anything changes. Compaction only saves memory and time: should it
  // fail (a column of the whole buffer past 2^31 - 1 values or string bytes, or memory),
  // the buffer is as it was and goes on without it.
  std::shared_ptr<RowBlock> block;
  try {
    block = rowBlockOf(gatherRowRefs(state, state.reservoir.bufferedRows()), state.layout);
    state.slots.reserve(state.slots.size() + 1);  // so that storing the block below cannot fail
  } catch (const std::exception&) {
    state.compacts = false;
    return;
  }
  const int32_t slot = state.reservoir.compact();
  dropFreed(state);
  if (state.slots.size() <= size_t(slot)) state.slots.resize(size_t(slot) + 1);
  state.slots[size_t(slot)] = block;
  state.heldRows += block->rows;
  ++state.compactions;
}

Napi::Value resultOrNull(Napi::Env env, const std::shared_ptr<GatheredColumns>& gathered) {
  if (!gathered) return env.Null();
  return gatheredColumnsToJs(env, *gathered);
}

// shuffleBufferNew(bufferSize, seed, compact = true): an empty buffer of bufferSize rows
// whose picks come from RowRandom(seed, 0) (lib/data/synthetic_model.ts), as the JS
// shuffle's did. compact false leaves its rows where they came (bench/shuffle_buffer's
// baseline).
Napi::Value shuffleBufferNewBinding(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const double size = numberArgument(info[0], "shuffleBufferNew: bufferSize");
  if (!(size >= 1 && size <= 9007199254740991.0) || size != double(int64_t(size))) {
    throw Napi::RangeError::New(env, "shuffleBufferNew: bufferSize must be a positive integer, got " + std::to_string(size));
  }
  const double seed = numberArgument(info[1], "shuffleBufferNew: seed");
  if (!(seed >= 0 && seed <= 4294967295.0) || seed != double(int64_t(seed))) {
    throw Napi::RangeError::New(env, "shuffleBufferNew: seed must be an integer in [0, 2^32), got " + std::to_string(seed));
  }
  if (!info[2].IsUndefined() && !info[2].IsBoolean()) throw Napi::TypeError::New(env, "shuffleBufferNew: compact must be a boolean");
  const bool compacts = info[2].IsUndefined() || info[2].As<Napi::Boolean>().Value();
  return taggedHandle(env, std::make_shared<ShuffleState>(int64_t(size), uint32_t(seed), compacts), kShuffleBufferTag, "shuffleBufferNew");
}

// shuffleBufferPush(buffer, columns): a promise of the rows the block displaced (one entry
// per column, as concatRows gives), or null while the buffer is still filling. The
// arrays are read on the "data" queue: they must not change until the promise settles.
Napi::Value shuffleBufferPushBinding(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<ShuffleState> state = liveState(info[0], "shuffleBufferPush: buffer");
  std::shared_ptr<RowBlock> views = viewRowBlock(info[1], "shuffleBufferPush");
  confirmViews(env, *views, "shuffleBufferPush");
  if (views->columns.empty() || views->rows == 0) throw Napi::Error::New(env, "shuffleBufferPush: a block needs columns and rows");
  if (views->rows > std::numeric_limits<int32_t>::max()) throw Napi::RangeError::New(env, "shuffleBufferPush: a block of 2^31 rows or more");
  auto gathered = std::make_shared<std::shared_ptr<GatheredColumns>>();
  return scheduleOnQueue(env, "data", Device::cpu(), makeTask(
      // `views` is held (and let go) by the task, on the JS thread; the buffer keeps a copy.
      [state, views, gathered] {
        // The copy is what is checked and kept: nothing read later comes from JS memory.
        std::shared_ptr<RowBlock> block = copyRowBlock(*views);
        checkRowBlock(*block, "shuffleBufferPush");
        std::lock_guard<std::mutex> lock(state->mutex);
        state->layout.admit(*block, "shuffleBufferPush");
        std::vector<RowRef> leaving;
        const int64_t rows = block->rows;
        state->slots.reserve(state->slots.size() + 1);  // so that storing the block after add() cannot fail
        const int32_t slot = state->reservoir.add(rows, &leaving);
        if (state->slots.size() <= size_t(slot)) state->slots.resize(size_t(slot) + 1);
        state->slots[size_t(slot)] = std::move(block);
        state->heldRows += rows;
        if (!leaving.empty()) *gathered = gatherLeaving(*state, leaving);
        compactWhenSpread(*state, rows);
      },
      [gathered](Napi::Env env) { return resultOrNull(env, *gathered); }));
}

// shuffleBufferDrain(buffer, maxRows): once the input has ended, a promise of up to
// maxRows of the rows left in a random order, or null when none are left.
Napi::Value shuffleBufferDrainBinding(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<ShuffleState> state = liveState(info[0], "shuffleBufferDrain: buffer");
  const double maxRows = numberArgument(info[1], "shuffleBufferDrain: maxRows");
  if (!(maxRows >= 1 && maxRows < 2147483648.0) || maxRows != double(int64_t(maxRows))) {
    throw Napi::RangeError::New(env, "shuffleBufferDrain: maxRows must be an integer in [1, 2^31), got " + std::to_string(maxRows));
  }
  auto gathered = std::make_shared<std::shared_ptr<GatheredColumns>>();
  return scheduleOnQueue(env, "data", Device::cpu(), makeTask(
      [state, gathered, rows = int64_t(maxRows)] {
        std::lock_guard<std::mutex> lock(state->mutex);
        std::vector<RowRef> leaving;
        state->reservoir.drain(rows, &leaving);
        if (!leaving.empty()) *gathered = gatherLeaving(*state, leaving);
      },
      [gathered](Napi::Env env) { return resultOrNull(env, *gathered); }));
}

// shuffleBufferStats(buffer): { buffered, heldRows, compactions }: the rows buffered, the
// rows of the blocks holding them, and how often they were compacted (for tests and
// bench/shuffle_buffer.bench.js).
Napi::Value shuffleBufferStatsBinding(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<ShuffleState> state = liveState(info[0], "shuffleBufferStats: buffer");
  std::lock_guard<std::mutex> lock(state->mutex);
  Napi::Object stats = Napi::Object::New(env);
  stats.Set("buffered", Napi::Number::New(env, double(state->reservoir.buffered())));
  stats.Set("heldRows", Napi::Number::New(env, double(state->heldRows)));
  stats.Set("compactions", Napi::Number::New(env, double(state->compactions)));
  return stats;
}

// shuffleBufferRelease(buffer): its blocks go now (a push or drain in flight keeps what it
// reads until it settles), not when JS collects the handle.
Napi::Value shuffleBufferReleaseBinding(const Napi::CallbackInfo& info) {
  stateHolder(info[0], "shuffleBufferRelease: buffer")->reset();
  return info.Env().Undefined();
}

}  // namespace

void exportShuffleBuffer(Napi::Env env, Napi::Object exports) {
  exports.Set("shuffleBufferNew", Napi::Function::New(env, guarded<shuffleBufferNewBinding>, "shuffleBufferNew"));
  exports.Set("shuffleBufferPush", Napi::Function::New(env, guarded<shuffleBufferPushBinding>, "shuffleBufferPush"));
  exports.Set("shuffleBufferDrain", Napi::Function::New(env, guarded<shuffleBufferDrainBinding>, "shuffleBufferDrain"));
  exports.Set("shuffleBufferStats", Napi::Function::New(env, guarded<shuffleBufferStatsBinding>, "shuffleBufferStats"));
  exports.Set("shuffleBufferRelease", Napi::Function::New(env, guarded<shuffleBufferReleaseBinding>, "shuffleBufferRelease"));
}

}  // namespace binding
}  // namespace hb
