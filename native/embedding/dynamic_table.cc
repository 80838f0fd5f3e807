#include "native/embedding/dynamic_table.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <unordered_map>

#include "cuda/cuda_backend.h"
#include "native/core/status.h"
#include "native/core/thread_pool.h"

namespace hb {

namespace {

constexpr int kStripeBits = 6;
constexpr int kStripes = 1 << kStripeBits;
constexpr size_t kFirstStripeSlots = 256;
// Bytes each row keeps beside its values and slots: id, last seen, last updated, and
// its two neighbours in the list by last use.
constexpr int64_t kRowMetaBytes = 5 * 8;
// An entry whose row a lookup is making: later copies of its id in the same call (a
// sharded lookup's ids come from every rank, repeats included) wait for that row.
constexpr int64_t kClaimed = -4;

int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? (b > 0 ? INT64_MAX : INT64_MIN) : sum;
}

uint64_t hashOf(int64_t id) { return mixBits64(uint64_t(id)); }

// Address space for `bytes`, committed by the kernel page by page as it is written;
// nothing counted against memory until then.
std::shared_ptr<void> reserve(size_t bytes, const std::string& who) {
  if (bytes == 0) bytes = 1;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  HB_CHECK_CODE(p != MAP_FAILED, OutOfMemory, who, ": cannot reserve ", bytes,
                " bytes of address space for its rows (is vm.overcommit_memory 2? set embMaxRows to reserve less)");
  return std::shared_ptr<void>(p, [bytes](void* q) { munmap(q, bytes); });
}

int64_t floorMod(int64_t x, int64_t w) {
  const int64_t m = x % w;
  return m < 0 ? m + w : m;
}

}  // namespace

int64_t defaultDynamicCapacity(int64_t dim) {
  // 16 GiB of values' address space, at most 2^28 rows: reserved, not used, but a
  // process holds many tables and address space is 128 TiB.
  const int64_t budget = int64_t(16) << 30;
  return std::max<int64_t>(1, std::min<int64_t>(int64_t(1) << 28, budget / (std::max<int64_t>(dim, 1) * 4)));
}

DynamicTable::DynamicTable(DynamicTableConfig config) : config_(std::move(config)) {
  const std::string& who = config_.name;
  HB_CHECK(config_.dim >= 1, who, ": dim must be >= 1, got ", config_.dim);
  HB_CHECK(config_.capacityRows >= 1, who, ": capacity must be >= 1 rows, got ", config_.capacityRows);
  HB_CHECK(config_.admitMinCount >= 1, who, ": embAdmitMinCount must be >= 1, got ", config_.admitMinCount);
  HB_CHECK(config_.evictAfterSteps >= 0 && config_.maxRows >= 0, who, ": embEvictAfterSteps and embMaxRows must be >= 0");
  // A cap is the capacity too (above the default, it is how a table is given more room).
  if (config_.maxRows > 0) config_.capacityRows = config_.maxRows;
  config_.init.rowWidth = 0;  // element (id * dim + j): row id of a fixed table
  // Address space is 2^47 bytes; one table may reserve at most 2^45 for its values (and as
  // much per slot), its per-row bookkeeping included.
  const int64_t limit = int64_t(1) << 45;
  HB_CHECK_CODE(config_.capacityRows <= limit / (config_.dim * 4) && config_.capacityRows <= limit / kRowMetaBytes, OutOfRange,
                who, ": ", config_.capacityRows, " rows of dimension ", config_.dim,
                " exceed what one table can reserve (2^45 bytes); lower embMaxRows");
  for (int i = 0; i < kStripes; ++i) {
    auto s = std::make_unique<Stripe>();
    s->entries.resize(kFirstStripeSlots);
    s->used.assign(kFirstStripeSlots, 0);
    stripes_.push_back(std::move(s));
  }
  const size_t rows = size_t(config_.capacityRows);
  valueBlock_ = reserveRows(config_.dim);
  values_ = valueBlock_.tensor;
  meta_ = reserve(rows * size_t(kRowMetaBytes), who);
  int64_t* m = static_cast<int64_t*>(meta_.get());
  rowId_ = m;
  rowSeen_ = m + rows;
  rowUpdated_ = m + 2 * rows;
  lruPrev_ = m + 3 * rows;
  lruNext_ = m + 4 * rows;
}

DynamicTable::~DynamicTable() = default;

DynamicTable::RowBlock DynamicTable::reserveRows(int64_t width) {
  const size_t bytes = size_t(config_.capacityRows) * size_t(width) * 4;
  const std::vector<int64_t> shape{config_.capacityRows, width};
  RowBlock block;
  block.width = width;
  if (onDevice()) {
    const std::shared_ptr<cuda::DeviceSpace> space = cuda::reserveDeviceSpace(config_.device.index, bytes);
    block.space = space;
    block.tensor = Tensor{Buffer::wrap(cuda::deviceSpaceBase(*space), bytes, config_.device, [space] {}), DType::Float32, shape};
    if (nextRow_ > 0) cuda::backDeviceSpace(*space, size_t(nextRow_) * size_t(width) * 4);
  } else {
    auto pages = reserve(bytes, config_.name);
    block.tensor = Tensor{Buffer::wrapHost(pages.get(), bytes, [pages] {}), DType::Float32, shape};
  }
  return block;
}

void DynamicTable::backRows(int64_t rows) {
  if (!onDevice()) return;
  cuda::backDeviceSpace(*valueBlock_.space, size_t(rows) * size_t(config_.dim) * 4);
  for (const Slot& slot : slots_) cuda::backDeviceSpace(*slot.space, size_t(rows) * size_t(slot.width) * 4);
}

Tensor DynamicTable::addSlot(float initial, bool perRow) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t width = perRow ? 1 : config_.dim;
  Slot slot = reserveRows(width);
  slot.initial = initial;
  if (perRow) slot.tensor.shape = {config_.capacityRows};
  // Rows made before the slot (and free ones, which initRows refills) start at `initial`.
  if (onDevice()) {
    FillSpec constant;
    constant.value = initial;
    cuda::fill(config_.device.index, slot.tensor.data<float>(), nextRow_ * width, constant);
  } else {
    float* p = slot.tensor.data<float>();
    parallelFor(nextRow_ * width, 1 << 16, [&](int64_t i0, int64_t i1) { std::fill(p + i0, p + i1, initial); });
  }
  slots_.push_back(slot);
  return slot.tensor;
}

DynamicTable::Stripe& DynamicTable::stripeOf(int64_t id) { return *stripes_[hashOf(id) >> (64 - kStripeBits)]; }

DynamicTable::Entry* DynamicTable::find(Stripe& s, int64_t id) {
  const size_t mask = s.entries.size() - 1;
  for (size_t i = hashOf(id) & mask; s.used[i]; i = (i + 1) & mask) {
    if (s.entries[i].id == id) return &s.entries[i];
  }
  return nullptr;
}

void DynamicTable::grow(Stripe& s) {
  std::vector<Entry> old = std::move(s.entries);
  std::vector<uint8_t> oldUsed = std::move(s.used);
  s.entries.assign(old.size() * 2, Entry{});
  s.used.assign(old.size() * 2, 0);
  const size_t mask = s.entries.size() - 1;
  for (size_t k = 0; k < old.size(); ++k) {
    if (!oldUsed[k]) continue;
    size_t i = hashOf(old[k].id) & mask;
    while (s.used[i]) i = (i + 1) & mask;
    s.entries[i] = old[k];
    s.used[i] = 1;
  }
}

DynamicTable::Entry* DynamicTable::insert(Stripe& s, int64_t id) {
  if (size_t(s.size + 1) * 10 > s.entries.size() * 7) grow(s);
  const size_t mask = s.entries.size() - 1;
  size_t i = hashOf(id) & mask;
  while (s.used[i]) i = (i + 1) & mask;
  s.used[i] = 1;
  s.entries[i] = Entry{id, -1, 0, -1};
  ++s.size;
  return &s.entries[i];
}

void DynamicTable::erase(Stripe& s, int64_t id) {
  const size_t mask = s.entries.size() - 1;
  size_t i = hashOf(id) & mask;
  while (s.used[i] && s.entries[i].id != id) i = (i + 1) & mask;
  if (!s.used[i]) return;
  // Backward shift: entries after the hole that may move into it do, so every probe
  // sequence stays unbroken without tombstones.
  for (size_t j = (i + 1) & mask; s.used[j]; j = (j + 1) & mask) {
    const size_t home = hashOf(s.entries[j].id) & mask;
    const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    s.entries[i] = s.entries[j];
    i = j;
  }
  s.used[i] = 0;
  --s.size;
}

void DynamicTable::lruUnlink(int64_t row) {
  const int64_t p = lruPrev_[row], n = lruNext_[row];
  if (p >= 0) lruNext_[p] = n; else lruHead_ = n;
  if (n >= 0) lruPrev_[n] = p; else lruTail_ = p;
  lruPrev_[row] = lruNext_[row] = -1;
}

void DynamicTable::lruPushFront(int64_t row) {
  lruPrev_[row] = -1;
  lruNext_[row] = lruHead_;
  if (lruHead_ >= 0) lruPrev_[lruHead_] = row;
  lruHead_ = row;
  if (lruTail_ < 0) lruTail_ = row;
}

void DynamicTable::evictRow(int64_t row) {
  const int64_t id = rowId_[row];
  Stripe& s = stripeOf(id);
  erase(s, id);
  if (tracksUse()) lruUnlink(row);
  freeRows_.push_back(row);
  if (tracksRemovals_) removedSinceSave_.push_back(id);
  --live_;
}

int64_t DynamicTable::rowsSeenAt(int64_t step) const {
  // Rows seen in a step were each moved to the head of the list when seen: a prefix.
  int64_t n = 0;
  for (int64_t r = lruHead_; r >= 0 && rowSeen_[r] == step; r = lruNext_[r]) ++n;
  return n;
}

void DynamicTable::dropStalePending(int64_t step) {
  // Ids counted but never admitted would otherwise stay in the index for good (a long
  // tail of one-off ids): those unseen for more than evictAfterSteps steps go, swept
  // once per evictAfterSteps steps so the sweep's cost is spread over them.
  if (step - pendingSweptAt_ < config_.evictAfterSteps) return;
  pendingSweptAt_ = step;
  std::vector<int64_t> stale;
  for (const auto& s : stripes_) {
    stale.clear();
    for (size_t i = 0; i < s->entries.size(); ++i) {
      const Entry& e = s->entries[i];
      if (s->used[i] && e.row < 0 && step - e.lastSeen > config_.evictAfterSteps) stale.push_back(e.id);
    }
    for (int64_t id : stale) erase(*s, id);
    pending_ -= int64_t(stale.size());
    // Forgotten counts are removals too: a restore of base + changes must not bring them back.
    if (tracksRemovals_) removedSinceSave_.insert(removedSinceSave_.end(), stale.begin(), stale.end());
  }
}

int64_t DynamicTable::takeRow(int64_t step, const std::string& who) {
  if (config_.maxRows > 0 && live_.load() >= config_.maxRows) {
    const int64_t victim = lruTail_;
    HB_CHECK_CODE(victim >= 0 && rowSeen_[victim] != step, OutOfRange, who, ": embMaxRows (", config_.maxRows,
                  ") is smaller than the distinct ids this step looks up in table '", config_.name,
                  "'; raise embMaxRows");
    evictRow(victim);
    ++evicted_;
  }
  if (!freeRows_.empty()) {
    const int64_t row = freeRows_.back();
    freeRows_.pop_back();
    return row;
  }
  HB_CHECK_CODE(nextRow_ < config_.capacityRows, OutOfMemory, who, ": table '", config_.name, "' is full (",
                config_.capacityRows, " rows); set embMaxRows (the cap, and the room reserved) or embEvictAfterSteps");
  return nextRow_++;
}

void DynamicTable::initRows(const int64_t* rows, const int64_t* ids, int64_t n) {
  const int64_t dim = config_.dim;
  if (onDevice()) {
    // The same values as below, by the same fillValue, in one kernel per block.
    std::vector<cuda::RowFill> blocks{{values_.data<float>(), dim, config_.init, true}};
    for (const Slot& slot : slots_) {
      FillSpec constant;
      constant.value = slot.initial;
      blocks.push_back({slot.tensor.data<float>(), slot.width, constant, false});
    }
    cuda::initRows(config_.device.index, blocks, rows, ids, n);
    return;
  }
  fillRowsCpu(values_.data<float>(), dim, rows, ids, n, config_.init);
  for (const Slot& slot : slots_) {
    FillSpec constant;
    constant.value = slot.initial;
    fillRowsCpu(slot.tensor.data<float>(), slot.width, rows, nullptr, n, constant);
  }
}

void DynamicTable::rowsFor(const int64_t* ids, const int64_t* occurrences, int64_t n, bool train, int64_t step,
                           int64_t* rows, const std::string& who) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!train) {
    std::atomic<int64_t> hits{0};
    parallelFor(n, 4096, [&](int64_t i0, int64_t i1) {
      int64_t found = 0;
      // Reads only, under the table's lock: no stripe changes while they run.
      for (int64_t i = i0; i < i1; ++i) {
        const Entry* e = find(stripeOf(ids[i]), ids[i]);
        rows[i] = e ? e->row : -1;
        found += rows[i] >= 0;
      }
      hits += found;
    });
    hits_ += hits.load();
    misses_ += n - hits.load();
    return;
  }
  // Age first: what went unseen for more than evictAfterSteps steps is gone before this
  // step looks anything up.
  if (config_.evictAfterSteps > 0) {
    while (lruTail_ >= 0 && step - rowSeen_[lruTail_] > config_.evictAfterSteps) {
      evictRow(lruTail_);
      ++evicted_;
    }
    dropStalePending(step);
  }
  // Find, count, and claim what needs a row: the first copy of an admitted id without
  // one claims its entry (kClaimed, marked in `claimed`); later copies in this call (a
  // sharded lookup's ids come from every rank) are listed in `repeats` and read its row.
  // Ids are grouped by stripe (a counting sort on the hash's top bits): each task holds
  // one stripe's lock for all of that stripe's ids, so no lock is taken per id and no two
  // threads meet on a stripe; a stripe's ids go in id order, so which copy comes first
  // does not depend on the threads.
  std::vector<uint8_t> stripeOfId(static_cast<size_t>(n));
  parallelFor(n, 8192, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) stripeOfId[size_t(i)] = uint8_t(hashOf(ids[i]) >> (64 - kStripeBits));
  });
  std::vector<int64_t> stripeStart(kStripes + 1, 0);
  for (int64_t i = 0; i < n; ++i) ++stripeStart[stripeOfId[size_t(i)] + 1];
  for (int k = 0; k < kStripes; ++k) stripeStart[k + 1] += stripeStart[k];
  std::vector<int64_t> order(static_cast<size_t>(n));
  {
    std::vector<int64_t> next(stripeStart.begin(), stripeStart.end() - 1);
    for (int64_t i = 0; i < n; ++i) order[size_t(next[stripeOfId[size_t(i)]]++)] = i;
  }
  std::atomic<int64_t> hits{0}, inserted{0};
  std::mutex listsMu;
  std::vector<int64_t> repeats;
  std::vector<uint8_t> claimed(static_cast<size_t>(n), 0);  // ids whose entry this call claimed
  parallelFor(kStripes, 1, [&](int64_t first, int64_t last) {
    int64_t found = 0, fresh = 0;
    std::vector<int64_t> repeatsHere;
    for (int64_t stripe = first; stripe < last; ++stripe) {
      Stripe& s = *stripes_[size_t(stripe)];
      std::lock_guard<std::mutex> stripeLock(s.mu);
      const int64_t end = stripeStart[size_t(stripe) + 1];
      for (int64_t k = stripeStart[size_t(stripe)]; k < end; ++k) {
        if (k + 8 < end) {
          // The probe's first slot of an id a few ahead: its cache miss overlaps this one's.
          const size_t ahead = hashOf(ids[order[size_t(k + 8)]]) & (s.entries.size() - 1);
          __builtin_prefetch(&s.entries[ahead]);
          __builtin_prefetch(&s.used[ahead]);
        }
        const int64_t i = order[size_t(k)];
        const int64_t id = ids[i];
        Entry* e = find(s, id);
        if (e == nullptr) {
          e = insert(s, id);
          ++fresh;
        }
        // Saturating: a count restored from a checkpoint may sit at the top already.
        e->count = saturatingAdd(e->count, occurrences ? occurrences[i] : 1);
        if (e->row >= 0) {
          rows[i] = e->row;
          rowSeen_[e->row] = step;
          rowUpdated_[e->row] = step;
          ++found;
          continue;
        }
        e->lastSeen = step;
        rows[i] = -1;
        if (e->row == kClaimed) {
          repeatsHere.push_back(i);
        } else if (e->count >= config_.admitMinCount) {
          e->row = kClaimed;
          claimed[size_t(i)] = 1;
        }
      }
    }
    hits += found;
    inserted += fresh;
    if (repeatsHere.empty()) return;
    std::lock_guard<std::mutex> lock(listsMu);
    repeats.insert(repeats.end(), repeatsHere.begin(), repeatsHere.end());
  });
  // In id order, so rows are handed out in order of first appearance.
  std::vector<int64_t> made;
  for (int64_t i = 0; i < n; ++i) {
    if (claimed[size_t(i)]) made.push_back(i);
  }
  hits_ += hits.load();
  misses_ += n - hits.load();
  pending_ += inserted.load();
  if (tracksUse()) {
    for (int64_t i = 0; i < n; ++i) {
      if (rows[i] >= 0) {
        lruUnlink(rows[i]);
        lruPushFront(rows[i]);
      }
    }
  }
  // Room for them, checked before any row changes hands: a lookup that fails leaves
  // every row as it was (its ids stay pending).
  const int64_t needed = int64_t(made.size());
  // With a cap (which is also the capacity) every row not seen this step can be evicted;
  // without one, only free and untouched rows are there.
  const int64_t stepRows = config_.maxRows > 0 ? rowsSeenAt(step) + needed : 0;
  const bool overCap = config_.maxRows > 0 && stepRows > config_.maxRows;
  const bool full = config_.maxRows == 0 && needed > int64_t(freeRows_.size()) + config_.capacityRows - nextRow_;
  const auto unclaim = [&] {
    for (int64_t i : made) find(stripeOf(ids[i]), ids[i])->row = -1;
  };
  if (overCap || full) {
    unclaim();
    if (overCap) {
      failWith(ErrorCode::OutOfRange, who, ": embMaxRows (", config_.maxRows, ") is smaller than the distinct ids this step looks up in table '",
               config_.name, "' (", stepRows, "); raise embMaxRows");
    }
    failWith(ErrorCode::OutOfMemory, who, ": table '", config_.name, "' is full (", config_.capacityRows,
             " rows); set embMaxRows (the cap, and the room reserved) or embEvictAfterSteps");
  }
  // Device memory behind the rows they may take (each takes a free row or the next one).
  try {
    backRows(std::min(config_.capacityRows, nextRow_ + needed));
  } catch (...) {
    unclaim();
    throw;
  }
  // Rows for the admitted ids, one at a time (a cap evicts as it goes: entries move, so
  // they are found again below), then given to their entries on every thread, then
  // their initial values.
  std::vector<int64_t> madeRows(made.size()), madeIds(made.size());
  for (size_t k = 0; k < made.size(); ++k) {
    const int64_t row = takeRow(step, who);
    ++live_;  // before the next takeRow, which evicts by it under a cap
    rowSeen_[row] = step;  // never the next victim of this step
    if (tracksUse()) lruPushFront(row);
    madeRows[k] = row;
    madeIds[k] = ids[made[k]];
  }
  pending_ -= needed;
  admitted_ += needed;
  parallelFor(needed, 1024, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t i = made[size_t(k)], row = madeRows[size_t(k)];
      Stripe& s = stripeOf(ids[i]);
      {
        std::lock_guard<std::mutex> stripeLock(s.mu);
        find(s, ids[i])->row = row;
      }
      rowId_[row] = ids[i];
      rowUpdated_[row] = step;
      rows[i] = row;
    }
  });
  initRows(madeRows.data(), madeIds.data(), needed);
  // Repeats of a made id read its new row.
  for (int64_t i : repeats) rows[i] = find(stripeOf(ids[i]), ids[i])->row;
}

DynamicTableStats DynamicTable::stats() const {
  // Under the table's lock: a step changes the free list and the index as it runs.
  std::lock_guard<std::mutex> lock(mu_);
  DynamicTableStats st;
  st.rows = live_.load();
  st.pending = pending_.load();
  st.capacityRows = config_.capacityRows;
  st.admitted = admitted_.load();
  st.evicted = evicted_.load();
  st.hits = hits_.load();
  st.misses = misses_.load();
  st.rowBytes = config_.dim * 4;
  for (const Slot& s : slots_) st.slotRowBytes += s.width * 4;
  const int64_t touched = st.rows + int64_t(freeRows_.size());
  st.freeRows = int64_t(freeRows_.size());
  st.residentBytes = touched * (st.rowBytes + st.slotRowBytes + kRowMetaBytes);
  int64_t slots = 0;
  for (const auto& s : stripes_) slots += int64_t(s->entries.size());
  st.indexBytes = slots * int64_t(sizeof(Entry) + 1);
  return st;
}

DynamicTableSnapshot DynamicTable::snapshot(bool changesOnly) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<int64_t, int64_t>> live;  // (id, row)
  std::vector<Entry> waiting;
  for (const auto& s : stripes_) {
    for (size_t i = 0; i < s->entries.size(); ++i) {
      if (!s->used[i]) continue;
      const Entry& e = s->entries[i];
      if (e.row >= 0) {
        if (!changesOnly || rowUpdated_[e.row] >= savedStep_) live.emplace_back(e.id, e.row);
      } else if (!changesOnly || e.lastSeen >= savedStep_) {
        waiting.push_back(e);
      }
    }
  }
  std::sort(live.begin(), live.end());
  std::sort(waiting.begin(), waiting.end(), [](const Entry& a, const Entry& b) { return a.id < b.id; });
  const int64_t n = int64_t(live.size()), m = int64_t(waiting.size()), dim = config_.dim;
  auto host = [](DType dtype, std::vector<int64_t> shape) {
    Tensor t{nullptr, dtype, std::move(shape)};
    t.buffer = Buffer::allocate(Device::cpu(), std::max<size_t>(t.bytes(), 1));
    return t;
  };
  DynamicTableSnapshot out;
  out.ids = host(DType::Int64, {n});
  out.values = host(DType::Float32, {n, dim});
  out.meta = host(DType::Int64, {n, 3});
  for (const Slot& s : slots_) out.slots.push_back(host(DType::Float32, s.width == 1 ? std::vector<int64_t>{n} : std::vector<int64_t>{n, dim}));
  if (onDevice()) {
    std::vector<int64_t> rows(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) rows[size_t(i)] = live[size_t(i)].second;
    const int device = config_.device.index;
    cuda::readRows(device, values_.data<float>(), dim, rows.data(), n, out.values.data<float>());
    for (size_t k = 0; k < slots_.size(); ++k) {
      cuda::readRows(device, slots_[k].tensor.data<float>(), slots_[k].width, rows.data(), n, out.slots[k].data<float>());
    }
  }
  parallelFor(n, 1024, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t row = live[size_t(i)].second;
      out.ids.data<int64_t>()[i] = live[size_t(i)].first;
      if (!onDevice()) {
        std::memcpy(out.values.data<float>() + i * dim, values_.data<float>() + row * dim, size_t(dim) * 4);
        for (size_t k = 0; k < slots_.size(); ++k) {
          const int64_t w = slots_[k].width;
          std::memcpy(out.slots[k].data<float>() + i * w, slots_[k].tensor.data<float>() + row * w, size_t(w) * 4);
        }
      }
      int64_t* meta = out.meta.data<int64_t>() + 3 * i;
      meta[0] = rowSeen_[row];
      meta[1] = find(stripeOf(live[size_t(i)].first), live[size_t(i)].first)->count;
      meta[2] = rowUpdated_[row];
    }
  });
  out.pendingIds = host(DType::Int64, {m});
  out.pendingMeta = host(DType::Int64, {m, 2});
  for (int64_t i = 0; i < m; ++i) {
    out.pendingIds.data<int64_t>()[i] = waiting[size_t(i)].id;
    out.pendingMeta.data<int64_t>()[2 * i] = waiting[size_t(i)].lastSeen;
    out.pendingMeta.data<int64_t>()[2 * i + 1] = waiting[size_t(i)].count;
  }
  std::vector<int64_t> removed;
  if (changesOnly) {
    // An id evicted and made again since is among the rows, not the removed.
    for (int64_t id : removedSinceSave_) {
      const Entry* e = find(stripeOf(id), id);
      if (!e || e->row < 0) removed.push_back(id);
    }
    std::sort(removed.begin(), removed.end());
    removed.erase(std::unique(removed.begin(), removed.end()), removed.end());
  }
  out.removedIds = host(DType::Int64, {int64_t(removed.size())});
  std::copy(removed.begin(), removed.end(), out.removedIds.data<int64_t>());
  return out;
}

void DynamicTable::markSaved(int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  savedStep_ = step;
  removedSinceSave_.clear();
  tracksRemovals_ = true;
}

void DynamicTable::restore(const DynamicTableSnapshot& saved, bool replace, int64_t worldSize, int64_t rank,
                           const std::string& who) {
  const int64_t dim = config_.dim;
  const int64_t n = saved.ids.size();
  auto expect = [&](const Tensor& t, DType dtype, std::vector<int64_t> shape, const char* what) {
    HB_CHECK_CODE(t.buffer && t.dtype == dtype && t.shape == shape, Shape, who, ": ", what, " must be ", dtypeName(dtype),
                  " ", Tensor{nullptr, dtype, shape}.shapeString(), ", got ", t.buffer ? t.shapeString() : "none");
  };
  expect(saved.ids, DType::Int64, {n}, "ids");
  expect(saved.values, DType::Float32, {n, dim}, "values");
  expect(saved.meta, DType::Int64, {n, 3}, "meta");
  HB_CHECK(saved.slots.size() <= slots_.size(), who, ": ", saved.slots.size(), " slots given, the table has ", slots_.size());
  for (size_t k = 0; k < saved.slots.size(); ++k) {
    if (!saved.slots[k].buffer) continue;
    expect(saved.slots[k], DType::Float32, slots_[k].width == 1 ? std::vector<int64_t>{n} : std::vector<int64_t>{n, dim}, "a slot");
  }
  const int64_t m = saved.pendingIds.buffer ? saved.pendingIds.size() : 0;
  if (saved.pendingIds.buffer) expect(saved.pendingIds, DType::Int64, {m}, "pendingIds");
  if (m > 0) expect(saved.pendingMeta, DType::Int64, {m, 2}, "pendingMeta");
  if (saved.removedIds.buffer) expect(saved.removedIds, DType::Int64, {saved.removedIds.size()}, "removedIds");
  HB_CHECK(worldSize >= 1 && rank >= 0 && rank < worldSize, who, ": bad shard ", rank, " of ", worldSize);
  const int64_t* ids = saved.ids.data<int64_t>();
  const int64_t* meta = saved.meta.data<int64_t>();
  // Steps are >= -1 (-1: never) and below 2^62, so ages never overflow.
  auto stepOk = [](int64_t v) { return v >= -1 && v < (int64_t(1) << 62); };
  for (int64_t i = 0; i < n; ++i) {
    HB_CHECK_CODE(meta[3 * i + 1] >= 0, Corrupt, who, ": row ", i, " (id ", ids[i], ") has a negative count");
    HB_CHECK_CODE(stepOk(meta[3 * i]) && stepOk(meta[3 * i + 2]), Corrupt, who, ": row ", i, " (id ", ids[i],
                  ") has last-seen / last-updated steps out of range (", meta[3 * i], ", ", meta[3 * i + 2], ")");
  }
  for (int64_t i = 0; i < m; ++i) {
    const int64_t* pm = saved.pendingMeta.data<int64_t>() + 2 * i;
    HB_CHECK_CODE(stepOk(pm[0]) && pm[1] >= 0, Corrupt, who, ": pending id ", saved.pendingIds.data<int64_t>()[i],
                  " has a last-seen step or count out of range (", pm[0], ", ", pm[1], ")");
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Whether the rows fit, before anything changes: the rows this rank keeps, and (merging)
  // the live rows they join. Repeated ids count twice here, which only errs on the safe side.
  int64_t rowsAfter = replace ? 0 : live_.load();
  if (!replace && saved.removedIds.buffer) {
    // A delta's removed ids go first: the rows they hold make room for its rows.
    std::vector<int64_t> removed(saved.removedIds.data<int64_t>(), saved.removedIds.data<int64_t>() + saved.removedIds.size());
    std::sort(removed.begin(), removed.end());
    removed.erase(std::unique(removed.begin(), removed.end()), removed.end());
    for (int64_t id : removed) {
      const Entry* e = find(stripeOf(id), id);
      rowsAfter -= e != nullptr && e->row >= 0;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (floorMod(ids[i], worldSize) != rank) continue;
    if (replace) {
      ++rowsAfter;
      continue;
    }
    const Entry* e = find(stripeOf(ids[i]), ids[i]);
    rowsAfter += e == nullptr || e->row < 0;
  }
  HB_CHECK_CODE(config_.maxRows == 0 || rowsAfter <= config_.maxRows, OutOfRange, who, ": the checkpoint holds ", rowsAfter,
                " rows for this rank, more than embMaxRows (", config_.maxRows, "); raise embMaxRows");
  HB_CHECK_CODE(rowsAfter <= config_.capacityRows, OutOfMemory, who, ": the checkpoint's ", rowsAfter,
                " rows for this rank do not fit the table's capacity (", config_.capacityRows, " rows)");
  // Device memory behind every row the restore may take, before anything changes.
  int64_t ranksRows = 0;
  for (int64_t i = 0; i < n; ++i) ranksRows += floorMod(ids[i], worldSize) == rank;
  backRows(std::min(config_.capacityRows, nextRow_ + ranksRows));
  if (replace) {
    for (auto& s : stripes_) {
      s->entries.assign(kFirstStripeSlots, Entry{});
      s->used.assign(kFirstStripeSlots, 0);
      s->size = 0;
    }
    freeRows_.clear();
    for (int64_t r = 0; r < nextRow_; ++r) freeRows_.push_back(nextRow_ - 1 - r);
    lruHead_ = lruTail_ = -1;
    live_ = 0;
    pending_ = 0;
    admitted_ = evicted_ = hits_ = misses_ = 0;
  }
  if (saved.removedIds.buffer) {
    for (int64_t k = 0; k < saved.removedIds.size(); ++k) {
      const int64_t id = saved.removedIds.data<int64_t>()[k];
      Stripe& s = stripeOf(id);
      Entry* e = find(s, id);
      if (!e) continue;
      if (e->row >= 0) {
        const int64_t row = e->row;
        erase(s, id);
        if (tracksUse()) lruUnlink(row);
        freeRows_.push_back(row);
        --live_;
      } else {
        erase(s, id);
        --pending_;
      }
    }
  }
  std::vector<std::pair<int64_t, int64_t>> placed;  // (saved index, row)
  for (int64_t i = 0; i < n; ++i) {
    if (floorMod(ids[i], worldSize) != rank) continue;
    Stripe& s = stripeOf(ids[i]);
    Entry* e = find(s, ids[i]);
    const bool wasPending = e != nullptr && e->row < 0;
    if (!e) e = insert(s, ids[i]);
    if (e->row < 0) {
      if (wasPending) --pending_;
      HB_CHECK_CODE(config_.maxRows == 0 || live_.load() < config_.maxRows, OutOfRange, who, ": the checkpoint holds more rows than embMaxRows (",
                    config_.maxRows, ")");
      int64_t row;
      if (!freeRows_.empty()) {
        row = freeRows_.back();
        freeRows_.pop_back();
      } else {
        HB_CHECK_CODE(nextRow_ < config_.capacityRows, OutOfMemory, who, ": the checkpoint's rows do not fit the table's capacity (",
                      config_.capacityRows, ")");
        row = nextRow_++;
      }
      // find again: nothing moved (no insert since), but keep the entry's pointer honest.
      e = find(s, ids[i]);
      e->row = row;
      ++live_;
    } else if (tracksUse()) {
      lruUnlink(e->row);
    }
    e->count = meta[3 * i + 1];
    e->lastSeen = -1;
    rowId_[e->row] = ids[i];
    rowSeen_[e->row] = meta[3 * i];
    rowUpdated_[e->row] = meta[3 * i + 2];
    placed.emplace_back(i, e->row);
  }
  if (onDevice()) {
    writePlacedRows(saved, placed);
  } else parallelFor(int64_t(placed.size()), 512, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const auto [i, row] = placed[size_t(k)];
      std::memcpy(values_.data<float>() + row * dim, saved.values.data<float>() + i * dim, size_t(dim) * 4);
      for (size_t j = 0; j < slots_.size(); ++j) {
        const int64_t w = slots_[j].width;
        float* to = slots_[j].tensor.data<float>() + row * w;
        if (j < saved.slots.size() && saved.slots[j].buffer) std::memcpy(to, saved.slots[j].data<float>() + i * w, size_t(w) * 4);
        else std::fill_n(to, w, slots_[j].initial);
      }
    }
  });
  for (int64_t i = 0; i < m; ++i) {
    const int64_t id = saved.pendingIds.data<int64_t>()[i];
    if (floorMod(id, worldSize) != rank) continue;
    Stripe& s = stripeOf(id);
    Entry* e = find(s, id);
    if (e && e->row >= 0) continue;
    if (!e) {
      e = insert(s, id);
      ++pending_;
    }
    e->lastSeen = saved.pendingMeta.data<int64_t>()[2 * i];
    e->count = saved.pendingMeta.data<int64_t>()[2 * i + 1];
  }
  if (tracksUse()) {
    // The list by last use, rebuilt from the rows' last-seen steps (ties in id order).
    std::vector<int64_t> order;
    for (auto& s : stripes_) {
      for (size_t i = 0; i < s->entries.size(); ++i) {
        if (s->used[i] && s->entries[i].row >= 0) order.push_back(s->entries[i].row);
      }
    }
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return rowSeen_[a] != rowSeen_[b] ? rowSeen_[a] < rowSeen_[b] : rowId_[a] < rowId_[b];
    });
    lruHead_ = lruTail_ = -1;
    for (int64_t row : order) lruPushFront(row);
  }
  // A full restore is a new base; a restore of changes on top of one keeps the ids it
  // removed, so that the next snapshot of changes (against the same base) lists them too.
  if (replace) {
    removedSinceSave_.clear();
  } else if (tracksRemovals_ && saved.removedIds.buffer) {
    const int64_t* removed = saved.removedIds.data<int64_t>();
    removedSinceSave_.insert(removedSinceSave_.end(), removed, removed + saved.removedIds.size());
  }
}

void DynamicTable::writePlacedRows(const DynamicTableSnapshot& saved, const std::vector<std::pair<int64_t, int64_t>>& placed) {
  const int64_t n = int64_t(placed.size());
  std::vector<int64_t> rows(static_cast<size_t>(n));
  bool inOrder = true;  // saved row k goes to rows[k] (one rank: every saved row, in order)
  for (int64_t k = 0; k < n; ++k) {
    rows[size_t(k)] = placed[size_t(k)].second;
    inOrder = inOrder && placed[size_t(k)].first == k;
  }
  const int device = config_.device.index;
  // The saved rows this rank keeps, one after the other (as they are, when they are all of them).
  auto kept = [&](const Tensor& from, int64_t width, std::vector<float>& staging) -> const float* {
    if (inOrder) return from.data<float>();
    staging.resize(size_t(n * width));
    for (int64_t k = 0; k < n; ++k) {
      std::memcpy(staging.data() + k * width, from.data<float>() + placed[size_t(k)].first * width, size_t(width) * 4);
    }
    return staging.data();
  };
  std::vector<float> staging;
  cuda::writeRows(device, values_.data<float>(), config_.dim, rows.data(), n, kept(saved.values, config_.dim, staging));
  for (size_t j = 0; j < slots_.size(); ++j) {
    float* to = slots_[j].tensor.data<float>();
    if (j < saved.slots.size() && saved.slots[j].buffer) {
      cuda::writeRows(device, to, slots_[j].width, rows.data(), n, kept(saved.slots[j], slots_[j].width, staging));
    } else {
      FillSpec constant;
      constant.value = slots_[j].initial;
      cuda::initRows(device, {{to, slots_[j].width, constant, false}}, rows.data(), nullptr, n);
    }
  }
}

namespace {
std::mutex registryMu;
// Weak: a table lives as long as something holds its handle tensor (the JS table, the
// plans that look it up); the registry only finds it by id.
std::unordered_map<int64_t, std::weak_ptr<DynamicTable>>& registry() {
  static auto* tables = new std::unordered_map<int64_t, std::weak_ptr<DynamicTable>>();
  return *tables;
}
int64_t nextTableId = 1;
}  // namespace

int64_t registerDynamicTable(std::shared_ptr<DynamicTable> table) {
  std::lock_guard<std::mutex> lock(registryMu);
  // Entries of tables gone are dropped as new ones come.
  for (auto it = registry().begin(); it != registry().end();) it = it->second.expired() ? registry().erase(it) : std::next(it);
  const int64_t id = nextTableId++;
  registry()[id] = table;
  return id;
}

std::shared_ptr<DynamicTable> findDynamicTable(int64_t id, const std::string& who) {
  std::lock_guard<std::mutex> lock(registryMu);
  auto it = registry().find(id);
  std::shared_ptr<DynamicTable> table = it == registry().end() ? nullptr : it->second.lock();
  HB_CHECK(table != nullptr, who, ": dynamic table ", id, " does not exist (it was released)");
  return table;
}

void releaseDynamicTable(int64_t id) {
  std::lock_guard<std::mutex> lock(registryMu);
  registry().erase(id);
}

}  // namespace hb
