// The CPU interaction loops, included once per instruction set by dot_interaction_cpu.cc
// inside namespace HB_INTERACTION_NAMESPACE. Only separate multiplies and adds, in the
// order of dense_math.h's reference, so every variant writes the same bits.

namespace HB_INTERACTION_NAMESPACE {

// Examples per block: one per lane of the widest vector (16 floats), and the transposed
// block (F * D * 16 floats: 110 KiB for DLRM's 27 x 64) stays in L2.
constexpr int64_t kBlock = 16;
// Pairs (i, j..j+N-1) share each load of feature i: 8 running sums in the AVX-512 build
// (32 vector registers), 4 in the others' loop by lane.
constexpr int64_t kPairsAtOnce = HB_INTERACTION_PAIRS_AT_ONCE;
constexpr int64_t kLanePairsAtOnce = 4;

// 16 floats, and lane indices for __builtin_shuffle.
typedef float Lanes16 __attribute__((vector_size(64)));
typedef int32_t LaneIndex16 __attribute__((vector_size(64)));

// One step of a 16 x 16 transpose, on rows a = i and b = i + S: the S x S blocks off the
// diagonal of each 2S x 2S tile trade places (a takes b's lanes where the lane index has
// bit S set, b takes a's where it is clear). Steps S = 8, 4, 2, 1 turn rows into columns.
template <int S>
inline void swapBlocks(Lanes16& a, Lanes16& b) {
  LaneIndex16 low, high;
  for (int lane = 0; lane < 16; ++lane) {
    low[lane] = (lane & S) ? 16 + lane - S : lane;
    high[lane] = (lane & S) ? 16 + lane : lane + S;
  }
  const Lanes16 x = __builtin_shuffle(a, b, low);
  const Lanes16 y = __builtin_shuffle(a, b, high);
  a = x;
  b = y;
}

template <int S>
inline void swapStep(Lanes16 v[16]) {
  for (int i = 0; i < 16; ++i) {
    if ((i & S) == 0) swapBlocks<S>(v[i], v[i + S]);
  }
}

// v[r][c] becomes v[c][r].
inline void transpose16(Lanes16 v[16]) {
  swapStep<8>(v);
  swapStep<4>(v);
  swapStep<2>(v);
  swapStep<1>(v);
}

// 16 floats from each of kBlock rows (row r at rows + r * rowStride) into lanes:
// lanes[c * kBlock + r] = row r's float c. One 16 x 16 transpose in registers: whole-line
// loads and stores.
inline void tileToLanes(const float* rows, int64_t rowStride, float* __restrict lanes) {
  Lanes16 v[16];
  for (int64_t r = 0; r < 16; ++r) std::memcpy(&v[r], rows + r * rowStride, sizeof(Lanes16));
  transpose16(v);
  for (int64_t c = 0; c < 16; ++c) std::memcpy(lanes + c * kBlock, &v[c], sizeof(Lanes16));
}

// block[e * kBlock + lane] = element e of example first + lane's F * D values (feature
// e / D, position e % D); absent lanes (past `count`) hold zeros.
__attribute__((always_inline)) inline void gatherBlock(InteractionRows t, int64_t first, int64_t count,
                                                       int64_t features, int64_t width, float* __restrict block) {
  const int64_t rowWidth = features * width;
  // Feature by feature: the block's rows of one input are one run of memory (F inputs
  // read example by example would be F streams at once).
  if (HB_INTERACTION_SHUFFLE_TRANSPOSE && count == kBlock && width % 16 == 0) {
    // 16 x 16 tiles turned in registers, not one float at a time.
    for (int64_t f = 0; f < features; ++f) {
      for (int64_t k0 = 0; k0 < width; k0 += 16) {
        tileToLanes(t.feature[f] + first * t.rowStride + k0, t.rowStride, block + (f * width + k0) * kBlock);
      }
    }
  } else {
    for (int64_t f = 0; f < features; ++f) {
      for (int64_t lane = 0; lane < count; ++lane) {
        const float* row = t.feature[f] + (first + lane) * t.rowStride;
        float* to = block + f * width * kBlock + lane;
        for (int64_t e = 0; e < width; ++e) to[e * kBlock] = row[e];
      }
    }
  }
  for (int64_t lane = count; lane < kBlock; ++lane) {
    for (int64_t e = 0; e < rowWidth; ++e) block[e * kBlock + lane] = 0.0f;
  }
}

// The most pairs whose block of dot products (64 bytes a pair) interactionBlock keeps
// before turning them into rows: 256 KiB, at home in L2 (DLRM's 27 features: 351 pairs).
// Beyond it the pairs go to the rows one by one (interactionBlockByLane): a block of all
// F(F-1)/2 pairs, made for every task, took 537 MB and 18 times as long at F = 4096 and
// batch 1 (the review's harness; 36.6 -> 679 ms).
constexpr int64_t kMaxBlockedPairs = 4096;

// Asks for the lines of the output rows of lanes i - 1, i - 1 + (F - 1), ... of the block,
// for writing, while row i's dot products are computed: each output row is a run of
// F(F-1)/2 floats nothing has touched since the last step, and its stores otherwise wait
// on those lines one by one. On a 2-vCPU Emerald Rapids Xeon VM, 27 features, one
// thread, builds alternated: batch 1024 x 16 480-510 -> 435-445 us, 4096 x 16
// 1.90-1.99 -> 1.70-1.79 ms, 4096 x 64 9.2-9.5 -> 8.4-8.6 ms (prefetching the next
// block's inputs as well saved nothing more). Rows longer than kMaxBlockedPairs pairs are
// left to the hardware's prefetchers (a row of F = 4096 is 33 MB).
inline void prefetchOutputRows(InteractionPairs z, int64_t first, int64_t count, int64_t features, int64_t i) {
  if (interactionPairCount(features) > kMaxBlockedPairs) return;
  const int64_t bytes = interactionPairCount(features) * int64_t(sizeof(float));
  for (int64_t lane = i - 1; lane < count; lane += features - 1) {
    const char* row = reinterpret_cast<const char*>(z.values + (first + lane) * z.rowStride);
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(row + b, 1, 3);
    __builtin_prefetch(row + bytes - 1, 1, 3);
  }
}

// The block's dot products of pairs (i, j) .. (i, j + N - 1), consecutive pair indices,
// into pairs[q * kBlock + lane]: each lane's sum from 0 in k order, a multiply then an add
// (-ffp-contract=off), as dense_math.h's dotInOrder. The N sums are independent chains of
// adds: with 4 of them the adds' latency, not the adders' throughput, set the pace.
// kContinue: the sums go on from the ones in `pairs` (a block's next columns, see
// interactionBlock), else from 0.
template <int64_t N, bool kContinue>
__attribute__((always_inline)) inline void pairDots(const float* __restrict block, int64_t i, int64_t j, int64_t width,
                                                    float* __restrict pairs) {
  Lanes16 acc[N];
  for (int64_t q = 0; q < N; ++q) {
    if (kContinue) std::memcpy(&acc[q], pairs + q * kBlock, sizeof(Lanes16));
    else acc[q] = Lanes16{};
  }
  const float* __restrict ti = block + i * width * kBlock;
  const float* __restrict tj = block + j * width * kBlock;
  for (int64_t k = 0; k < width; ++k) {
    Lanes16 a;
    std::memcpy(&a, ti + k * kBlock, sizeof(Lanes16));
    for (int64_t q = 0; q < N; ++q) {
      Lanes16 b;
      std::memcpy(&b, tj + (q * width + k) * kBlock, sizeof(Lanes16));
      acc[q] = acc[q] + a * b;
    }
  }
  for (int64_t q = 0; q < N; ++q) std::memcpy(pairs + q * kBlock, &acc[q], sizeof(Lanes16));
}

// Row i's pairs (i, 0) .. (i, i - 1) over `width` columns of `block`, into pairs[j * kBlock].
template <bool kContinue>
__attribute__((always_inline)) inline void rowPairDots(const float* __restrict block, int64_t i, int64_t width,
                                                       float* __restrict pairs) {
  int64_t j = 0;
  for (; j + kPairsAtOnce <= i; j += kPairsAtOnce) pairDots<kPairsAtOnce, kContinue>(block, i, j, width, pairs + j * kBlock);
  if (kPairsAtOnce > 4 && j + 4 <= i) {
    pairDots<4, kContinue>(block, i, j, width, pairs + j * kBlock);
    j += 4;
  }
  if (j + 2 <= i) {
    pairDots<2, kContinue>(block, i, j, width, pairs + j * kBlock);
    j += 2;
  }
  if (j < i) pairDots<1, kContinue>(block, i, j, width, pairs + j * kBlock);
}

// One block of `count` <= kBlock examples starting at `first`. The dot products go to
// pairBlock, one vector of the block's examples per pair, and from there to the examples'
// rows: 16 pairs at a time turned in registers and stored as whole lines, where writing
// each example's value on its own was as many stores as multiplies. With 8 chains, on a
// 2-vCPU EPYC VM (Zen 5), 27 features, builds alternated: batch 1024 x width 16 200-230
// -> 120 us, 4096 x 16 760-770 -> 410 us, 4096 x 64 2.76 -> 2.15 ms.
inline void interactionBlock(InteractionRows t, InteractionPairs z, int64_t first, int64_t count, int64_t features,
                             int64_t width, float* __restrict block, float* __restrict pairBlock) {
  // A full block of a width of whole tiles goes 16 columns at a time: the block's F x 16
  // columns (27 KiB for DLRM's 27) stay in L1 while every pair reads them, where all its
  // columns at once (110 KiB at width 64) came from L2 for each pair's row, 9 loads for
  // 16 multiplies and adds. Each pair's sums go on from where the last columns left them,
  // k in order: the same bits.
  const bool byTiles = HB_INTERACTION_SHUFFLE_TRANSPOSE && count == kBlock && width % 16 == 0;
  const int64_t columns = byTiles ? 16 : width;
  for (int64_t k0 = 0; k0 < width; k0 += columns) {
    if (byTiles) {
      for (int64_t f = 0; f < features; ++f) tileToLanes(t.feature[f] + first * t.rowStride + k0, t.rowStride, block + f * 16 * kBlock);
    } else {
      gatherBlock(t, first, count, features, width, block);
    }
    const bool lastColumns = k0 + columns == width;
    for (int64_t i = 1; i < features; ++i) {
      if (lastColumns) prefetchOutputRows(z, first, count, features, i);
      float* __restrict pairs = pairBlock + interactionPairIndex(i, 0) * kBlock;
      if (k0 == 0) rowPairDots<false>(block, i, columns, pairs);
      else rowPairDots<true>(block, i, columns, pairs);
    }
  }
  const int64_t pairCount = interactionPairCount(features);
  int64_t p0 = 0;
  if (HB_INTERACTION_SHUFFLE_TRANSPOSE && count == kBlock) {
    for (; p0 + 16 <= pairCount; p0 += 16) {
      Lanes16 v[16];
      for (int64_t r = 0; r < 16; ++r) std::memcpy(&v[r], pairBlock + (p0 + r) * kBlock, sizeof(Lanes16));
      transpose16(v);
      for (int64_t lane = 0; lane < kBlock; ++lane) std::memcpy(z.values + (first + lane) * z.rowStride + p0, &v[lane], sizeof(Lanes16));
    }
  }
  for (int64_t lane = 0; lane < count; ++lane) {
    float* row = z.values + (first + lane) * z.rowStride;
    for (int64_t p = p0; p < pairCount; ++p) row[p] = pairBlock[p * kBlock + lane];
  }
}

// One block of `count` <= kBlock examples starting at `first`, each example's values stored
// on their own: the builds without AVX-512, where pairBlock's 16-float vectors (two or four
// registers each) and its scalar copy-out ran at half this loop's speed (AVX2, 27 x 16 at
// batch 1024: 300 -> 610-640 us).
inline void interactionBlockByLane(InteractionRows t, InteractionPairs z, int64_t first, int64_t count, int64_t features,
                             int64_t width, float* __restrict block) {
  gatherBlock(t, first, count, features, width, block);
  for (int64_t i = 1; i < features; ++i) {
    prefetchOutputRows(z, first, count, features, i);
    const float* __restrict ti = block + i * width * kBlock;
    for (int64_t j = 0; j < i; j += kLanePairsAtOnce) {
      const int64_t together = j + kLanePairsAtOnce <= i ? kLanePairsAtOnce : i - j;
      float acc[kLanePairsAtOnce][kBlock] = {};
      if (together == kLanePairsAtOnce) {
        const float* __restrict t0 = block + (j + 0) * width * kBlock;
        const float* __restrict t1 = block + (j + 1) * width * kBlock;
        const float* __restrict t2 = block + (j + 2) * width * kBlock;
        const float* __restrict t3 = block + (j + 3) * width * kBlock;
        for (int64_t k = 0; k < width; ++k) {
          const int64_t at = k * kBlock;
          for (int64_t lane = 0; lane < kBlock; ++lane) {
            const float a = ti[at + lane];
            acc[0][lane] = addRn(acc[0][lane], mulRn(a, t0[at + lane]));
            acc[1][lane] = addRn(acc[1][lane], mulRn(a, t1[at + lane]));
            acc[2][lane] = addRn(acc[2][lane], mulRn(a, t2[at + lane]));
            acc[3][lane] = addRn(acc[3][lane], mulRn(a, t3[at + lane]));
          }
        }
      } else {
        for (int64_t q = 0; q < together; ++q) {
          const float* __restrict tj = block + (j + q) * width * kBlock;
          for (int64_t k = 0; k < width; ++k) {
            for (int64_t lane = 0; lane < kBlock; ++lane) {
              acc[q][lane] = addRn(acc[q][lane], mulRn(ti[k * kBlock + lane], tj[k * kBlock + lane]));
            }
          }
        }
      }
      for (int64_t q = 0; q < together; ++q) {
        const int64_t column = interactionPairIndex(i, j + q);
        for (int64_t lane = 0; lane < count; ++lane) z.values[(first + lane) * z.rowStride + column] = acc[q][lane];
      }
    }
  }
}

void interaction(InteractionRows t, InteractionPairs z, int64_t batch, int64_t features, int64_t width) {
  const int64_t blocks = (batch + kBlock - 1) / kBlock;
  const int64_t blockFloats = features * width * kBlock;
  const bool pairsInBlock = HB_INTERACTION_SHUFFLE_TRANSPOSE && interactionPairCount(features) <= kMaxBlockedPairs;
  // One block is ~F * F * D * 16 / 2 multiply-adds: a few blocks per task are enough.
  parallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> block(static_cast<size_t>(blockFloats));
    // Every pair's vector is written before it is read: no zeros needed.
    std::unique_ptr<float[]> pairBlock(pairsInBlock ? new float[size_t(interactionPairCount(features) * kBlock)] : nullptr);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t first = b * kBlock;
      const int64_t count = std::min(kBlock, batch - first);
      if (pairsInBlock) {
        interactionBlock(t, z, first, count, features, width, block.data(), pairBlock.get());
      } else {
        interactionBlockByLane(t, z, first, count, features, width, block.data());
      }
    }
  });
}

// dT[i, :] of one example, as dotInteractionGradElement computes it (tj: the example's F
// vectors), with the row's running sums in registers when its width is known here
// (kWidth > 0).
template <int64_t kWidth>
inline void interactionGradRow(const float* dz, const float* const* tj, int64_t features, int64_t i, int64_t width,
                               float* __restrict dti) {
  constexpr int64_t kAccumulators = kWidth > 0 ? kWidth : 1;
  if constexpr (kWidth > 0) {
    float acc[kAccumulators] = {};
    for (int64_t j = 0; j < features; ++j) {
      if (j == i) continue;
      const float g = dz[j < i ? interactionPairIndex(i, j) : interactionPairIndex(j, i)];
      const float* __restrict row = tj[j];
      for (int64_t k = 0; k < kWidth; ++k) acc[k] = addRn(acc[k], mulRn(g, row[k]));
    }
    for (int64_t k = 0; k < kWidth; ++k) dti[k] = acc[k];
  } else {
    for (int64_t k = 0; k < width; ++k) dti[k] = 0.0f;
    for (int64_t j = 0; j < features; ++j) {
      if (j == i) continue;
      const float g = dz[j < i ? interactionPairIndex(i, j) : interactionPairIndex(j, i)];
      const float* __restrict row = tj[j];
      for (int64_t k = 0; k < width; ++k) dti[k] = addRn(dti[k], mulRn(g, row[k]));
    }
  }
}

#if HB_INTERACTION_ROW_BLOCK_GRAD
// Rows of dT of one example, R at a time, each row V vectors (its width): every row t_j is
// loaded once for all R rows, and each of the R * V running sums is its own chain of adds.
// Each element is summed as dotInteractionGradElement sums it (from 0, j ascending, j ==
// its own row skipped, a multiply then an add), so the bits are the reference's. The j
// loop is cut where the pair index changes form: below the block every row's pairs (i, j)
// are consecutive in dZ; above it the block's pairs (j, i) are; within it the row that
// meets itself is skipped at compile time. The loops it replaces computed each pair's
// index and branched per j (a third of the row-pair loop's time in `perf annotate` was
// scalar work) and loaded each row for one or two rows of dT; the blocked loop turned
// every block into lanes and back. On a 2-vCPU Emerald Rapids Xeon VM, 27 features at
// batch 4096, one thread, builds alternated four times (median ms): AVX-512, width 8
// 2.5 -> 1.8, 16 2.2 -> 2.0, 24 5.5 -> 3.8, 32 5.0 -> 3.8, 48 10-14 -> 6-7, 64 8.7-10 ->
// 7.2-7.7 (2 threads 4.2-4.9 -> 3.5-3.8), 96 23-25 -> 12-13, 128 the same; held to AVX2,
// 16 4.2 -> 2.5, 64 14.4-15.6 -> 11.2-12.0, 128 33 -> 22 (the prefetch below included).
typedef float GradVec8 __attribute__((vector_size(8 * sizeof(float))));
#if HB_INTERACTION_GRAD_LANES == 16
typedef float GradVec16 __attribute__((vector_size(16 * sizeof(float))));
#endif

template <typename Vec>
constexpr int64_t lanesOf() {
  return int64_t(sizeof(Vec) / sizeof(float));
}

template <typename Vec, size_t... L>
inline Vec splatLanes(float value, std::index_sequence<L...>) {
  return Vec{((void)L, value)...};
}

// Columns [c0, c0 + V * lanes) of dT rows i0 .. i0 + R - 1 of one example: `rows` its F
// input vectors (`width` floats each, one after another), `dz` its pair gradients, `out[r]`
// where row i0 + r goes. Columns are independent sums, so a row is done a piece at a time.
template <typename Vec, int V, int R>
void gradRowBlock(const float* __restrict dz, const float* __restrict rows, int64_t width, int64_t c0, int64_t features,
                  int64_t i0, float* const* out) {
  constexpr int64_t kLanes = lanesOf<Vec>();
  rows += c0;
  Vec acc[R][V];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = Vec{};
  }
  const auto term = [&](int r, const Vec* x, float g) __attribute__((always_inline)) {
    const Vec b = splatLanes<Vec>(g, std::make_index_sequence<size_t(kLanes)>{});
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = acc[r][v] + b * x[v];
  };
  const auto load = [&](int64_t j, Vec* x) __attribute__((always_inline)) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) std::memcpy(&x[v], rows + j * width + v * kLanes, sizeof(Vec));
  };
  // j < i0: pair (i0 + r, j) at (i0 + r)(i0 + r - 1) / 2 + j.
  const float* below[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) below[r] = dz + interactionPairIndex(i0 + r, 0);
  for (int64_t j = 0; j < i0; ++j) {
    Vec x[V];
    load(j, x);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) term(r, x, below[r][j]);
  }
  // j = i0 + s: row r skips it when r == s; pair (i0 + r, j) for r > s, (j, i0 + r) for r < s.
#pragma GCC unroll 16
  for (int s = 0; s < R; ++s) {
    const int64_t j = i0 + s;
    Vec x[V];
    load(j, x);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      if (r == s) continue;
      term(r, x, r > s ? below[r][j] : dz[interactionPairIndex(j, i0 + r)]);
    }
  }
  // j >= i0 + R: pair (j, i0 + r) at j(j - 1) / 2 + i0 + r, the R of them side by side.
  for (int64_t j = i0 + R; j < features; ++j) {
    Vec x[V];
    load(j, x);
    const float* above = dz + interactionPairIndex(j, i0);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) term(r, x, above[r]);
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) std::memcpy(out[r] + c0 + v * kLanes, &acc[r][v], sizeof(Vec));
  }
}

// As many rows at once as their sums, one vector of a row and a multiplier fit the vector
// registers the loop may take (HB_INTERACTION_GRAD_REGISTERS; more spilled sums to the
// stack in the block's diagonal part), up to 8 (rows of one vector: 12 at once ran 5%
// slower than 4 to 10, 16 at once 15%; 27 features at batch 1024 and 4096, one thread).
template <int V>
constexpr int gradRowsAtOnce() {
  constexpr int rows = (HB_INTERACTION_GRAD_REGISTERS - 1) / (V + 1);
  return rows < 1 ? 1 : (rows > 8 ? 8 : rows);
}

template <typename Vec, int V, int... Rs>
void gradRowsDispatch(std::integer_sequence<int, Rs...>, int rows, const float* dz, const float* in, int64_t width,
                      int64_t c0, int64_t features, int64_t i0, float* const* out) {
  using Run = void (*)(const float*, const float*, int64_t, int64_t, int64_t, int64_t, float* const*);
  static constexpr Run byRows[] = {gradRowBlock<Vec, V, Rs + 1>...};
  byRows[rows - 1](dz, in, width, c0, features, i0, out);
}

// Columns [c0, c0 + V * lanes) of every row of one example's dT, R rows at a time.
template <typename Vec, int V>
void gradColumnsByRowBlocks(const float* dz, const float* in, int64_t width, int64_t c0, int64_t features,
                            float* const* out) {
  constexpr int kRows = gradRowsAtOnce<V>();
  for (int64_t i0 = 0; i0 < features; i0 += kRows) {
    const int rows = int(std::min<int64_t>(kRows, features - i0));
    gradRowsDispatch<Vec, V>(std::make_integer_sequence<int, kRows>{}, rows, dz, in, width, c0, features, i0, out + i0);
  }
}

// Pieces of at most 4 vectors: per column, rows of 64 floats (4 vectors, 5 rows at once)
// ran faster than rows of 96 (6 vectors, 3 rows) or of 128 (8 vectors, 2 rows: 10% slower
// than the row loop it replaced).
constexpr int64_t kRowBlockVectors = 4;

// Columns [c0, c0 + vectors * lanes) in pieces of up to kRowBlockVectors vectors.
template <typename Vec>
void gradColumnsOf(const float* dz, const float* in, int64_t width, int64_t c0, int64_t vectors, int64_t features,
                   float* const* out) {
  constexpr int64_t kLanes = lanesOf<Vec>();
  for (; vectors > 0; c0 += kRowBlockVectors * kLanes, vectors -= kRowBlockVectors) {
    switch (std::min(vectors, kRowBlockVectors)) {
      case 1: gradColumnsByRowBlocks<Vec, 1>(dz, in, width, c0, features, out); break;
      case 2: gradColumnsByRowBlocks<Vec, 2>(dz, in, width, c0, features, out); break;
      case 3: gradColumnsByRowBlocks<Vec, 3>(dz, in, width, c0, features, out); break;
      default: gradColumnsByRowBlocks<Vec, 4>(dz, in, width, c0, features, out); break;
    }
  }
}

// The widths the row blocks take: whole vectors of 8 floats.
inline bool rowBlockWidth(int64_t width) { return width > 0 && width % lanesOf<GradVec8>() == 0; }

// dT of one example (`in`: its F vectors of `width` floats, one after another): vectors of
// 16 floats where the build has them, then one of 8 for the rest.
inline void gradExampleRowBlocks(const float* dz, const float* in, int64_t features, int64_t width, float* const* out) {
  int64_t c0 = 0;
#if HB_INTERACTION_GRAD_LANES == 16
  const int64_t wide = width / lanesOf<GradVec16>();
  gradColumnsOf<GradVec16>(dz, in, width, 0, wide, features, out);
  c0 = wide * lanesOf<GradVec16>();
#endif
  gradColumnsOf<GradVec8>(dz, in, width, c0, (width - c0) / lanesOf<GradVec8>(), features, out);
}
#endif

#if HB_INTERACTION_BLOCKED_GRAD
// Floats past a block's end that interactionGradBlock may read (and ignore): its last
// chunk of 16 columns when the width is not a multiple of 16.
constexpr int64_t kBlockedGradPadding = 16 * kBlock;

// dT of one full block of kBlock examples, one vector lane per example (gatherBlock's
// layout): per row i, 16 of its columns at a time, each column's running sum a vector of
// the block's examples. Each lane sums as interactionGradRow does (from 0, j ascending,
// j == i skipped, one rounding per multiply and per add), so the bits are the same. The
// loop is 16 vector multiplies and adds whatever the width, where the row loop holds its
// sums in registers only for the widths it has code for (16, 32, 64, 128) and ran the
// others' through memory, one store and reload per term. And at 16, GCC made the row-pair
// loop (since replaced) into scalar multiplies and adds between shuffles (vmulss / vaddss in
// `perf annotate`), 4-5x the forward pass; a change elsewhere in this file let it come out
// as vectors again (1.1-1.2 ms against the blocked path's 1.0-1.2), so 16 is blocked too,
// rather than hang on that. A width that is not a multiple of 16 computes its last chunk
// whole (the columns past the row read the next feature's, or the padding) and keeps the
// columns it has. On a 2-vCPU EPYC VM (Zen 5), 27 features at batch 4096, builds
// alternated: width 16 5.2-5.6 -> 1.0-1.1 ms, 4 4.6-4.7 -> 1.1, 8 4.5-4.8 -> 1.1-1.4, 24
// 6.2-6.4 -> 2.6-2.7, 48 5.8-6.2 -> 4.5-4.7, 96 9.7-11.7 -> 8.6-9.0. Since then the row
// blocks above take every width of whole vectors of 8 floats, faster still on an Emerald
// Rapids Xeon; this loop keeps the others (4, 12, 57, ...).
inline void interactionGradBlock(InteractionPairGrads dz, InteractionGradRows dt, int64_t first, int64_t features,
                                 int64_t width, const float* __restrict block, float* __restrict pairBlock) {
  const int64_t pairs = interactionPairCount(features);
  // pairBlock[p * kBlock + lane] = dZ[first + lane, p].
  int64_t p0 = 0;
  for (; p0 + 16 <= pairs; p0 += 16) tileToLanes(dz.values + first * dz.rowStride + p0, dz.rowStride, pairBlock + p0 * kBlock);
  for (int64_t lane = 0; lane < kBlock; ++lane) {
    const float* g = dz.values + (first + lane) * dz.rowStride;
    for (int64_t p = p0; p < pairs; ++p) pairBlock[p * kBlock + lane] = g[p];
  }
  for (int64_t i = 0; i < features; ++i) {
    for (int64_t k0 = 0; k0 < width; k0 += 16) {
      Lanes16 acc[16];
#pragma GCC unroll 16
      for (int64_t c = 0; c < 16; ++c) acc[c] = Lanes16{};
      for (int64_t j = 0; j < features; ++j) {
        if (j == i) continue;
        Lanes16 g;
        std::memcpy(&g, pairBlock + (j < i ? interactionPairIndex(i, j) : interactionPairIndex(j, i)) * kBlock,
                    sizeof(Lanes16));
        const float* __restrict tj = block + (j * width + k0) * kBlock;
#pragma GCC unroll 16
        for (int64_t c = 0; c < 16; ++c) {
          Lanes16 x;
          std::memcpy(&x, tj + c * kBlock, sizeof(Lanes16));
          acc[c] = acc[c] + g * x;  // -ffp-contract=off: a multiply, then an add
        }
      }
      transpose16(acc);
      // A whole chunk's 64 bytes in one store each: a length known only at run time made
      // the copies `rep movsq`, a quarter of this loop's time (`perf annotate`; batch 1024
      // x 27 x 16: 256-296 -> 215-220 us, 4096: 1.17-1.20 -> 0.84-0.85 ms).
      if (width - k0 >= 16) {
        for (int64_t lane = 0; lane < kBlock; ++lane) {
          std::memcpy(dt.feature[i] + (first + lane) * dt.rowStride + k0, &acc[lane], sizeof(Lanes16));
        }
      } else {
        const size_t columnBytes = size_t(width - k0) * sizeof(float);
        for (int64_t lane = 0; lane < kBlock; ++lane) {
          std::memcpy(dt.feature[i] + (first + lane) * dt.rowStride + k0, &acc[lane], columnBytes);
        }
      }
    }
  }
}
#endif

// Examples per block of the gradient: their F input rows are copied into one buffer,
// feature by feature (each input's rows for the block are one run of memory), so the
// loops read contiguous rows. Reading the F inputs where they are, example by example,
// is F streams whose rows sit at the same page offsets, where they evict each other from
// L1 (with F output streams as well: 1.6x slower for DLRM's 27). The gradient rows are
// written where they go, each once, whole: staging them in a second buffer and copying
// them out cost more (DLRM's 27 x 64 at batch 4096 on a 2-vCPU EPYC VM: 4.7-5.1 -> 4.0-4.5
// ms with the row pairs the row blocks replaced; the concatenation a stacked [B, F * D] input needs costs
// more than the input copy; see interaction.ts).
constexpr int64_t kGradBlock = 16;

// Asks for example `e`'s inputs and pair gradients (of the next block) while this block's
// are computed: the copies into the block otherwise wait on memory row by row.
inline void prefetchGradInputs(InteractionPairGrads dz, InteractionRows t, int64_t e, int64_t features, int64_t width,
                               int64_t batch) {
  if (e >= batch) return;
  const int64_t rowBytes = width * int64_t(sizeof(float));
  for (int64_t f = 0; f < features; ++f) {
    const char* row = reinterpret_cast<const char*>(t.feature[f] + e * t.rowStride);
    for (int64_t b = 0; b < rowBytes; b += 64) __builtin_prefetch(row + b, 0, 2);
    __builtin_prefetch(row + rowBytes - 1, 0, 2);
  }
  const char* g = reinterpret_cast<const char*>(dz.values + e * dz.rowStride);
  const int64_t gBytes = interactionPairCount(features) * int64_t(sizeof(float));
  for (int64_t b = 0; b < gBytes; b += 64) __builtin_prefetch(g + b, 0, 2);
  __builtin_prefetch(g + gBytes - 1, 0, 2);
}

// `width` floats: a copy of a fixed size for the widths DLRMs use (a few vector moves where
// a size known only at run time is a call to memcpy per row: 432 per block of DLRM's 27).
inline void copyFloats(float* __restrict to, const float* __restrict from, int64_t width) {
  switch (width) {
    case 16: return void(std::memcpy(to, from, 16 * sizeof(float)));
    case 32: return void(std::memcpy(to, from, 32 * sizeof(float)));
    case 64: return void(std::memcpy(to, from, 64 * sizeof(float)));
    case 128: return void(std::memcpy(to, from, 128 * sizeof(float)));
    default: return void(std::memcpy(to, from, size_t(width) * sizeof(float)));
  }
}

void interactionGrad(InteractionPairGrads dz, InteractionRows t, InteractionGradRows dt, int64_t batch, int64_t features,
                     int64_t width) {
  const int64_t rowWidth = features * width;
  const int64_t blocks = (batch + kGradBlock - 1) / kGradBlock;
  const int64_t blockWork = std::max<int64_t>(1, kGradBlock * features * features * width);
#if HB_INTERACTION_ROW_BLOCK_GRAD
  const bool rowBlocks = rowBlockWidth(width);
#else
  const bool rowBlocks = false;
#endif
#if HB_INTERACTION_BLOCKED_GRAD
  static_assert(kGradBlock == kBlock, "the blocked gradient reads gatherBlock's blocks");
  // Widths of whole vectors of 8 floats go to the row blocks; every other is blocked.
  const bool blocked = !rowBlocks;
  const int64_t padding = blocked ? kBlockedGradPadding : 0;
#else
  const bool blocked = false;
  const int64_t padding = 0;
#endif
  parallelFor(blocks, std::max<int64_t>(1, (int64_t(1) << 15) / blockWork), [&](int64_t k0, int64_t k1) {
    std::unique_ptr<float[]> in(new float[size_t(kGradBlock * rowWidth + padding)]);
    // What the blocked gradient reads past a block: zeros, never written.
    std::fill(in.get() + kGradBlock * rowWidth, in.get() + kGradBlock * rowWidth + padding, 0.0f);
    std::unique_ptr<const float*[]> rows(new const float*[size_t(features)]);
    std::unique_ptr<float*[]> outRows(new float*[size_t(features)]);
    std::unique_ptr<float[]> pairBlock(blocked ? new float[size_t(kBlock * interactionPairCount(features))] : nullptr);
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t first = k * kGradBlock;
      const int64_t count = std::min(kGradBlock, batch - first);
#if HB_INTERACTION_BLOCKED_GRAD
      if (blocked && count == kBlock) {
        gatherBlock(t, first, count, features, width, in.get());
        interactionGradBlock(dz, dt, first, features, width, in.get(), pairBlock.get());
        continue;
      }
#endif
      for (int64_t f = 0; f < features; ++f) {
        for (int64_t e = 0; e < count; ++e) {
          copyFloats(in.get() + e * rowWidth + f * width, t.feature[f] + (first + e) * t.rowStride, width);
        }
      }
      for (int64_t e = 0; e < count; ++e) {
        const float* g = dz.values + (first + e) * dz.rowStride;
        if (rowBlocks && k + 1 < k1) prefetchGradInputs(dz, t, first + kGradBlock + e, features, width, batch);
#if HB_INTERACTION_ROW_BLOCK_GRAD
        if (rowBlocks) {
          for (int64_t f = 0; f < features; ++f) outRows[f] = dt.feature[f] + (first + e) * dt.rowStride;
          gradExampleRowBlocks(g, in.get() + e * rowWidth, features, width, outRows.get());
          continue;
        }
#endif
        for (int64_t f = 0; f < features; ++f) rows[f] = in.get() + e * rowWidth + f * width;
        for (int64_t i = 0; i < features; ++i) {
          float* to = dt.feature[i] + (first + e) * dt.rowStride;
          switch (width) {
            case 16: interactionGradRow<16>(g, rows.get(), features, i, width, to); break;
            case 32: interactionGradRow<32>(g, rows.get(), features, i, width, to); break;
            case 64: interactionGradRow<64>(g, rows.get(), features, i, width, to); break;
            case 128: interactionGradRow<128>(g, rows.get(), features, i, width, to); break;
            default: interactionGradRow<0>(g, rows.get(), features, i, width, to);
          }
        }
      }
    }
  });
}

}  // namespace HB_INTERACTION_NAMESPACE
