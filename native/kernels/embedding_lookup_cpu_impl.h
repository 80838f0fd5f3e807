// The CPU lookup kernel's body. embedding_lookup_cpu.cc includes it three times: for the
// baseline x86-64 / any target, compiled for AVX2, and for AVX-512 with vectors of 16
// floats (HB_LOOKUP_LANES), and picks one at run time. All do the same float operations
// in the same order (one rounding per multiply and per add, no FMA), so their results
// are bit-identical to each other and to CUDA's (a NaN's payload aside).
//
// Expects HB_LOOKUP_NAMESPACE to name the namespace to define it in, and
// HB_LOOKUP_MASKED_TAIL 1 or 0 (whether widths without a kernel of their own sum in
// registers; written for vectors of 8 floats).

namespace HB_LOOKUP_NAMESPACE {

// Every cache line the row touches, into L2 (locality 2: prefetcht1 on x86), not L1: see
// prefetchDistance. Rows of whole lines start on a line (host blocks are 64-byte
// aligned); a row of another width may start mid-line and reach one line past its size in
// lines, which the prefetch of its last byte covers.
inline void prefetchRow(const float* row, int64_t dim) {
  const char* bytes = reinterpret_cast<const char*>(row);
  const int64_t size = dim * static_cast<int64_t>(sizeof(float));
  for (int64_t offset = 0; offset < size; offset += 64) __builtin_prefetch(bytes + offset, 0, 2);
  if (size % 64 != 0) __builtin_prefetch(bytes + size - 1, 0, 2);
}

// HB_LOOKUP_LANES floats (8 unless the includer says): 8 are one AVX register, two SSE
// registers, or plain scalar code on other targets; 16 one AVX-512 register.
#ifdef HB_LOOKUP_LANES
constexpr int kFloatLanes = HB_LOOKUP_LANES;
#else
constexpr int kFloatLanes = 8;
#endif
typedef float FloatLanes __attribute__((vector_size(kFloatLanes * sizeof(float))));

inline FloatLanes loadLanes(const float* from) {
  FloatLanes lanes;
  std::memcpy(&lanes, from, sizeof(lanes));
  return lanes;
}

inline void storeLanes(float* to, FloatLanes lanes) { std::memcpy(to, &lanes, sizeof(lanes)); }

// A lane mask for FloatLanes: -1 keeps a lane's bits, 0 clears them.
typedef int32_t FloatMask __attribute__((vector_size(kFloatLanes * sizeof(float))));

// Calls addRow(row, weight) for each entry of the bag that counts, prefetching the rows
// `distance` entries ahead, and returns what the sum is divided by (1 under sum,
// or when no entry counted; x / 1 is x, so callers may skip that division). A bag whose
// splits are out of order or past the ids, an id at or past the table's rows and a NaN
// weight set `violated` and are skipped: nothing outside the arrays is read.
template <typename Id, bool kWeighted, typename AddRow>
inline float forEachBagRow(const EmbeddingLookupArgs& a, const Id* ids, int64_t bag, int64_t dim, int64_t distance,
                           bool& violated, AddRow addRow) {
  const int64_t begin = a.rowSplits[bag];
  const int64_t end = a.rowSplits[bag + 1];
  const int64_t numIds = a.numIds;
  if (begin < 0 || end < begin || end > numIds) {
    violated = true;
    return 1.0f;
  }
  const float* table = a.table;
  const uint64_t rows = static_cast<uint64_t>(a.rows);
  // Without weights every kept entry weighs 1, and the float sums of 1s that the weighted
  // path keeps are the count (up to 2^24, where a float sum of 1s stops growing): counting
  // keeps a serial chain of float adds off the loop.
  int64_t kept = 0;
  float weightSum = 0.0f;
  float squaredWeightSum = 0.0f;
  for (int64_t j = begin; j < end; ++j) {
    if (j + distance < numIds) {
      const Id ahead = ids[j + distance];
      if (static_cast<uint64_t>(static_cast<int64_t>(ahead)) < rows) prefetchRow(table + static_cast<int64_t>(ahead) * dim, dim);
    }
    const Id id = ids[j];
    const float weight = kWeighted ? a.weights[j] : 1.0f;
    if (kWeighted && std::isnan(weight)) {  // refused even where the id is pruned
      violated = true;
      continue;
    }
    // One unsigned compare finds both a negative id (pruned) and one past the table.
    if (static_cast<uint64_t>(static_cast<int64_t>(id)) >= rows) {
      if (id >= 0) violated = true;
      continue;
    }
    if (kWeighted) {
      if (!keepLookupEntry(id, weight, true, a.combiner)) continue;
      weightSum = addRn(weightSum, weight);
      squaredWeightSum = addRn(squaredWeightSum, mulRn(weight, weight));
    }
    ++kept;
    addRow(table + static_cast<int64_t>(id) * dim, weight);
  }
  if (kept == 0 || a.combiner == Combiner::Sum) return 1.0f;
  if (!kWeighted) weightSum = squaredWeightSum = static_cast<float>(std::min<int64_t>(kept, int64_t(1) << 24));
  return combinerDivisor(a.combiner, weightSum, squaredWeightSum);
}

// acc[k] += row[k] * weight (clipped to maxNorm first), one rounding per operation.
template <bool kWeighted, bool kClipped>
inline void addWeightedRow(float* __restrict acc, const float* __restrict row, int64_t dim, float weight, float maxNorm) {
  if (kClipped) {
    const float divisor = clipByNormDivisor(row, dim, maxNorm);
    for (int64_t k = 0; k < dim; ++k) acc[k] = addRn(acc[k], mulRn(clipByNorm(row[k], maxNorm, divisor), weight));
  } else if (kWeighted) {
    for (int64_t k = 0; k < dim; ++k) acc[k] = addRn(acc[k], mulRn(row[k], weight));
  } else {
    for (int64_t k = 0; k < dim; ++k) acc[k] = addRn(acc[k], row[k]);
  }
}

// kDim > 0 (a multiple of kFloatLanes): the row width is known at compile time, so a bag's running
// sum is kDim / kFloatLanes vectors held in registers. (A float array here was kept on
// the stack: zeroed with rep stos, stored and copied out per bag, and those stores held
// back the prefetches of the rows ahead: 2.5x slower on 1-id bags.) Vector adds and
// multiplies round once per lane, as the scalar code does. kDim < 0 (HB_LOOKUP_MASKED_TAIL):
// the widths of -kDim vectors, 8 * (-kDim - 1) + 1 to 8 * -kDim floats, the last vector
// cut to the row. kDim == 0: any width, summed in the output row.
template <typename Id, bool kWeighted, bool kClipped, int kDim>
inline void lookupBag(const EmbeddingLookupArgs& a, const Id* ids, int64_t bag, int64_t distance, bool& violated) {
  const float maxNorm = a.maxNorm;
  if constexpr (kDim > 0) {
    static_assert(kDim % kFloatLanes == 0, "fixed widths are whole vectors");
    constexpr int kVectors = kDim / kFloatLanes;
    FloatLanes acc[kVectors];
#pragma GCC unroll 16
    for (int v = 0; v < kVectors; ++v) acc[v] = FloatLanes{};
    const float divisor = forEachBagRow<Id, kWeighted>(a, ids, bag, kDim, distance, violated, [&](const float* row, float weight) {
      const float clipDivisor = kClipped ? clipByNormDivisor(row, kDim, maxNorm) : 1.0f;
#pragma GCC unroll 16
      for (int v = 0; v < kVectors; ++v) {
        FloatLanes value = loadLanes(row + v * kFloatLanes);
        if (kClipped) value = (value * maxNorm) / clipDivisor;
        if (kClipped || kWeighted) value = value * weight;
        acc[v] = acc[v] + value;
      }
    });
    float* out = a.out + bag * kDim;
#pragma GCC unroll 16
    for (int v = 0; v < kVectors; ++v) storeLanes(out + v * kFloatLanes, divisor != 1.0f ? acc[v] / divisor : acc[v]);
#if HB_LOOKUP_MASKED_TAIL
  } else if constexpr (kDim < 0) {
    // -kDim vectors, the last one part of the row. Its lanes past the row are read whole
    // from the table (the next row's floats) and zeroed, except for rows within a vector of
    // the table's end, whose last floats are read one by one: no read past the table (masked
    // loads would do it in one instruction, but AMD leaves faults on their masked-out lanes
    // to the implementation). Those lanes are never stored: the row's last floats are
    // written one by one, as the next bag's row may be another thread's. Unclipped only.
    static_assert(!kClipped && kFloatLanes == 8, "unclipped rows in vectors of 8 only");
    constexpr int kVectors = -kDim;
    constexpr int64_t kLast = (kVectors - 1) * kFloatLanes;  // where the last vector starts
    const int64_t dim = a.dim;
    const int tail = static_cast<int>(dim - kLast);  // 1..kFloatLanes
    FloatMask keep;
    for (int lane = 0; lane < kFloatLanes; ++lane) keep[lane] = lane < tail ? -1 : 0;
    // A row starting past this float of the table cannot load its last vector whole.
    const int64_t lastWholeLoad = a.rows * dim - kLast - kFloatLanes;
    FloatLanes acc[kVectors];
#pragma GCC unroll 16
    for (int v = 0; v < kVectors; ++v) acc[v] = FloatLanes{};
    const float divisor = forEachBagRow<Id, kWeighted>(a, ids, bag, dim, distance, violated, [&](const float* row, float weight) {
#pragma GCC unroll 16
      for (int v = 0; v < kVectors; ++v) {
        FloatLanes value;
        if (v + 1 < kVectors) {
          value = loadLanes(row + v * kFloatLanes);
        } else if (row - a.table <= lastWholeLoad) {
          value = reinterpret_cast<FloatLanes>(reinterpret_cast<FloatMask>(loadLanes(row + kLast)) & keep);
        } else {
          value = FloatLanes{};
          for (int lane = 0; lane < tail; ++lane) value[lane] = row[kLast + lane];
        }
        if (kWeighted) value = value * weight;
        acc[v] = acc[v] + value;
      }
    });
    float* out = a.out + bag * dim;
#pragma GCC unroll 16
    for (int v = 0; v < kVectors; ++v) {
      const FloatLanes result = divisor != 1.0f ? acc[v] / divisor : acc[v];
      if (v + 1 < kVectors) {
        storeLanes(out + v * kFloatLanes, result);
      } else {
        for (int lane = 0; lane < tail; ++lane) out[kLast + lane] = result[lane];
      }
    }
#endif
  } else {
    float* __restrict out = a.out + bag * a.dim;
    for (int64_t k = 0; k < a.dim; ++k) out[k] = 0.0f;
    const float divisor = forEachBagRow<Id, kWeighted>(a, ids, bag, a.dim, distance, violated, [&](const float* row, float weight) {
      addWeightedRow<kWeighted, kClipped>(out, row, a.dim, weight, maxNorm);
    });
    if (divisor != 1.0f) {
      for (int64_t k = 0; k < a.dim; ++k) out[k] = divRn(out[k], divisor);
    }
  }
}

template <typename Id, bool kWeighted, bool kClipped, int kDim>
bool lookupAllBags(const EmbeddingLookupArgs& a) {
  const Id* ids = static_cast<const Id*>(a.ids);
  const int64_t idsPerBag = a.batch > 0 ? std::max<int64_t>(1, a.numIds / a.batch) : 1;
  // Aim for chunks of ~16k gathered rows' worth of work so small batches stay on one
  // thread and large ones spread evenly.
  int64_t grain = std::max<int64_t>(1, 16384 / (idsPerBag * std::max<int64_t>(1, a.dim / 16)));
  // Random rows wait on memory, not on arithmetic: once each thread would get a few
  // thousand ids, every thread takes a share (a DLRM table's 4096 ids of dim 64 would
  // otherwise be one chunk, on one core).
  const int64_t threads = threadPoolSize();
  if (threads > 1 && a.numIds >= 2048 * threads) grain = std::min(grain, (a.batch + threads - 1) / threads);
  const int64_t distance = prefetchDistance(kDim > 0 ? kDim : a.dim);
  std::atomic<bool> violated{false};
  parallelFor(a.batch, grain, [&](int64_t first, int64_t last) {
    bool chunkViolated = false;
    for (int64_t bag = first; bag < last; ++bag) {
      lookupBag<Id, kWeighted, kClipped, kDim>(a, ids, bag, distance, chunkViolated);
    }
    if (chunkViolated) violated.store(true, std::memory_order_relaxed);
  });
  return !violated.load(std::memory_order_relaxed);
}

// kWideOnly: the widths of 32 floats and more held in registers, as the AVX-512 build
// takes them (every other width is left to the AVX2 build, and not compiled here).
template <typename Id, bool kWeighted, bool kClipped, bool kWideOnly>
bool dispatchWidth(const EmbeddingLookupArgs& a) {
  if constexpr (kWideOnly) {
    switch (a.dim) {
      case 32: return lookupAllBags<Id, kWeighted, kClipped, 32>(a);
      case 64: return lookupAllBags<Id, kWeighted, kClipped, 64>(a);
      case 128: return lookupAllBags<Id, kWeighted, kClipped, 128>(a);
      default: return lookupAllBags<Id, kWeighted, kClipped, 0>(a);  // callers do not send others
    }
  } else {
    switch (a.dim) {
      case 8: return lookupAllBags<Id, kWeighted, kClipped, 8>(a);
      case 16: return lookupAllBags<Id, kWeighted, kClipped, 16>(a);
      case 32: return lookupAllBags<Id, kWeighted, kClipped, 32>(a);
      case 64: return lookupAllBags<Id, kWeighted, kClipped, 64>(a);
      case 128: return lookupAllBags<Id, kWeighted, kClipped, 128>(a);
      default: break;
    }
#if HB_LOOKUP_MASKED_TAIL
    if constexpr (!kClipped) {
      switch ((a.dim + kFloatLanes - 1) / kFloatLanes) {
        case 1: return lookupAllBags<Id, kWeighted, false, -1>(a);
        case 2: return lookupAllBags<Id, kWeighted, false, -2>(a);
        case 3: return lookupAllBags<Id, kWeighted, false, -3>(a);
        case 4: return lookupAllBags<Id, kWeighted, false, -4>(a);
        case 5: return lookupAllBags<Id, kWeighted, false, -5>(a);
        case 6: return lookupAllBags<Id, kWeighted, false, -6>(a);
        case 7: return lookupAllBags<Id, kWeighted, false, -7>(a);
        case 8: return lookupAllBags<Id, kWeighted, false, -8>(a);
        default: break;
      }
    }
#endif
    return lookupAllBags<Id, kWeighted, kClipped, 0>(a);
  }
}

template <typename Id, bool kWideOnly>
bool dispatchVariants(const EmbeddingLookupArgs& a) {
  const bool weighted = a.weights != nullptr;
  const bool clipped = a.maxNorm > 0.0f;
  if (clipped) return weighted ? dispatchWidth<Id, true, true, kWideOnly>(a) : dispatchWidth<Id, false, true, kWideOnly>(a);
  return weighted ? dispatchWidth<Id, true, false, kWideOnly>(a) : dispatchWidth<Id, false, false, kWideOnly>(a);
}

// kWideOnly: built for rows of 32, 64 and 128 floats only (see dispatchWidth). A template,
// so that a build instantiates only the widths it is called for.
template <bool kWideOnly = false>
bool embeddingLookup(const EmbeddingLookupArgs& args) {
  return args.idsAreInt64 ? dispatchVariants<int64_t, kWideOnly>(args) : dispatchVariants<int32_t, kWideOnly>(args);
}

}  // namespace HB_LOOKUP_NAMESPACE
