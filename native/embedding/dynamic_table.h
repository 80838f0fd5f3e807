// A dynamic embedding table: rows keyed by any int64 id, made on first use (DeepRec's
// EmbeddingVariable, HugeCTR's hash embedding). Two parts:
//  - an index from id to row, split into stripes by the id's hash, each stripe an
//    open-addressing table with its own lock: a lookup groups its ids by stripe and each
//    of its threads takes whole stripes, and a stripe that fills up grows alone;
//  - a row pool: the values (and each optimizer slot) as [capacity, dim] tensors over
//    address space reserved once and committed by the kernel as rows are first written,
//    so memory follows the live rows, growth copies nothing, and the rows stay one
//    dense block that every row kernel (gather, combine, the fused sparse updates) takes
//    as it takes a fixed table, with the row numbers this index hands out. The pool is in
//    host memory, or on a CUDA device (address space reserved there and backed as rows
//    are made): the index stays on the host either way, so a step on a GPU sends it the
//    step's distinct ids and gets row numbers back, and the rows never cross.
// A new row is initialised from (seed, id) as row `id` of a fixed table made with the
// same initializer would be, so the same id gets the same row in any order, process or
// world size. Admission (a row only once an id was seen N times), eviction by age (global
// steps since last seen) and a row cap (least recently used rows go first) are kept
// exact by a list of rows in order of last use.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "native/core/tensor.h"
#include "native/kernels/random_fill.h"

namespace hb {

namespace cuda {
struct DeviceSpace;
}

struct DynamicTableConfig {
  std::string name;
  int64_t dim = 0;
  Device device;               // where the row pool (values and slots) lives
  FillSpec init;               // rowWidth is set to dim: row of id x = row x of a fixed table
  int64_t capacityRows = 0;    // address space reserved for rows (the most rows at once)
  int64_t admitMinCount = 1;   // occurrences (in training lookups) before an id gets a row
  int64_t evictAfterSteps = 0; // 0: never; else a row unseen for more steps than this goes
  int64_t maxRows = 0;         // 0: no cap; else least recently used rows go beyond it
};

struct DynamicTableStats {
  int64_t rows = 0;          // live rows
  int64_t pending = 0;       // ids counted but not admitted yet
  int64_t capacityRows = 0;
  int64_t admitted = 0;      // rows made (since the table was made or restored)
  int64_t evicted = 0;
  int64_t hits = 0;          // ids found with a row
  int64_t misses = 0;        // ids without a row (new, pending, or unseen in evaluation)
  int64_t rowBytes = 0;      // bytes of one row's values
  int64_t slotRowBytes = 0;  // bytes of one row of every slot together
  int64_t residentBytes = 0; // rows in use (live and free) x (values, slots, metadata)
  int64_t indexBytes = 0;    // the hash index's entries
  int64_t freeRows = 0;      // rows evicted and kept for reuse
};

// Live rows in id order, with what restores them exactly. Host tensors.
struct DynamicTableSnapshot {
  Tensor ids;                // int64 [n]
  Tensor values;             // float32 [n, dim]
  std::vector<Tensor> slots; // float32 [n, dim] or [n]
  Tensor meta;               // int64 [n, 3]: last seen step, count, last updated step
  Tensor pendingIds;         // int64 [m]: counted, not admitted
  Tensor pendingMeta;        // int64 [m, 2]: last seen step, count
  Tensor removedIds;         // int64 [k]: (changes only) rows gone since the last save
};

class DynamicTable {
 public:
  explicit DynamicTable(DynamicTableConfig config);
  ~DynamicTable();
  DynamicTable(const DynamicTable&) = delete;
  DynamicTable& operator=(const DynamicTable&) = delete;

  const DynamicTableConfig& config() const { return config_; }
  // The row pool's values, [capacityRows, dim].
  const Tensor& values() const { return values_; }
  // An optimizer slot beside the rows ([capacityRows, dim], or [capacityRows] per row):
  // each new row's entry starts at `initial`; live rows get it now.
  Tensor addSlot(float initial, bool perRow);

  // Rows of the distinct ids `ids[0..n)`; `occurrences[i]` (nullptr: 1) counts id i's
  // entries in the batch. Training (`train`): counts, admits, makes and initialises rows,
  // marks them seen at `step`, evicts by age and cap first; -1 for an id not admitted.
  // Otherwise: -1 for an id without a row, nothing changes. `who` names the lookup.
  void rowsFor(const int64_t* ids, const int64_t* occurrences, int64_t n, bool train, int64_t step, int64_t* rows,
               const std::string& who);

  DynamicTableStats stats() const;
  // Live rows (all, or with `changesOnly` those updated after the last markSaved, plus
  // the ids removed since), in id order.
  DynamicTableSnapshot snapshot(bool changesOnly);
  // What was saved is the base of the next snapshot of changes.
  void markSaved(int64_t step);
  // Puts rows back: with `replace`, the table is emptied first. Only ids owned by
  // `rank` of `worldSize` (id floormod W) are kept. `slots` in addSlot's order; a missing
  // one keeps its initial value. `removedIds` are dropped before the rows are put (a
  // snapshot never lists an id among both). Everything is checked (shapes, metadata, that
  // the rows fit the cap and the capacity) before the table changes.
  void restore(const DynamicTableSnapshot& saved, bool replace, int64_t worldSize, int64_t rank, const std::string& who);

 private:
  // An entry without a row (row < 0) is pending: counted, not admitted, and counted in
  // pending_ (kept so by every place that inserts, admits or erases one).
  struct Entry {
    int64_t id;
    int64_t row;       // -1: counted, not admitted (kClaimed while a lookup makes its row)
    int64_t count;
    int64_t lastSeen;  // pending ids only (rows keep theirs in the pool's metadata)
  };
  struct Stripe {
    std::mutex mu;
    std::vector<Entry> entries;
    std::vector<uint8_t> used;
    int64_t size = 0;
  };

  Entry* find(Stripe& s, int64_t id);
  Entry* insert(Stripe& s, int64_t id);
  void erase(Stripe& s, int64_t id);
  void grow(Stripe& s);
  Stripe& stripeOf(int64_t id);
  int64_t takeRow(int64_t step, const std::string& who);
  void freeRow(int64_t row);
  void evictRow(int64_t row);
  void lruUnlink(int64_t row);
  void lruPushFront(int64_t row);
  void dropStalePending(int64_t step);
  int64_t rowsSeenAt(int64_t step) const;
  bool tracksUse() const { return config_.evictAfterSteps > 0 || config_.maxRows > 0; }

  DynamicTableConfig config_;
  // [capacityRows, width] rows of the pool, with what keeps their memory.
  struct RowBlock {
    Tensor tensor;
    float initial = 0;  // a slot's value in a new row
    int64_t width = 0;
    std::shared_ptr<cuda::DeviceSpace> space;  // on a device: backed as rows are made
  };
  RowBlock reserveRows(int64_t width);
  // Memory behind rows [0, rows) of every block (host pages are committed as written).
  void backRows(int64_t rows);
  // New rows: values from (seed, id), slots at their initial values.
  void initRows(const int64_t* rows, const int64_t* ids, int64_t n);
  bool onDevice() const { return config_.device.isCuda(); }
  // A restore's rows into the device pool: saved row placed[k].first to row placed[k].second.
  void writePlacedRows(const DynamicTableSnapshot& saved, const std::vector<std::pair<int64_t, int64_t>>& placed);

  std::vector<std::unique_ptr<Stripe>> stripes_;
  Tensor values_;
  RowBlock valueBlock_;
  using Slot = RowBlock;
  std::vector<Slot> slots_;
  std::shared_ptr<void> meta_;  // the reservation the per-row arrays below live in
  // Per row (reserved like the pool): its id, when it was last seen and last updated,
  // its neighbours in the list of rows by last use (most recent at the head).
  int64_t* rowId_ = nullptr;
  int64_t* rowSeen_ = nullptr;
  int64_t* rowUpdated_ = nullptr;
  int64_t* lruPrev_ = nullptr;
  int64_t* lruNext_ = nullptr;
  int64_t lruHead_ = -1, lruTail_ = -1;

  mutable std::mutex mu_;  // one operation on the table at a time (the threads of a lookup share it)
  int64_t nextRow_ = 0;
  std::vector<int64_t> freeRows_;
  // Ids evicted since the last save, for a snapshot of changes; kept only once a save
  // was made (a run that never saves would only accumulate them).
  std::vector<int64_t> removedSinceSave_;
  bool tracksRemovals_ = false;
  int64_t savedStep_ = -1;
  int64_t pendingSweptAt_ = 0;
  std::atomic<int64_t> live_{0}, pending_{0}, admitted_{0}, evicted_{0}, hits_{0}, misses_{0};
};

// Tables are found by id: a plan names one by an int64 tensor holding its id, whose
// buffer keeps the table alive (the registry holds it weakly).
int64_t registerDynamicTable(std::shared_ptr<DynamicTable> table);
std::shared_ptr<DynamicTable> findDynamicTable(int64_t id, const std::string& who);
void releaseDynamicTable(int64_t id);

// The largest number of rows a table of this row size reserves address space for when
// no cap is given.
int64_t defaultDynamicCapacity(int64_t dim);

}  // namespace hb
