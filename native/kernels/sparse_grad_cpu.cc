#include <algorithm>
#include <cmath>
#include <vector>

#include "native/core/thread_pool.h"
#include "native/kernels/cpu_isa.h"
#include "native/kernels/lookup_gradient.h"
#include "native/kernels/sparse_grad.h"
#include "native/kernels/unique_partition.h"

namespace hb {

namespace {

// Entries grouped by the output row they add to, each group in entry order (a stable
// counting sort): rows can then be summed in parallel, each by one thread walking its
// entries in order, which keeps the sums deterministic and the writes sequential.
struct RowGroups {
  std::vector<int64_t> offsets;  // count + 1
  std::vector<int32_t> entries;  // n
};

RowGroups groupByRow(const int32_t* inverse, int64_t n, int64_t count) {
  RowGroups groups;
  groups.offsets.assign(size_t(count + 1), 0);
  for (int64_t e = 0; e < n; ++e) ++groups.offsets[size_t(inverse[e]) + 1];
  for (int64_t u = 0; u < count; ++u) groups.offsets[size_t(u) + 1] += groups.offsets[size_t(u)];
  std::vector<int64_t> next(groups.offsets.begin(), groups.offsets.end() - 1);
  groups.entries.resize(size_t(n));
  for (int64_t e = 0; e < n; ++e) groups.entries[size_t(next[size_t(inverse[e])]++)] = int32_t(e);
  return groups;
}

// The distinct values of `indices` (first-appearance order) and each one's entries.
struct DistinctRows {
  std::vector<int64_t> rows;
  RowGroups groups;
};

template <typename Id>
DistinctRows distinctRows(const Id* indices, int64_t n) {
  std::vector<Id> uniqueIds(static_cast<size_t>(n));
  std::vector<int32_t> inverse(static_cast<size_t>(n));
  const int64_t count = uniqueCpu(indices, n, uniqueIds.data(), inverse.data());
  DistinctRows out;
  out.rows.assign(uniqueIds.begin(), uniqueIds.begin() + count);
  out.groups = groupByRow(inverse.data(), n, count);
  return out;
}

// Entries ahead whose source rows are fetched while earlier ones are added: a hot row's
// entries point all over the source, and the rest come in first-appearance order.
constexpr int64_t kEntriesAhead = 8;

// out[u]: the sum of addEntry over row u's entries in entry order; rows in parallel, so
// the sums are deterministic and the writes sequential. Blocked (lookup_gradient.h's
// BlockedRunningSum, for a lookup's rows): a row of more than kSumBlock entries sums each
// block into `block` from 0 and adds the block sums in order; else every entry adds
// into the row from 0. sourceOf(e): the width floats entry e adds from, fetched
// kEntriesAhead entries early (the prefetches are in this loop, not in a helper, which
// GCC may delete: see prefetchForUpdate).
template <typename AddEntry, typename SourceOf>
void sumPerRow(const RowGroups& groups, int64_t width, float* out, bool blocked, const AddEntry& addEntry,
               const SourceOf& sourceOf) {
  const int64_t count = int64_t(groups.offsets.size()) - 1;
  const int64_t rowBytes = width * int64_t(sizeof(float));
  parallelFor(count, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, width)), [&](int64_t u0, int64_t u1) {
    const int64_t last = groups.offsets[u1];
    std::vector<float> block;
    for (int64_t u = u0; u < u1; ++u) {
      float* row = out + u * width;
      std::fill(row, row + width, 0.0f);
      const int64_t begin = groups.offsets[u];
      const int64_t end = groups.offsets[u + 1];
      const bool inBlocks = blocked && end - begin > kSumBlock;
      if (inBlocks) block.resize(size_t(width));
      for (int64_t first = begin; first < end; first += kSumBlock) {
        const int64_t stop = inBlocks ? std::min(end, first + kSumBlock) : end;
        float* into = inBlocks ? block.data() : row;
        if (inBlocks) std::fill(block.begin(), block.end(), 0.0f);
        for (int64_t k = first; k < stop; ++k) {
          if (k + kEntriesAhead < last) {
            const char* ahead = reinterpret_cast<const char*>(sourceOf(groups.entries[size_t(k + kEntriesAhead)]));
            for (int64_t offset = 0; offset < rowBytes; offset += 64) __builtin_prefetch(ahead + offset, 0, 3);
          }
          addEntry(into, groups.entries[size_t(k)]);
        }
        if (!inBlocks) break;
        for (int64_t c = 0; c < width; ++c) row[c] = addRn(row[c], block[size_t(c)]);
      }
    }
  });
}

// Rows' floats up to which a lookup's gradient is summed by scattering (scatterPerRow)
// rather than row by row (sumPerRow): the rows' sums and blocks then stay in L1 / L2.
constexpr int64_t kScatterElements = 1 << 15;

// sumPerRow's blocked sums (BlockedRunningSum's blocks, as sumPerRow blocks), taken in
// one pass over the entries in entry order, each added onto its row: the same terms in the
// same order per row, so the same bits (a NaN's sign aside, which the update refuses
// anyway). For lookups of few distinct rows (rows x width up to kScatterElements, however
// many entries), on the
// calling thread: read in entry order, the entries' sources (a batch's output gradients,
// which the step's last kernel left spread over the cores' caches) come as one stream
// that hardware prefetchers follow, where sumPerRow jumped between them. A table of 16
// floats at batch 1024 (DLRM's in `npx hb-ts train`): its whole backward and update took
// 44-47 us with the rows summed one by one, 38-39 us so.
template <typename AddEntry>
void scatterPerRow(const std::vector<int32_t>& inverse, int64_t count, int64_t width, float* out,
                   const AddEntry& addEntry) {
  std::fill(out, out + count * width, 0.0f);
  std::vector<int32_t> inBlock(static_cast<size_t>(count), 0);
  std::vector<int32_t> totalOf;  // by row: where its finished blocks' sum is in `totals`, -1: none yet
  std::vector<float> totals;
  const int64_t n = int64_t(inverse.size());
  for (int64_t e = 0; e < n; ++e) {
    const int32_t u = inverse[size_t(e)];
    float* row = out + int64_t(u) * width;
    if (inBlock[size_t(u)] == kSumBlock) {
      if (totalOf.empty()) totalOf.assign(size_t(count), -1);
      if (totalOf[size_t(u)] < 0) {
        // The first block's sum is the total so far (0 + block is block: a sum from 0 is never -0).
        totalOf[size_t(u)] = int32_t(totals.size() / size_t(width));
        totals.insert(totals.end(), row, row + width);
      } else {
        float* total = totals.data() + int64_t(totalOf[size_t(u)]) * width;
        for (int64_t c = 0; c < width; ++c) total[c] = addRn(total[c], row[c]);
      }
      std::fill(row, row + width, 0.0f);
      inBlock[size_t(u)] = 0;
    }
    addEntry(row, int32_t(e));
    ++inBlock[size_t(u)];
  }
  for (int64_t u = 0; u < int64_t(totalOf.size()); ++u) {
    if (totalOf[size_t(u)] < 0) continue;
    const float* total = totals.data() + int64_t(totalOf[size_t(u)]) * width;
    float* row = out + u * width;
    for (int64_t c = 0; c < width; ++c) row[c] = addRn(total[c], row[c]);
  }
}

template <typename Id>
RowGradients backwardTyped(const EmbeddingLookupArgs& a, const float* outGrad) {
  const Id* ids = static_cast<const Id*>(a.ids);
  const bool weighted = a.weights != nullptr;
  std::vector<BagGradientFactors> factors(size_t(a.batch));
  std::vector<Id> keptIds;
  std::vector<int32_t> keptBag;
  std::vector<float> keptWeight;
  keptIds.reserve(size_t(a.numIds));
  for (int64_t b = 0; b < a.batch; ++b) {
    factors[size_t(b)] = bagGradientFactors(ids, a.weights, a.rowSplits[b], a.rowSplits[b + 1], a.combiner);
    for (int64_t j = a.rowSplits[b]; j < a.rowSplits[b + 1]; ++j) {
      const float w = weighted ? a.weights[j] : 1.0f;
      if (!keepLookupEntry(ids[j], w, weighted, a.combiner)) continue;
      keptIds.push_back(ids[j]);
      keptBag.push_back(int32_t(b));
      keptWeight.push_back(w);
    }
  }
  const int64_t kept = int64_t(keptIds.size());
  const int64_t dim = a.dim;
  // The distinct rows first (a hash pass): whether the sums fit the scatter depends on them.
  std::vector<Id> uniqueIds(static_cast<size_t>(kept));
  std::vector<int32_t> inverse(static_cast<size_t>(kept));
  const int64_t count = uniqueCpu(keptIds.data(), kept, uniqueIds.data(), inverse.data());
  RowGradients out;
  out.rows.assign(uniqueIds.begin(), uniqueIds.begin() + count);
  out.values = Buffer::allocate(Device::cpu(), size_t(count) * size_t(dim) * sizeof(float));
  float* sums = static_cast<float*>(out.values->data());
  const auto bagGrad = [&](int32_t e) { return outGrad + int64_t(keptBag[size_t(e)]) * dim; };
  const auto addEntry = [&](float* row, int32_t e) {
    const float* g = bagGrad(e);
    const BagGradientFactors& f = factors[size_t(keptBag[e])];
    const float w = keptWeight[e];
    // The same call in each branch, with `weighted` a constant, so each loop vectorises.
    if (weighted) {
      for (int64_t c = 0; c < dim; ++c) row[c] = addRn(row[c], lookupGradContribution(g[c], true, a.combiner, f, w));
    } else {
      for (int64_t c = 0; c < dim; ++c) row[c] = addRn(row[c], lookupGradContribution(g[c], false, a.combiner, f, w));
    }
  };
  if (count * dim <= kScatterElements) {
    scatterPerRow(inverse, count, dim, sums, addEntry);
  } else {
    sumPerRow(groupByRow(inverse.data(), kept, count), dim, sums, true, addEntry, bagGrad);
  }
  return out;
}

template <typename Id>
SparseRows sumDuplicatesTyped(const Id* indices, int64_t n, const float* values, int64_t width, RowGradients* storage) {
  DistinctRows distinct = distinctRows(indices, n);
  storage->rows = std::move(distinct.rows);
  const int64_t count = int64_t(storage->rows.size());
  if (count == n) {
    // No repeats (gradients from the lookup's backward never have any): the values
    // are used as they are.
    return SparseRows{storage->rows.data(), values, n};
  }
  storage->values = Buffer::allocate(Device::cpu(), size_t(count * width) * sizeof(float));
  float* out = static_cast<float*>(storage->values->data());
  const auto valuesOf = [&](int32_t e) { return values + int64_t(e) * width; };
  // Each entry is a unit here, and units add in plain order (as the GPU combines them).
  sumPerRow(distinct.groups, width, out, false, [&](float* row, int32_t e) {
    const float* g = valuesOf(e);
    for (int64_t c = 0; c < width; ++c) row[c] = addRn(row[c], g[c]);
  }, valuesOf);
  return SparseRows{storage->rows.data(), out, count};
}

template <typename Id>
RowEntries groupEntriesTyped(const Id* indices, int64_t n, const float* values, int64_t width) {
  DistinctRows distinct = distinctRows(indices, n);
  const RowGroups& groups = distinct.groups;
  RowEntries out;
  out.rows = std::move(distinct.rows);
  out.offsets = groups.offsets;
  out.values = Buffer::allocate(Device::cpu(), size_t(n * width) * sizeof(float));
  float* grouped = static_cast<float*>(out.values->data());
  parallelFor(n, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, width)), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const float* from = values + int64_t(groups.entries[size_t(k)]) * width;
      std::copy(from, from + width, grouped + k * width);
    }
  });
  return out;
}

constexpr int64_t kElementGrain = 1 << 14;

#define HB_UPDATE_NAMESPACE portable
#include "native/kernels/sparse_update_cpu_impl.h"
#undef HB_UPDATE_NAMESPACE

#if defined(__x86_64__) && defined(__GNUC__)
// The same loops with 256-bit vectors (the square roots and divides of Adagrad and its
// kin were most of an update's work once its rows were in cache: DLRM's 26 tables took
// 5.9-6.1 ms with SSE, 3.5-3.7 ms with AVX2 and 4.0-4.2 ms with AVX-512 in a harness, so
// AVX-512 machines take these too). No FMA: the results do not change.
#pragma GCC push_options
#pragma GCC target("avx2")
#define HB_UPDATE_NAMESPACE avx2
#include "native/kernels/sparse_update_cpu_impl.h"
#undef HB_UPDATE_NAMESPACE
#pragma GCC pop_options
#endif

// Rule K's dense update, in the vector code the CPU takes.
template <OptimizerKind K>
void denseElementsOf(const OptimizerHyper& h, const OptimizerTarget& t, const float* grad) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpuTakesAvx2()) return avx2::denseElements<K>(h, t, grad);
#endif
  portable::denseElements<K>(h, t, grad);
}

// Rule K's update of the rows seen, in the vector code the CPU takes.
template <OptimizerKind K>
void sparseRowsOf(const OptimizerHyper& h, const OptimizerTarget& t, const SparseRows& grads) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpuTakesAvx2()) return avx2::sparseRows<K>(h, t, grads);
#endif
  portable::sparseRows<K>(h, t, grads);
}

}  // namespace

RowGradients embeddingLookupBackwardCpu(const EmbeddingLookupArgs& args, const float* outGrad) {
  return args.idsAreInt64 ? backwardTyped<int64_t>(args, outGrad) : backwardTyped<int32_t>(args, outGrad);
}

SparseRows sumDuplicateRowsCpu(const void* indices, bool indicesAreInt64, int64_t n, const float* values, int64_t width,
                               RowGradients* storage) {
  return indicesAreInt64 ? sumDuplicatesTyped(static_cast<const int64_t*>(indices), n, values, width, storage)
                         : sumDuplicatesTyped(static_cast<const int32_t*>(indices), n, values, width, storage);
}

RowEntries groupEntriesCpu(const void* indices, bool indicesAreInt64, int64_t n, const float* values, int64_t width) {
  return indicesAreInt64 ? groupEntriesTyped(static_cast<const int64_t*>(indices), n, values, width)
                         : groupEntriesTyped(static_cast<const int32_t*>(indices), n, values, width);
}

void applyGradientDescentEntriesCpu(const OptimizerHyper& h, const OptimizerTarget& t, const RowEntries& entries) {
  const int64_t w = t.width;
  const float* values = static_cast<const float*>(entries.values->data());
  parallelFor(int64_t(entries.rows.size()), std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, w)),
              [&](int64_t u0, int64_t u1) {
                for (int64_t u = u0; u < u1; ++u) {
                  float* var = t.var + entries.rows[u] * w;
                  for (int64_t k = entries.offsets[u]; k < entries.offsets[u + 1]; ++k) {
                    for (int64_t c = 0; c < w; ++c) {
                      applyElementOf<OptimizerKind::GradientDescent>(h, var + c, nullptr, nullptr, values[k * w + c]);
                    }
                  }
                }
              });
}

void applyDenseCpu(const OptimizerHyper& h, const OptimizerTarget& t, const float* grad) {
  switch (h.kind) {
    case OptimizerKind::GradientDescent: return denseElementsOf<OptimizerKind::GradientDescent>(h, t, grad);
    case OptimizerKind::Momentum: return denseElementsOf<OptimizerKind::Momentum>(h, t, grad);
    case OptimizerKind::Adagrad: return denseElementsOf<OptimizerKind::Adagrad>(h, t, grad);
    case OptimizerKind::Adam: return denseElementsOf<OptimizerKind::Adam>(h, t, grad);
    case OptimizerKind::Ftrl: return denseElementsOf<OptimizerKind::Ftrl>(h, t, grad);
    case OptimizerKind::RowwiseAdagrad:
      parallelFor(t.rows, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, t.width)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) applyRowwiseAdagradRow(h, t.var + r * t.width, t.s0 + r, grad + r * t.width, t.width);
      });
      return;
  }
}

void applySparseCpu(const OptimizerHyper& h, const OptimizerTarget& t, const SparseRows& grads) {
  if (h.kind == OptimizerKind::Adam && !h.lazy) {
    // TF's non-lazy sparse Adam: every row's moments decay, the seen rows accumulate,
    // every row moves.
    const int64_t total = t.rows * t.width;
    const int64_t w = t.width;
    parallelFor(total, kElementGrain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) adamDecay(h, t.s0 + i, t.s1 + i);
    });
    parallelFor(grads.n, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, w)), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t r = grads.rows[i];
        for (int64_t k = 0; k < w; ++k) adamAccumulate(h, t.s0 + r * w + k, t.s1 + r * w + k, grads.values[i * w + k]);
      }
    });
    parallelFor(total, kElementGrain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) adamMove(h, t.var + i, t.s0[i], t.s1[i]);
    });
    return;
  }
  switch (h.kind) {
    case OptimizerKind::GradientDescent: return sparseRowsOf<OptimizerKind::GradientDescent>(h, t, grads);
    case OptimizerKind::Momentum: return sparseRowsOf<OptimizerKind::Momentum>(h, t, grads);
    case OptimizerKind::Adagrad: return sparseRowsOf<OptimizerKind::Adagrad>(h, t, grads);
    case OptimizerKind::Adam: return sparseRowsOf<OptimizerKind::Adam>(h, t, grads);
    case OptimizerKind::Ftrl: return sparseRowsOf<OptimizerKind::Ftrl>(h, t, grads);
    case OptimizerKind::RowwiseAdagrad: return sparseRowsOf<OptimizerKind::RowwiseAdagrad>(h, t, grads);
  }
}

}  // namespace hb
