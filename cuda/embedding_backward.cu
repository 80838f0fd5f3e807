// Sparse gradients on the GPU: the embedding lookup's backward, IndexedSlices updates,
// and the two fused (backward + optimizer update of the rows seen).
//
// Entries are sorted by row with a stable radix sort of (row, entry) pairs, so each row's
// entries form one segment in entry order; every (segment, column) is then summed in that
// order with the HB_HOST_DEVICE math the CPU kernels use (lookup_gradient.h,
// optimizer_rules.h), which gives the CPU's bits without float atomics. The number of
// segments stays in device memory: kernels are sized for the upper bound (one segment per
// entry) and read the real count, so nothing waits for the host until the call ends.
//
// Entries come in "units" that the CPU path sums separately before combining them: for a
// lookup, all entries of one lookup (a table looked up twice gives two IndexedSlices that
// are stacked, then summed per row); for IndexedSlices, each entry. A row's units are
// combined as sumDuplicateRowsCpu does: taken as they are when no row has two units,
// otherwise added from zero in order (which only matters for the sign of a zero); and
// GradientDescent applies each unit in turn (TF's scatter_sub).
#include <cub/cub.cuh>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/kernel_launch.h"
#include "cuda/device_scratch.h"
#include "cuda/radix_sort.h"
#include "native/core/status.h"
#include "native/kernels/lookup_gradient.h"
#include "native/kernels/optimizer_rules.h"

namespace hb {
namespace cuda {

namespace {

constexpr int kThreads = 256;
// Grid-stride loops cover whatever a grid of this many blocks does not.
constexpr int64_t kMaxBlocks = int64_t(1) << 20;
constexpr int64_t kMaxRowBlocks = int64_t(1) << 16;
// Kernel B keeps three rows per block in shared memory up to this width (48 KiB, the
// limit without opting in), in global scratch beyond it.
constexpr int64_t kMaxSharedWidth = 4096;
// Entries of a segment whose loads kernel A issues before adding them (see segmentColumns).
constexpr int kPrefetch = 16;
// Shared memory the long-segment kernel stages a chunk of entries in (under the 48 KiB
// a launch gets without opting in).
constexpr size_t kLongStageBytes = 40 << 10;

unsigned gridFor(int64_t work, int64_t perBlock, int64_t cap) {
  const int64_t blocks = (work + perBlock - 1) / perBlock;
  return unsigned(std::max<int64_t>(1, std::min(blocks, cap)));
}

__device__ int64_t threadIndex() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ int64_t threadCount() { return int64_t(gridDim.x) * blockDim.x; }

// The bits a radix sort needs for keys in [0, maxKey].
int bitsFor(uint64_t maxKey) {
  int bits = 1;
  while (bits < 64 && (maxKey >> bits) != 0) ++bits;
  return bits;
}

// Host arrays (ids, splits, weights) into device memory, in the stream's order.
void toDevice(int device, void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || copyToDeviceInOrder(device, stream, dst, src, bytes)) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync to the device");
}

// ---- Segments ----

// Entries grouped by row. Arrays are sized for n entries (n segments at most).
struct Segments {
  Scratch entries;  // int32 [n]: entry indices by row, in entry order within a row
  Scratch offsets;  // int32 [n + 1]: segment u is entries[offsets[u] .. offsets[u + 1])
  Scratch rows;     // int64 [n]: segment u's row
  Scratch count;    // int32 [2]: the number of segments; 1 if a segment has several units
};

struct SegmentView {
  const int32_t* entries;
  const int32_t* offsets;
  const int64_t* rows;
  const int32_t* count;
};

SegmentView viewOf(const Segments& s) {
  return SegmentView{s.entries.as<int32_t>(), s.offsets.as<int32_t>(), s.rows.as<int64_t>(), s.count.as<int32_t>()};
}

__global__ void iota(int32_t* out, int64_t n) {
  for (int64_t i = threadIndex(); i < n; i += threadCount()) out[i] = int32_t(i);
}

// Rows of the runs, and the number of segments: the runs but a last one of pruned
// entries (key `sentinel`, above every row).
template <typename K>
__global__ void describeSegments(const K* runKeys, const int32_t* numRuns, int64_t n, K sentinel, int64_t* rows,
                                 int32_t* count) {
  const int32_t runs = *numRuns;
  for (int64_t u = threadIndex(); u < n; u += threadCount()) {
    if (u == 0) count[0] = (runs > 0 && runKeys[runs - 1] == sentinel) ? runs - 1 : runs;
    if (u < runs) rows[u] = int64_t(runKeys[u]);
  }
}

// keys[e]: entry e's row, or `sentinel` (> every row) for an entry that adds nothing.
// 1 <= n < 2^31 - 1.
template <typename K>
Segments segmentsOf(int device, cudaStream_t stream, const K* keys, int64_t n, K sentinel) {
  Segments s;
  s.entries = Scratch(device, size_t(n) * sizeof(int32_t));
  s.offsets = Scratch(device, size_t(n + 1) * sizeof(int32_t));
  s.rows = Scratch(device, size_t(n) * sizeof(int64_t));
  s.count = Scratch(device, 2 * sizeof(int32_t));
  check(cudaMemsetAsync(s.count.as<int32_t>(), 0, 2 * sizeof(int32_t), stream), "cudaMemsetAsync");
  const int endBit = bitsFor(uint64_t(sentinel));
  Scratch sortedKeys(device, size_t(n) * sizeof(K));
  {
    Scratch positions(device, size_t(n) * sizeof(int32_t));
    launchKernel(iota, gridFor(n, kThreads, kMaxBlocks), kThreads, 0, stream, positions.as<int32_t>(), n);
    sortPairs(device, stream, keys, sortedKeys.as<K>(), positions.as<int32_t>(), s.entries.as<int32_t>(), n, endBit);
  }
  Scratch runKeys(device, size_t(n) * sizeof(K));
  // Zeros past the last run, so the exclusive sum over n + 1 counts ends every segment.
  Scratch counts(device, size_t(n + 1) * sizeof(int32_t));
  Scratch numRuns(device, sizeof(int32_t));
  check(cudaMemsetAsync(counts.as<int32_t>(), 0, size_t(n + 1) * sizeof(int32_t), stream), "cudaMemsetAsync");
  size_t bytes = 0;
  check(cub::DeviceRunLengthEncode::Encode(nullptr, bytes, sortedKeys.as<K>(), runKeys.as<K>(), counts.as<int32_t>(),
                                           numRuns.as<int32_t>(), int(n), stream),
        "cub::DeviceRunLengthEncode::Encode");
  {
    Scratch temp(device, bytes);
    check(cub::DeviceRunLengthEncode::Encode(temp.as<void>(), bytes, sortedKeys.as<K>(), runKeys.as<K>(),
                                             counts.as<int32_t>(), numRuns.as<int32_t>(), int(n), stream),
          "cub::DeviceRunLengthEncode::Encode");
  }
  bytes = 0;
  check(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts.as<int32_t>(), s.offsets.as<int32_t>(), int(n + 1), stream),
        "cub::DeviceScan::ExclusiveSum");
  {
    Scratch temp(device, bytes);
    check(cub::DeviceScan::ExclusiveSum(temp.as<void>(), bytes, counts.as<int32_t>(), s.offsets.as<int32_t>(),
                                        int(n + 1), stream),
          "cub::DeviceScan::ExclusiveSum");
  }
  launchKernel(describeSegments<K>, gridFor(n, kThreads, kMaxBlocks), kThreads, 0, stream, runKeys.as<K>(), numRuns.as<int32_t>(), n, sentinel, s.rows.as<int64_t>(), s.count.as<int32_t>());
  check(cudaGetLastError(), "segment kernels");
  return s;
}

// count[1] = 1 when some segment holds entries of two units (the units of a segment are
// in order, so its first and last entry tell).
template <typename Source>
__global__ void markSpans(Source source, SegmentView s, int32_t* spans) {
  const int64_t segments = s.count[0];
  for (int64_t u = threadIndex(); u < segments; u += threadCount()) {
    if (source.unitOf(s.entries[s.offsets[u]]) != source.unitOf(s.entries[s.offsets[u + 1] - 1])) atomicOr(spans, 1);
  }
}

// ---- What the entries add ----

// Each source reads an entry in two parts: `entry(e)`, what the entry's columns share
// (the loads that lead to its row), then `value(entry, c)`, one load per column. The
// long-segment kernel stages the first part once per entry.

// IndexedSlices: each entry is a unit, taken as it is.
struct SliceSource {
  const float* values;  // [n, width]
  int64_t width;
  static constexpr bool kSumsUnits = false;
  struct Entry {
    const float* row;
    int32_t unit;
  };
  __device__ Entry entry(int32_t e) const { return Entry{values + int64_t(e) * width, e}; }
  __device__ float value(const Entry& entry, int64_t c) const { return entry.row[c]; }
  __device__ int32_t unitOf(int32_t e) const { return e; }
  __device__ float value(int32_t e, int64_t c) const { return value(entry(e), c); }
  __device__ float maxNorm(int32_t) const { return 0.0f; }
};

struct BagInfo {
  const float* grad;  // the bag's row of its lookup's output gradient
  BagGradientFactors factors;
  int32_t lookup;
  Combiner combiner;
  bool weighted;
};

// Lookup entries: a unit is one lookup's entries of a row, summed from zero in entry order
// (embeddingLookupBackwardCpu), then clipped with that lookup's maxNorm.
struct LookupSource {
  const BagInfo* bags;
  const int32_t* bagOf;     // per entry
  const float* weightOf;    // per entry (1 for lookups without weights)
  const float* maxNorms;    // per lookup
  static constexpr bool kSumsUnits = true;
  struct Entry {
    BagInfo bag;
    float weight;
    int32_t unit;
  };
  __device__ Entry entry(int32_t e) const {
    const BagInfo bag = bags[bagOf[e]];
    return Entry{bag, weightOf[e], bag.lookup};
  }
  __device__ float value(const Entry& entry, int64_t c) const {
    const BagInfo& b = entry.bag;
    return lookupGradContribution(b.grad[c], b.weighted, b.combiner, b.factors, entry.weight);
  }
  __device__ int32_t unitOf(int32_t e) const { return bags[bagOf[e]].lookup; }
  __device__ float value(int32_t e, int64_t c) const { return value(entry(e), c); }
  __device__ float maxNorm(int32_t unit) const { return maxNorms[unit]; }
};

// ---- Segment sums, written out or applied ----

// What the segment kernels do with each row's gradient.
struct Sink {
  float* out = nullptr;           // output mode: [segments, width], in `order`
  const int32_t* order = nullptr;  // output position k -> segment; null: k itself
  bool update = false;            // else output mode
  OptimizerHyper hyper;
  OptimizerTarget target;
};

// The rule for one element of a summed sparse row (all but RowwiseAdagrad, whose rule
// reads the whole row, and GradientDescent, applied per unit).
__device__ void applySparseElement(const OptimizerHyper& h, float* var, float* s0, float* s1, float g) {
  if (h.kind == OptimizerKind::Adam) {
    if (h.lazy) lazyAdamElement(h, var, s0, s1, g);
    else adamAccumulate(h, s0, s1, g);  // between adamDecayAll and adamMoveAll
  } else {
    applyElement(h, var, s0, s1, g);
  }
}

// One (segment, column)'s sum: its entries' values added in entry order (a unit's entries
// blocked: lookup_gradient.h), each unit from zero and the units combined as the CPU does,
// then written out or applied. Kernel A, the long-segment kernel and the pieces' kernels
// feed it the same values in the same order.
struct ColumnSum {
  const Sink* sink;
  bool perUnit;  // GradientDescent: each unit applied as it ends (TF's scatter_sub)
  bool spans;    // some segment holds several units: units are added from zero
  float* var;    // update mode: the column's variable element
  int32_t current;
  float sum;
  float unit;                  // the unit's value, for sources whose entries are units
  BlockedRunningSum entries;   // the unit's entries, for sources that sum them

  __device__ ColumnSum(const Sink& s, bool anySpans, float* element, int32_t firstUnit)
      : sink(&s), perUnit(s.update && s.hyper.kind == OptimizerKind::GradientDescent), spans(anySpans),
        var(element), current(firstUnit), sum(0.0f), unit(0.0f) {}

  template <bool kSumsUnits>
  __device__ void add(int32_t entryUnit, float x) {
    if (entryUnit != current) {
      finishUnit<kSumsUnits>();
      current = entryUnit;
      entries = BlockedRunningSum();
    }
    if (kSumsUnits) entries.add(x);
    else unit = x;
  }

  template <bool kSumsUnits>
  __device__ void finishUnit() {
    const float value = kSumsUnits ? entries.value() : unit;
    if (perUnit) applyElementOf<OptimizerKind::GradientDescent>(sink->hyper, var, nullptr, nullptr, value);
    else sum = spans ? addRn(sum, value) : value;
  }

  // After the last entry: output position k, element `at` of the table.
  template <bool kSumsUnits>
  __device__ void finish(int64_t k, int64_t c, int64_t width, int64_t at) {
    finishUnit<kSumsUnits>();
    if (!sink->update) {
      sink->out[k * width + c] = sum;
    } else if (!perUnit) {
      const OptimizerTarget& t = sink->target;
      applySparseElement(sink->hyper, var, t.s0 ? t.s0 + at : nullptr, t.s1 ? t.s1 + at : nullptr, sum);
    }
  }
};

// Segments with more entries than this go to the long-segment kernels: under a power law
// one row can hold a tenth of a batch's ids, and one thread per column walking them all
// would be the whole kernel's time.
constexpr int32_t kLongSegment = 64;

// Whether the sink's update is not to be made (its gradient was not finite): the same
// answer for every thread of the grid, so a kernel may return before its barriers.
__device__ bool updateRefused(const Sink& sink) { return sink.update && updateSkipped(sink.hyper); }

__device__ int64_t segmentAt(const Sink& sink, int64_t k) { return sink.order ? sink.order[k] : k; }

__device__ int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }

// Kernel A: one thread per (segment, column); for sinks that need no whole row. With
// `skipLong`, segments of more than kLongSegment entries are left to segmentColumnsLong.
template <typename Source>
__global__ void segmentColumns(Source source, SegmentView s, int64_t width, Sink sink, bool skipLong) {
  if (updateRefused(sink)) return;
  const int64_t segments = s.count[0];
  const bool spans = s.count[1] != 0;
  for (int64_t i = threadIndex(); i < segments * width; i += threadCount()) {
    const int64_t k = i / width;
    const int64_t c = i % width;
    const int64_t u = segmentAt(sink, k);
    const int32_t begin = s.offsets[u];
    const int32_t end = s.offsets[u + 1];
    if (skipLong && end - begin > kLongSegment) continue;
    const int64_t at = s.rows[u] * width + c;
    ColumnSum sum(sink, spans, sink.update ? sink.target.var + at : nullptr, source.unitOf(s.entries[begin]));
    // The loads of kPrefetch entries (each a chain: entry, bag, gradient) are issued
    // together, then added in entry order. Past the end the last entry is loaded again
    // and not added, so no load waits behind a branch.
    for (int32_t first = begin; first < end; first += kPrefetch) {
      int32_t units[kPrefetch];
      float values[kPrefetch];
#pragma unroll
      for (int q = 0; q < kPrefetch; ++q) {
        const typename Source::Entry entry = source.entry(s.entries[smaller(first + q, end - 1)]);
        units[q] = entry.unit;
        values[q] = source.value(entry, c);
      }
#pragma unroll
      for (int q = 0; q < kPrefetch; ++q) {
        if (first + q < end) sum.template add<Source::kSumsUnits>(units[q], values[q]);
      }
    }
    sum.template finish<Source::kSumsUnits>(k, c, width, at);
  }
}

// Long segments of one unit whose rows are at most this wide are summed in pieces (below);
// wider ones, and segments of several units, by segmentColumnsLong. A piece's sums take
// width floats of scratch, and a call has up to entries / 65 pieces: at this width, under
// 32 bytes an entry, about what the segments themselves take.
constexpr int64_t kMostPieceWidth = 512;

// The output positions of the segments with more than kLongSegment entries, in any order
// (each is one row, summed on its own): into `pieced` (with each one's piece count, in
// the same slot) those of one unit when `pieces` is set, the others into `list`.
template <typename Source>
__global__ void listLongSegments(Source source, SegmentView s, const int32_t* order, int32_t* list, int32_t* count,
                                 int32_t* pieced, int32_t* pieces, int32_t* piecedCount) {
  const int64_t segments = s.count[0];
  for (int64_t k = threadIndex(); k < segments; k += threadCount()) {
    const int64_t u = order ? order[k] : k;
    const int32_t begin = s.offsets[u];
    const int32_t end = s.offsets[u + 1];
    if (end - begin <= kLongSegment) continue;
    if (pieces && source.unitOf(s.entries[begin]) == source.unitOf(s.entries[end - 1])) {
      const int32_t slot = atomicAdd(piecedCount, 1);
      pieced[slot] = int32_t(k);
      pieces[slot] = int32_t((end - begin + kSumBlock - 1) / kSumBlock);
    } else {
      list[atomicAdd(count, 1)] = int32_t(k);
    }
  }
}

// A long segment of one unit is cut into pieces of kSumBlock entries (the blocks of its
// blocked sum): one block of threads per piece stages the piece's entries, then each
// column's thread sums the piece in entry order into partial[piece, column]. Pieces are numbered segment after
// segment: pieceEnds is the inclusive sum of the pieced segments' piece counts.
// Shared memory: kSumBlock entries.
template <typename Source>
__global__ void sumPieces(Source source, SegmentView s, int64_t width, Sink sink, const int32_t* pieced,
                          const int32_t* pieceEnds, const int32_t* piecedCount, float* partial) {
  using Entry = typename Source::Entry;
  Entry* entries = dynamicSharedMemory<Entry>();
  const int32_t count = *piecedCount;
  const int32_t pieces = count > 0 ? pieceEnds[count - 1] : 0;
  for (int32_t p = blockIdx.x; p < pieces; p += gridDim.x) {
    int32_t lo = 0, hi = count - 1;  // the first segment whose pieces end after p
    while (lo < hi) {
      const int32_t mid = (lo + hi) / 2;
      if (pieceEnds[mid] > p) hi = mid;
      else lo = mid + 1;
    }
    const int32_t index = p - (lo > 0 ? pieceEnds[lo - 1] : 0);
    const int64_t u = segmentAt(sink, pieced[lo]);
    const int32_t first = s.offsets[u] + index * int32_t(kSumBlock);
    const int32_t n = int32_t(smaller(kSumBlock, s.offsets[u + 1] - first));
    __syncthreads();  // the last piece's entries are read
    for (int32_t q = threadIdx.x; q < n; q += blockDim.x) entries[q] = source.entry(s.entries[first + q]);
    __syncthreads();
    for (int64_t c = threadIdx.x; c < width; c += blockDim.x) {
      float sum = 0.0f;
      // As in kernel A: kPrefetch loads issued together, then added in order.
      for (int32_t q0 = 0; q0 < n; q0 += kPrefetch) {
        float values[kPrefetch];
#pragma unroll
        for (int q = 0; q < kPrefetch; ++q) values[q] = source.value(entries[smaller(q0 + q, n - 1)], c);
#pragma unroll
        for (int q = 0; q < kPrefetch; ++q) {
          if (q0 + q < n) sum = addRn(sum, values[q]);
        }
      }
      partial[int64_t(p) * width + c] = sum;
    }
  }
}

// Each pieced segment's (column's) pieces added in order, its unit's sum, then finished
// as kernel A would.
template <typename Source>
__global__ void finishPieces(Source source, SegmentView s, int64_t width, Sink sink, const int32_t* pieced,
                             const int32_t* pieceEnds, const int32_t* piecedCount, const float* partial) {
  if (updateRefused(sink)) return;
  const int64_t count = *piecedCount;
  const bool spans = s.count[1] != 0;
  for (int64_t i = threadIndex(); i < count * width; i += threadCount()) {
    const int64_t item = i / width;
    const int64_t c = i % width;
    const int64_t k = pieced[item];
    const int64_t u = segmentAt(sink, k);
    const int64_t p0 = item > 0 ? pieceEnds[item - 1] : 0;
    const int64_t p1 = pieceEnds[item];
    float total = partial[p0 * width + c];  // 0 + the first piece's sum, which is never -0
    for (int64_t p = p0 + 1; p < p1; ++p) total = addRn(total, partial[p * width + c]);
    const int64_t at = s.rows[u] * width + c;
    const int32_t unit = source.unitOf(s.entries[s.offsets[u]]);
    ColumnSum sum(sink, spans, sink.update ? sink.target.var + at : nullptr, unit);
    sum.template add<false>(unit, total);  // the unit's value, as it is
    sum.template finish<false>(k, c, width, at);
  }
}

// One block per long segment not summed in pieces (several units, or wide rows), for the
// sinks of kernel A. The block stages a chunk of
// entries at a time: what each entry's columns share (one thread per entry), then the
// chunk's values for up to blockDim.x columns (every thread, independent loads) in shared
// memory; then each column's thread adds its column in entry order, as kernel A would.
// Shared memory: chunk entries, then chunk x tileWidth floats.
template <typename Source>
__global__ void segmentColumnsLong(Source source, SegmentView s, int64_t width, Sink sink, const int32_t* list,
                                   const int32_t* listCount, int32_t tileWidth, int32_t chunk) {
  if (updateRefused(sink)) return;
  using Entry = typename Source::Entry;
  Entry* entries = dynamicSharedMemory<Entry>();
  float* staged = reinterpret_cast<float*>(entries + chunk);
  const bool spans = s.count[1] != 0;
  const int tid = threadIdx.x;
  const int32_t count = *listCount;
  // Everything that decides a __syncthreads below is the same for the whole block.
  for (int32_t item = blockIdx.x; item < count; item += gridDim.x) {
    const int64_t k = list[item];
    const int64_t u = segmentAt(sink, k);
    const int32_t begin = s.offsets[u];
    const int32_t end = s.offsets[u + 1];
    const int64_t rowStart = s.rows[u] * width;
    const int32_t firstUnit = source.unitOf(s.entries[begin]);
    for (int64_t c0 = 0; c0 < width; c0 += tileWidth) {
      const int32_t columns = int32_t(smaller(tileWidth, width - c0));
      const bool owner = tid < columns;
      const int64_t c = c0 + tid;
      ColumnSum sum(sink, spans, sink.update && owner ? sink.target.var + rowStart + c : nullptr, firstUnit);
      for (int32_t first = begin; first < end; first += chunk) {
        const int32_t n = int32_t(smaller(chunk, end - first));
        __syncthreads();  // the last chunk is added
        for (int32_t q = tid; q < n; q += blockDim.x) entries[q] = source.entry(s.entries[first + q]);
        __syncthreads();
#pragma unroll 8
        for (int32_t i = tid; i < n * columns; i += blockDim.x) {
          const int32_t q = i / columns;
          const int32_t col = i - q * columns;
          staged[q * tileWidth + col] = source.value(entries[q], c0 + col);
        }
        __syncthreads();
        if (owner) {
          for (int32_t q = 0; q < n; ++q) sum.template add<Source::kSumsUnits>(entries[q].unit, staged[q * tileWidth + tid]);
        }
      }
      if (owner) sum.template finish<Source::kSumsUnits>(k, c, width, rowStart + c);
    }
  }
}

// Kernel B: one block per segment, for clipping (maxNorm) and RowwiseAdagrad, which read
// a whole row. The block's threads own columns; thread 0 does the row-wide steps in
// index order, as the CPU does. A unit's entries are blocked (lookup_gradient.h):
// unitRow holds the current block's sums, blockRow the finished blocks'. `table`: the
// rows clipping reads. `globalRows`: 3 x width floats per block when the rows do not fit
// in shared memory, else null.
template <typename Source>
__global__ void segmentRows(Source source, SegmentView s, int64_t width, Sink sink, const float* table,
                            float* globalRows) {
  if (updateRefused(sink)) return;
  float* shared = dynamicSharedMemory<float>();
  float* unitRow = globalRows ? globalRows + int64_t(blockIdx.x) * 3 * width : shared;
  float* sumRow = unitRow + width;
  float* blockRow = sumRow + width;
  const int64_t segments = s.count[0];
  const bool spans = s.count[1] != 0;
  const OptimizerHyper& h = sink.hyper;
  const OptimizerTarget& t = sink.target;
  const bool perUnit = sink.update && h.kind == OptimizerKind::GradientDescent;
  const int tid = threadIdx.x;
  // Everything that decides a __syncthreads below depends only on the segment, so the
  // whole block takes the same branches.
  for (int64_t k = blockIdx.x; k < segments; k += gridDim.x) {
    const int64_t u = sink.order ? sink.order[k] : k;
    const int32_t begin = s.offsets[u];
    const int32_t end = s.offsets[u + 1];
    const int64_t row = s.rows[u];
    float* var = sink.update ? t.var + row * width : nullptr;
    // Per unit, GradientDescent steps a copy of the row (sumRow), written back at the end,
    // so clipping later units reads the row as it was before the update, as on the CPU.
    for (int64_t c = tid; c < width; c += blockDim.x) {
      unitRow[c] = 0.0f;
      blockRow[c] = 0.0f;
      sumRow[c] = perUnit ? var[c] : 0.0f;
    }
    int32_t current = source.unitOf(s.entries[begin]);
    int32_t inBlock = 0;  // the unit's entries in unitRow
    bool folded = false;  // some block of the unit is in blockRow
    for (int32_t j = begin;; ++j) {
      const bool done = j == end;
      const int32_t e = done ? 0 : s.entries[j];
      const int32_t l = done ? current : source.unitOf(e);
      if (done || l != current) {
        if (folded) {
          for (int64_t c = tid; c < width; c += blockDim.x) {
            unitRow[c] = addRn(blockRow[c], unitRow[c]);
            blockRow[c] = 0.0f;
          }
        }
        inBlock = 0;
        folded = false;
        const float maxNorm = source.maxNorm(current);
        if (maxNorm > 0.0f) {
          __syncthreads();
          if (tid == 0) clipByNormGradient(table + row * width, width, maxNorm, unitRow);
          __syncthreads();
        }
        for (int64_t c = tid; c < width; c += blockDim.x) {
          if (perUnit) applyElementOf<OptimizerKind::GradientDescent>(h, sumRow + c, nullptr, nullptr, unitRow[c]);
          else sumRow[c] = spans ? addRn(sumRow[c], unitRow[c]) : unitRow[c];
          unitRow[c] = 0.0f;
        }
        if (done) break;
        current = l;
      }
      const bool fold = Source::kSumsUnits && inBlock == kSumBlock;
      for (int64_t c = tid; c < width; c += blockDim.x) {
        if (fold) {
          blockRow[c] = addRn(blockRow[c], unitRow[c]);
          unitRow[c] = 0.0f;
        }
        const float x = source.value(e, c);
        unitRow[c] = Source::kSumsUnits ? addRn(unitRow[c], x) : x;
      }
      if (fold) {
        inBlock = 0;
        folded = true;
      }
      ++inBlock;
    }
    if (!sink.update) {
      for (int64_t c = tid; c < width; c += blockDim.x) sink.out[k * width + c] = sumRow[c];
    } else if (perUnit) {
      for (int64_t c = tid; c < width; c += blockDim.x) var[c] = sumRow[c];
    } else if (h.kind == OptimizerKind::RowwiseAdagrad) {
      __syncthreads();
      if (tid == 0) applyRowwiseAdagradRow(h, var, t.s0 + row, sumRow, width);
    } else {
      for (int64_t c = tid; c < width; c += blockDim.x) {
        const int64_t at = row * width + c;
        applySparseElement(h, var + c, t.s0 ? t.s0 + at : nullptr, t.s1 ? t.s1 + at : nullptr, sumRow[c]);
      }
    }
    __syncthreads();  // the rows are reused by the block's next segment
  }
}

// n: the segments to cover (an upper bound: the kernels read the real count); entries: how
// many entries they hold in all.
template <typename Source>
void launchSegments(int device, cudaStream_t stream, const Source& source, const Segments& segments, int64_t n,
                    int64_t entries, int64_t width, const Sink& sink, bool wholeRows, const float* table) {
  const SegmentView view = viewOf(segments);
  if (!wholeRows) {
    // At most entries / (kLongSegment + 1) segments are long (each holds more than
    // kLongSegment entries), and no more than there are segments: the list's size.
    const int64_t mostLong = std::min(n, entries / (kLongSegment + 1));
    launchKernel(segmentColumns<Source>, gridFor(n * width, kThreads, kMaxBlocks), kThreads, 0, stream, source, view, width, sink, mostLong > 0);
    check(cudaGetLastError(), "segment sum kernel");
    if (mostLong == 0) return;
    Scratch list(device, size_t(mostLong) * sizeof(int32_t)), counts(device, 2 * sizeof(int32_t));
    check(cudaMemsetAsync(counts.as<int32_t>(), 0, 2 * sizeof(int32_t), stream), "cudaMemsetAsync");
    int32_t* listCount = counts.as<int32_t>();
    int32_t* piecedCount = listCount + 1;
    const bool inPieces = Source::kSumsUnits && width > 0 && width <= kMostPieceWidth;
    Scratch pieced, pieces, pieceEnds, scanTemp, partial;
    if (inPieces) {
      pieced = Scratch(device, size_t(mostLong) * sizeof(int32_t));
      pieces = Scratch(device, size_t(mostLong) * sizeof(int32_t));
      pieceEnds = Scratch(device, size_t(mostLong) * sizeof(int32_t));
      // Slots past the count stay 0, so the scan over every slot ends where the last one does.
      check(cudaMemsetAsync(pieces.as<int32_t>(), 0, size_t(mostLong) * sizeof(int32_t), stream), "cudaMemsetAsync");
    }
    launchKernel(listLongSegments<Source>, gridFor(n, kThreads, kMaxBlocks), kThreads, 0, stream, source, view, sink.order, list.as<int32_t>(), listCount,
                 pieced.as<int32_t>(), pieces.as<int32_t>(), piecedCount);
    if (inPieces) {
      size_t bytes = 0;
      check(cub::DeviceScan::InclusiveSum(nullptr, bytes, pieces.as<int32_t>(), pieceEnds.as<int32_t>(), int(mostLong), stream),
            "cub::DeviceScan::InclusiveSum");
      scanTemp = Scratch(device, bytes);
      check(cub::DeviceScan::InclusiveSum(scanTemp.as<void>(), bytes, pieces.as<int32_t>(), pieceEnds.as<int32_t>(),
                                          int(mostLong), stream),
            "cub::DeviceScan::InclusiveSum");
      // Every long segment has more than kLongSegment entries and at most one piece beyond
      // its entries' kSumBlock-sized share, so no more pieces than entries / (kLongSegment + 1).
      const int64_t mostPieces = std::min(entries / kSumBlock + mostLong, entries / (kLongSegment + 1));
      partial = Scratch(device, size_t(mostPieces) * size_t(width) * sizeof(float));
      const int threads = int(std::min<int64_t>(kThreads, (width + 31) / 32 * 32));
      launchKernel(sumPieces<Source>, gridFor(mostPieces, 1, kMaxRowBlocks), threads, size_t(kSumBlock) * sizeof(typename Source::Entry), stream, source, view,
                   width, sink, pieced.as<int32_t>(), pieceEnds.as<int32_t>(), piecedCount, partial.as<float>());
      launchKernel(finishPieces<Source>, gridFor(mostLong * width, kThreads, kMaxBlocks), kThreads, 0, stream, source, view, width, sink,
                   pieced.as<int32_t>(), pieceEnds.as<int32_t>(), piecedCount, partial.as<float>());
      check(cudaGetLastError(), "long segment piece kernels");
    }
    const int32_t tileWidth = int32_t(std::min<int64_t>(width, kThreads));
    const size_t perEntry = size_t(tileWidth) * sizeof(float) + sizeof(typename Source::Entry);
    const int32_t chunk = int32_t(std::max<size_t>(1, std::min<size_t>(kThreads, kLongStageBytes / perEntry)));
    launchKernel(segmentColumnsLong<Source>, gridFor(mostLong, 1, kMaxRowBlocks), kThreads, size_t(chunk) * perEntry, stream, source, view, width, sink,
                 list.as<int32_t>(), listCount, tileWidth, chunk);
    check(cudaGetLastError(), "long segment sum kernel");
    return;
  }
  const int threads = int(std::min<int64_t>(kThreads, (width + 31) / 32 * 32));
  if (width <= kMaxSharedWidth) {
    const unsigned blocks = gridFor(n, 1, kMaxRowBlocks);
    launchKernel(segmentRows<Source>, blocks, threads, size_t(3 * width) * sizeof(float), stream, source, view, width, sink, table, nullptr);
    check(cudaGetLastError(), "segment row kernel");
    return;
  }
  // Very wide rows: each block's three rows in global memory, about 256 MiB at most.
  const int64_t perBlock = 3 * width;
  const unsigned blocks = gridFor(n, 1, std::max<int64_t>(1, (int64_t(64) << 20) / perBlock));
  Scratch rows(device, size_t(blocks) * size_t(perBlock) * sizeof(float));
  launchKernel(segmentRows<Source>, blocks, threads, 0, stream, source, view, width, sink, table, rows.as<float>());
  check(cudaGetLastError(), "segment row kernel");
}

__global__ void adamDecayAll(OptimizerHyper h, OptimizerTarget t) {
  if (updateSkipped(h)) return;
  for (int64_t i = threadIndex(); i < t.rows * t.width; i += threadCount()) adamDecay(h, t.s0 + i, t.s1 + i);
}

__global__ void adamMoveAll(OptimizerHyper h, OptimizerTarget t) {
  if (updateSkipped(h)) return;
  for (int64_t i = threadIndex(); i < t.rows * t.width; i += threadCount()) adamMove(h, t.var + i, t.s0[i], t.s1[i]);
}

// A sparse update: `apply` queues the rows' part between the phases of non-lazy Adam
// (every row's moments decay before, every row moves after, as TF's _apply_sparse).
template <typename Apply>
void sparseUpdate(cudaStream_t stream, const OptimizerHyper& h, const OptimizerTarget& t, const Apply& apply) {
  const bool denseAdam = h.kind == OptimizerKind::Adam && !h.lazy;
  const int64_t total = t.rows * t.width;
  if (denseAdam && total > 0) launchKernel(adamDecayAll, gridFor(total, kThreads, kMaxBlocks), kThreads, 0, stream, h, t);
  apply();
  if (denseAdam && total > 0) launchKernel(adamMoveAll, gridFor(total, kThreads, kMaxBlocks), kThreads, 0, stream, h, t);
  check(cudaGetLastError(), "sparse update kernels");
}

void finish(cudaStream_t stream, const char* what) {
  check(cudaGetLastError(), what);
  check(cudaStreamSynchronize(stream), what);
}

// ---- Lookups on the device ----

// Per bag (one thread each, in the CPU's order): the gradient factors; per entry: its key
// (row, or `sentinel` when pruned), bag and weight.
template <typename Id, typename K>
__global__ void prepareBags(const Id* ids, const int32_t* splits, int64_t batch, bool weighted, Combiner combiner,
                            const float* outGrad, int64_t dim, int32_t lookup, int64_t entryOffset, int64_t bagOffset,
                            K sentinel, K* keys, int32_t* bagOf, float* weightOf, BagInfo* bags) {
  float* weights = weightOf + entryOffset;  // the lookup's weights, copied there
  for (int64_t b = threadIndex(); b < batch; b += threadCount()) {
    const int64_t begin = splits[b];
    const int64_t end = splits[b + 1];
    BagInfo info;
    info.grad = outGrad + b * dim;
    info.factors = bagGradientFactors(ids, weighted ? weights : static_cast<const float*>(nullptr), begin, end, combiner);
    info.lookup = lookup;
    info.combiner = combiner;
    info.weighted = weighted;
    bags[bagOffset + b] = info;
    for (int64_t j = begin; j < end; ++j) {
      const float w = weighted ? weights[j] : 1.0f;
      keys[entryOffset + j] = keepLookupEntry(ids[j], w, weighted, combiner) ? K(ids[j]) : sentinel;
      bagOf[entryOffset + j] = int32_t(bagOffset + b);
      weights[j] = w;
    }
  }
}

// The lookups' entries on the device, as one list (lookup after lookup).
struct StagedLookups {
  std::vector<Scratch> ids, splits;
  Scratch bags, bagOf, weightOf, maxNorms, keys;
  int64_t entries = 0;
  bool clipped = false;
  LookupSource source() const {
    return LookupSource{bags.as<BagInfo>(), bagOf.as<int32_t>(), weightOf.as<float>(), maxNorms.as<float>()};
  }
};

// Every args: host ids / rowSplits / weights, checked; the same dim; outGrads on device.
template <typename K>
void stageLookups(int device, cudaStream_t stream, const std::vector<EmbeddingLookupArgs>& lookups,
                  const std::vector<const float*>& outGrads, K sentinel, StagedLookups* staged) {
  int64_t entries = 0, bags = 0;
  std::vector<float> maxNorms;
  for (const EmbeddingLookupArgs& a : lookups) {
    entries += a.numIds;
    bags += a.batch;
    maxNorms.push_back(a.maxNorm > 0.0f ? a.maxNorm : 0.0f);
    staged->clipped = staged->clipped || a.maxNorm > 0.0f;
  }
  // Entry and bag numbers are int32 on the device, and the segment scan runs over n + 1.
  HB_CHECK(entries < INT32_MAX && bags < INT32_MAX, "embedding backward: at most 2^31 - 2 ids and bags per table and "
           "step on a GPU, got ", entries, " ids in ", bags, " bags");
  staged->entries = entries;
  staged->bags = Scratch(device, size_t(bags) * sizeof(BagInfo));
  staged->bagOf = Scratch(device, size_t(entries) * sizeof(int32_t));
  staged->weightOf = Scratch(device, size_t(entries) * sizeof(float));
  staged->keys = Scratch(device, size_t(entries) * sizeof(K));
  staged->maxNorms = Scratch(device, maxNorms.size() * sizeof(float));
  // All host copies first: they go through page-locked staging and do not wait, but one
  // that falls back to pageable memory waits for the stream, best before any kernel here.
  toDevice(device, staged->maxNorms.as<float>(), maxNorms.data(), maxNorms.size() * sizeof(float), stream);
  int64_t entryOffset = 0;
  for (const EmbeddingLookupArgs& a : lookups) {
    const size_t idBytes = size_t(a.numIds) * (a.idsAreInt64 ? sizeof(int64_t) : sizeof(int32_t));
    staged->ids.emplace_back(device, idBytes);
    staged->splits.emplace_back(device, size_t(a.batch + 1) * sizeof(int32_t));
    toDevice(device, staged->ids.back().as<void>(), a.ids, idBytes, stream);
    toDevice(device, staged->splits.back().as<void>(), a.rowSplits, size_t(a.batch + 1) * sizeof(int32_t), stream);
    if (a.weights) {
      toDevice(device, staged->weightOf.as<float>() + entryOffset, a.weights, size_t(a.numIds) * sizeof(float), stream);
    }
    entryOffset += a.numIds;
  }
  entryOffset = 0;
  int64_t bagOffset = 0;
  for (size_t l = 0; l < lookups.size(); ++l) {
    const EmbeddingLookupArgs& a = lookups[l];
    if (a.batch > 0) {
      const unsigned blocks = gridFor(a.batch, kThreads, kMaxBlocks);
      const bool weighted = a.weights != nullptr;
      if (a.idsAreInt64) {
        launchKernel(prepareBags<int64_t, K>, blocks, kThreads, 0, stream, staged->ids[l].as<int64_t>(), staged->splits[l].as<int32_t>(), a.batch, weighted, a.combiner, outGrads[l],
            a.dim, int32_t(l), entryOffset, bagOffset, sentinel, staged->keys.as<K>(), staged->bagOf.as<int32_t>(),
            staged->weightOf.as<float>(), staged->bags.as<BagInfo>());
      } else {
        launchKernel(prepareBags<int32_t, K>, blocks, kThreads, 0, stream, staged->ids[l].as<int32_t>(), staged->splits[l].as<int32_t>(), a.batch, weighted, a.combiner, outGrads[l],
            a.dim, int32_t(l), entryOffset, bagOffset, sentinel, staged->keys.as<K>(), staged->bagOf.as<int32_t>(),
            staged->weightOf.as<float>(), staged->bags.as<BagInfo>());
      }
    }
    entryOffset += a.numIds;
    bagOffset += a.batch;
  }
  check(cudaGetLastError(), "embedding backward: bag kernel");
}

// For IndexedSlices in first-appearance order: each segment's first entry (n for the
// slots past the last segment, so they sort last).
__global__ void firstEntries(SegmentView s, int64_t n, uint32_t* first, int32_t* index) {
  const int64_t segments = s.count[0];
  for (int64_t u = threadIndex(); u < n; u += threadCount()) {
    first[u] = u < segments ? uint32_t(s.entries[s.offsets[u]]) : uint32_t(n);
    index[u] = int32_t(u);
  }
}

__global__ void orderedRows(SegmentView s, const int32_t* order, int64_t count, int64_t* rows) {
  for (int64_t k = threadIndex(); k < count; k += threadCount()) rows[k] = s.rows[order[k]];
}

template <typename K>
RowGradients lookupBackwardTyped(int device, const EmbeddingLookupArgs& args, const float* outGrad) {
  DeviceContext& context = useDevice(device);
  cudaStream_t stream = context.compute;
  const int64_t dim = args.dim;
  RowGradients out;
  if (args.numIds == 0) {
    out.values = Buffer::allocate(Device::cuda(device), 0);
    return out;
  }
  const K sentinel = K(args.rows);
  StagedLookups staged;
  stageLookups<K>(device, stream, {args}, {outGrad}, sentinel, &staged);
  const int64_t n = staged.entries;
  const Segments segments = segmentsOf<K>(device, stream, staged.keys.as<K>(), n, sentinel);
  const SegmentView view = viewOf(segments);
  // The CPU lists rows in order of first appearance: sort the segments by first entry.
  Scratch order(device, size_t(n) * sizeof(int32_t));
  {
    Scratch first(device, size_t(n) * sizeof(uint32_t)), sortedFirst(device, size_t(n) * sizeof(uint32_t));
    Scratch index(device, size_t(n) * sizeof(int32_t));
    launchKernel(firstEntries, gridFor(n, kThreads, kMaxBlocks), kThreads, 0, stream, view, n, first.as<uint32_t>(),
                                                                            index.as<int32_t>());
    sortPairs(device, stream, first.as<uint32_t>(), sortedFirst.as<uint32_t>(), index.as<int32_t>(),
              order.as<int32_t>(), n, bitsFor(uint64_t(n)));
  }
  // The result's shape needs the count on the host.
  int32_t count = 0;
  check(cudaMemcpyAsync(&count, segments.count.as<int32_t>(), sizeof(int32_t), cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "embedding backward");
  out.values = Buffer::allocate(Device::cuda(device), size_t(count) * size_t(dim) * sizeof(float));
  out.rows.resize(size_t(count));
  if (count > 0) {
    Sink sink;
    sink.out = static_cast<float*>(out.values->data());
    sink.order = order.as<int32_t>();
    launchSegments(device, stream, staged.source(), segments, count, n, dim, sink, staged.clipped, args.table);
    Scratch rows(device, size_t(count) * sizeof(int64_t));
    launchKernel(orderedRows, gridFor(count, kThreads, kMaxBlocks), kThreads, 0, stream, view, order.as<int32_t>(), count,
                                                                              rows.as<int64_t>());
    check(cudaGetLastError(), "embedding backward kernels");
    check(cudaMemcpyAsync(out.rows.data(), rows.as<int64_t>(), size_t(count) * sizeof(int64_t), cudaMemcpyDeviceToHost,
                          stream),
          "cudaMemcpyAsync");
  }
  finish(stream, "embedding backward");
  return out;
}

template <typename K>
void lookupBackwardApplyTyped(int device, const OptimizerHyper& h, const OptimizerTarget& t,
                              const std::vector<EmbeddingLookupArgs>& lookups, const std::vector<const float*>& outGrads) {
  DeviceContext& context = useDevice(device);
  cudaStream_t stream = context.compute;
  const K sentinel = K(t.rows);
  int64_t n = 0;
  for (const EmbeddingLookupArgs& a : lookups) n += a.numIds;
  StagedLookups staged;
  Segments segments;
  if (n > 0 && t.width > 0) {
    stageLookups<K>(device, stream, lookups, outGrads, sentinel, &staged);
    segments = segmentsOf<K>(device, stream, staged.keys.as<K>(), n, sentinel);
    if (lookups.size() > 1) {
      launchKernel(markSpans<LookupSource>, gridFor(n, kThreads, kMaxBlocks), kThreads, 0, stream, staged.source(), viewOf(segments),
                                                                          segments.count.as<int32_t>() + 1);
    }
  }
  sparseUpdate(stream, h, t, [&] {
    if (n == 0 || t.width == 0) return;
    Sink sink;
    sink.update = true;
    sink.hyper = h;
    sink.target = t;
    const bool wholeRows = staged.clipped || h.kind == OptimizerKind::RowwiseAdagrad;
    launchSegments(device, stream, staged.source(), segments, n, n, t.width, sink, wholeRows, t.var);
  });
  // No wait: the update is in the stream's order before anything that reads the table
  // (a failure shows at the step's synchronisation).
  check(cudaGetLastError(), "fused embedding backward and update");
}

template <typename Id, typename K>
__global__ void sliceKeys(const Id* indices, int64_t n, K* keys) {
  for (int64_t i = threadIndex(); i < n; i += threadCount()) keys[i] = K(indices[i]);
}

template <typename K>
void applyIndexedSlicesTyped(int device, const OptimizerHyper& h, const OptimizerTarget& t, const void* indices,
                             bool indicesAreInt64, int64_t n, const float* values) {
  DeviceContext& context = useDevice(device);
  cudaStream_t stream = context.compute;
  HB_CHECK(n < INT32_MAX, "applyGradients: at most 2^31 - 2 IndexedSlices rows on a GPU, got ", n);
  const K sentinel = K(t.rows);  // no entry has it: the indices are in range
  Segments segments;
  const bool any = n > 0 && t.width > 0;
  if (any) {
    const size_t idBytes = size_t(n) * (indicesAreInt64 ? sizeof(int64_t) : sizeof(int32_t));
    Scratch staged(device, idBytes), keys(device, size_t(n) * sizeof(K));
    toDevice(device, staged.as<void>(), indices, idBytes, stream);
    const unsigned blocks = gridFor(n, kThreads, kMaxBlocks);
    if (indicesAreInt64) launchKernel(sliceKeys<int64_t, K>, blocks, kThreads, 0, stream, staged.as<int64_t>(), n, keys.as<K>());
    else launchKernel(sliceKeys<int32_t, K>, blocks, kThreads, 0, stream, staged.as<int32_t>(), n, keys.as<K>());
    check(cudaGetLastError(), "IndexedSlices keys");
    segments = segmentsOf<K>(device, stream, keys.as<K>(), n, sentinel);
    launchKernel(markSpans<SliceSource>, blocks, kThreads, 0, stream, SliceSource{values, t.width}, viewOf(segments),
                                               segments.count.as<int32_t>() + 1);
  }
  sparseUpdate(stream, h, t, [&] {
    if (!any) return;
    Sink sink;
    sink.update = true;
    sink.hyper = h;
    sink.target = t;
    launchSegments(device, stream, SliceSource{values, t.width}, segments, n, n, t.width, sink,
                   h.kind == OptimizerKind::RowwiseAdagrad, t.var);
  });
  check(cudaGetLastError(), "sparse optimizer update");  // no wait, as the fused update
}

bool smallKeys(int64_t rows) { return uint64_t(rows) <= uint64_t(UINT32_MAX); }

}  // namespace

RowGradients embeddingLookupBackward(int device, const EmbeddingLookupArgs& args, const float* outGrad) {
  return smallKeys(args.rows) ? lookupBackwardTyped<uint32_t>(device, args, outGrad)
                              : lookupBackwardTyped<uint64_t>(device, args, outGrad);
}

void lookupBackwardApply(int device, const OptimizerHyper& hyper, const OptimizerTarget& target,
                         const std::vector<EmbeddingLookupArgs>& lookups, const std::vector<const float*>& outGrads) {
  HB_CHECK(lookups.size() == outGrads.size() && !lookups.empty() && lookups.size() < size_t(INT32_MAX),
           "lookupBackwardApply: one output gradient per lookup");
  if (smallKeys(target.rows)) lookupBackwardApplyTyped<uint32_t>(device, hyper, target, lookups, outGrads);
  else lookupBackwardApplyTyped<uint64_t>(device, hyper, target, lookups, outGrads);
}

void applyIndexedSlices(int device, const OptimizerHyper& hyper, const OptimizerTarget& target, const void* indices,
                        bool indicesAreInt64, int64_t n, const float* values) {
  if (smallKeys(target.rows)) applyIndexedSlicesTyped<uint32_t>(device, hyper, target, indices, indicesAreInt64, n, values);
  else applyIndexedSlicesTyped<uint64_t>(device, hyper, target, indices, indicesAreInt64, n, values);
}

}  // namespace cuda
}  // namespace hb
