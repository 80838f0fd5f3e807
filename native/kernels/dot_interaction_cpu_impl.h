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
template <int64_t N>
__attribute__((always_inline)) inline void pairDots(const float* __restrict block, int64_t i, int64_t j, int64_t width,
                                                    float* __restrict pairs) {
  Lanes16 acc[N];
  for (int64_t q = 0; q < N; ++q) acc[q] = Lanes16{};
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

// One block of `count` <= kBlock examples starting at `first`. The dot products go to
// pairBlock, one vector of the block's examples per pair, and from there to the examples'
// rows: 16 pairs at a time turned in registers and stored as whole lines, where writing
// each example's value on its own was as many stores as multiplies. With 8 chains, on a
// 2-vCPU EPYC VM (Zen 5), 27 features, builds alternated: batch 1024 x width 16 200-230
// -> 120 us, 4096 x 16 760-770 -> 410 us, 4096 x 64 2.76 -> 2.15 ms.
inline void interactionBlock(InteractionRows t, InteractionPairs z, int64_t first, int64_t count, int64_t features,
                             int64_t width, float* __restrict block, float* __restrict pairBlock) {
  gatherBlock(t, first, count, features, width, block);
  for (int64_t i = 1; i < features; ++i) {
    prefetchOutputRows(z, first, count, features, i);
    float* __restrict pairs = pairBlock + interactionPairIndex(i, 0) * kBlock;
    int64_t j = 0;
    for (; j + kPairsAtOnce <= i; j += kPairsAtOnce) pairDots<kPairsAtOnce>(block, i, j, width, pairs + j * kBlock);
    if (kPairsAtOnce > 4 && j + 4 <= i) {
      pairDots<4>(block, i, j, width, pairs + j * kBlock);
      j += 4;
    }
    if (j + 2 <= i) {
      pairDots<2>(block, i, j, width, pairs + j * kBlock);
      j += 2;
    }
    if (j < i) pairDots<1>(block, i, j, width, pairs + j * kBlock);
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

// dT[i, :] and dT[i + 1, :] of one example together, each as interactionGradRow makes it
// (its j in ascending order, j == its own row skipped): one load of each row t_j feeds
// both, and their two sets of running sums are independent chains, so the adds' latency
// is hidden where one row's chains alone would wait on it.
template <int64_t kWidth>
inline void interactionGradRowPair(const float* dz, const float* const* tj, int64_t features, int64_t i,
                                   float* __restrict dti, float* __restrict dtNext) {
  float first[kWidth] = {};
  float second[kWidth] = {};
  for (int64_t j = 0; j < features; ++j) {
    const float* __restrict row = tj[j];
    if (j != i) {
      const float g = dz[j < i ? interactionPairIndex(i, j) : interactionPairIndex(j, i)];
      for (int64_t k = 0; k < kWidth; ++k) first[k] = addRn(first[k], mulRn(g, row[k]));
    }
    if (j != i + 1) {
      const float g = dz[j < i + 1 ? interactionPairIndex(i + 1, j) : interactionPairIndex(j, i + 1)];
      for (int64_t k = 0; k < kWidth; ++k) second[k] = addRn(second[k], mulRn(g, row[k]));
    }
  }
  for (int64_t k = 0; k < kWidth; ++k) dti[k] = first[k];
  for (int64_t k = 0; k < kWidth; ++k) dtNext[k] = second[k];
}

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
// loop below into scalar multiplies and adds between shuffles (vmulss / vaddss in
// `perf annotate`), 4-5x the forward pass; a change elsewhere in this file let it come out
// as vectors again (1.1-1.2 ms against the blocked path's 1.0-1.2), so 16 is blocked too,
// rather than hang on that. A width that is not a multiple of 16 computes its last chunk
// whole (the columns past the row read the next feature's, or the padding) and keeps the
// columns it has. On a 2-vCPU EPYC VM (Zen 5), 27 features at batch 4096, builds
// alternated: width 16 5.2-5.6 -> 1.0-1.1 ms, 4 4.6-4.7 -> 1.1, 8 4.5-4.8 -> 1.1-1.4, 24
// 6.2-6.4 -> 2.6-2.7, 48 5.8-6.2 -> 4.5-4.7, 96 9.7-11.7 -> 8.6-9.0. Widths 32, 64 and 128
// keep the row loop (the same within the noise).
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
// ms with the row pairs above; the concatenation a stacked [B, F * D] input needs costs
// more than the input copy; see interaction.ts).
constexpr int64_t kGradBlock = 16;

void interactionGrad(InteractionPairGrads dz, InteractionRows t, InteractionGradRows dt, int64_t batch, int64_t features,
                     int64_t width) {
  const int64_t rowWidth = features * width;
  const int64_t blocks = (batch + kGradBlock - 1) / kGradBlock;
  const int64_t blockWork = std::max<int64_t>(1, kGradBlock * features * features * width);
#if HB_INTERACTION_BLOCKED_GRAD
  static_assert(kGradBlock == kBlock, "the blocked gradient reads gatherBlock's blocks");
  // The row loop holds 32, 64 and 128 floats' sums in registers (as pairs of rows for 32
  // and 64); every other width is blocked.
  const bool blocked = width != 32 && width != 64 && width != 128;
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
          std::memcpy(in.get() + e * rowWidth + f * width, t.feature[f] + (first + e) * t.rowStride,
                      size_t(width) * sizeof(float));
        }
      }
      for (int64_t e = 0; e < count; ++e) {
        const float* g = dz.values + (first + e) * dz.rowStride;
        for (int64_t f = 0; f < features; ++f) rows[f] = in.get() + e * rowWidth + f * width;
        int64_t i = 0;
#if HB_INTERACTION_ROW_PAIRS
        // 2 x 64 running sums fill 8 of the 32 vector registers.
        if (width == 16 || width == 32 || width == 64) {
          for (; i + 1 < features; i += 2) {
            float* to = dt.feature[i] + (first + e) * dt.rowStride;
            float* next = dt.feature[i + 1] + (first + e) * dt.rowStride;
            if (width == 16) interactionGradRowPair<16>(g, rows.get(), features, i, to, next);
            else if (width == 32) interactionGradRowPair<32>(g, rows.get(), features, i, to, next);
            else interactionGradRowPair<64>(g, rows.get(), features, i, to, next);
          }
        }
#endif
        for (; i < features; ++i) {
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
