// The optimizer updates' loops, included once per instruction set by sparse_grad_cpu.cc
// inside namespace HB_UPDATE_NAMESPACE: the rules are optimizer_rules.h's, one rounding per
// operation (no FMA), so every variant writes the same bits.

namespace HB_UPDATE_NAMESPACE {

template <OptimizerKind K>
void denseElements(const OptimizerHyper& h, const OptimizerTarget& t, const float* grad) {
  parallelFor(t.rows * t.width, kElementGrain, [&](int64_t i0, int64_t i1) {
    float* s0 = t.s0;
    float* s1 = t.s1;
    for (int64_t i = i0; i < i1; ++i) applyElementOf<K>(h, t.var + i, s0 ? s0 + i : nullptr, s1 ? s1 + i : nullptr, grad[i]);
  });
}

// One touched row of rule K (all but non-lazy Adam).
template <OptimizerKind K>
inline void sparseRow(const OptimizerHyper& h, const OptimizerTarget& t, int64_t r, const float* g) {
  const int64_t w = t.width;
  float* var = t.var + r * w;
  if (K == OptimizerKind::RowwiseAdagrad) {
    applyRowwiseAdagradRow(h, var, t.s0 + r, g, w);
  } else if (K == OptimizerKind::Adam) {
    for (int64_t k = 0; k < w; ++k) lazyAdamElement(h, var + k, t.s0 + r * w + k, t.s1 + r * w + k, g[k]);
  } else if (K == OptimizerKind::GradientDescent) {
    for (int64_t k = 0; k < w; ++k) applyElementOf<K>(h, var + k, nullptr, nullptr, g[k]);
  } else if (K == OptimizerKind::Momentum || K == OptimizerKind::Adagrad) {
    float* s0 = t.s0 + r * w;
    for (int64_t k = 0; k < w; ++k) applyElementOf<K>(h, var + k, s0 + k, nullptr, g[k]);
  } else {
    float* s0 = t.s0 + r * w;
    float* s1 = t.s1 + r * w;
    for (int64_t k = 0; k < w; ++k) applyElementOf<K>(h, var + k, s0 + k, s1 + k, g[k]);
  }
}

// Asks for table row r of the variable and its slots, a few updates before rule K writes
// them (the rows of a large table are scattered). Always inlined: GCC proves a function
// that only prefetches free of side effects and deletes the calls to it, which had left
// every rule but RowwiseAdagrad without its prefetches (twice as slow on DLRM's tables).
template <OptimizerKind K>
[[gnu::always_inline]] inline void prefetchForUpdate(const OptimizerTarget& t, int64_t r) {
  const int64_t w = t.width;
  for (int64_t offset = 0; offset < w; offset += 16) {
    __builtin_prefetch(t.var + r * w + offset, 1, 3);
    if (t.s0 && K != OptimizerKind::RowwiseAdagrad) __builtin_prefetch(t.s0 + r * w + offset, 1, 3);
    if (t.s1) __builtin_prefetch(t.s1 + r * w + offset, 1, 3);
  }
}

template <OptimizerKind K>
void sparseRows(const OptimizerHyper& h, const OptimizerTarget& t, const SparseRows& grads) {
  const int64_t w = t.width;
  // About 64 cache lines of rows and slots asked for ahead, 8 to 32 rows: at 8 rows, narrow
  // rows had too few lines in flight (DLRM's 26 tables of 10000 x 16 at batch 1024, a
  // profiled scratch, builds alternated three times: lookup_backward_apply 721-782 -> 669-709
  // us a step at 32 rows; 8 rows are already 64 lines at width 64 with Adagrad).
  const int64_t linesPerRow =
      (w + 15) / 16 * (1 + (t.s0 != nullptr && K != OptimizerKind::RowwiseAdagrad) + (t.s1 != nullptr));
  const int64_t ahead = std::min<int64_t>(32, std::max<int64_t>(8, 64 / std::max<int64_t>(1, linesPerRow)));
  parallelFor(grads.n, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, w)), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      if (i + ahead < i1) prefetchForUpdate<K>(t, grads.rows[i + ahead]);
      sparseRow<K>(h, t, grads.rows[i], grads.values + i * w);
    }
  });
}

}  // namespace HB_UPDATE_NAMESPACE
