// The per-bag and per-entry math of the embedding lookup's backward, shared by the CPU
// kernel (sparse_grad_cpu.cc) and the CUDA one (cuda/embedding_backward.cu), so the CPU
// tests check the arithmetic the GPU runs and both give the same bits.
#pragma once

#include <cmath>
#include <cstdint>

#include "native/kernels/dense_math.h"
#include "native/kernels/embedding_combine.h"
#include "native/kernels/hb_host_device.h"

namespace hb {

// What a bag's output gradient is divided by (weighted: TF divides in the graph) or,
// without weights, multiplied by: SparseSegmentMeanGrad / SqrtNGrad scale by
// float(1 / N) and float(1 / sqrt(N)), computed in double.
struct BagGradientFactors {
  float divisor = 1.0f;
  float scale = 1.0f;
};

// The factors of a bag whose kept entries' weights sum to weightSum (and their squares
// to squaredWeightSum), summed in entry order as the forward does.
HB_HOST_DEVICE BagGradientFactors gradientFactors(bool weighted, float weightSum, float squaredWeightSum,
                                                  Combiner combiner) {
  BagGradientFactors f;
  if (combiner != Combiner::Sum) f.divisor = combinerDivisor(combiner, weightSum, squaredWeightSum);
  const double count = double(weightSum);  // unweighted: the number of kept ids, exactly
  if (!weighted && count > 0) {
    // Double division and sqrt are correctly rounded on both host and device.
    if (combiner == Combiner::Mean) f.scale = float(1.0 / count);
    if (combiner == Combiner::SqrtN) f.scale = float(1.0 / sqrt(count));
  }
  return f;
}

// The bag's kept entries [begin, end) visited in order, as the forward sums its weights.
template <typename Id>
HB_HOST_DEVICE BagGradientFactors bagGradientFactors(const Id* ids, const float* weights, int64_t begin, int64_t end,
                                                     Combiner combiner) {
  const bool weighted = weights != nullptr;
  float weightSum = 0.0f, squaredWeightSum = 0.0f;
  for (int64_t j = begin; j < end; ++j) {
    const float w = weighted ? weights[j] : 1.0f;
    if (!keepLookupEntry(ids[j], w, weighted, combiner)) continue;
    weightSum = addRn(weightSum, w);
    squaredWeightSum = addRn(squaredWeightSum, mulRn(w, w));
  }
  return gradientFactors(weighted, weightSum, squaredWeightSum, combiner);
}

// One kept entry's contribution to its row's gradient, column by column: g is the bag's
// output gradient at that column, weight the entry's weight (unused without weights).
HB_HOST_DEVICE float lookupGradContribution(float g, bool weighted, Combiner combiner, const BagGradientFactors& f,
                                            float weight) {
  if (weighted) return mulRn(combiner != Combiner::Sum ? divRn(g, f.divisor) : g, weight);
  if (combiner != Combiner::Sum) return mulRn(g, f.scale);
  return g;
}

// A row's gradient from one lookup is the sum of its kept entries' contributions, blocked
// as dense_math.h's sums are: in entry order, kSumBlock entries a block, each block summed
// from 0 and the block sums added in order. A row of up to kSumBlock entries is summed
// plainly in order. Under a power law one row can take a tenth of a batch's ids; blocked,
// a GPU sums a hot row's blocks on many multiprocessors at once and still gives the CPU's
// bits. The CPU kernels block whole rows; this is the same sum taken one term at a time.
struct BlockedRunningSum {
  float total = 0.0f;  // the finished blocks' sums, added in order
  float block = 0.0f;  // the current block's sum
  int32_t inBlock = 0;
  bool folded = false;

  HB_HOST_DEVICE void add(float x) {
    if (inBlock == kSumBlock) {
      total = addRn(total, block);
      block = 0.0f;
      inBlock = 0;
      folded = true;
    }
    block = addRn(block, x);
    ++inBlock;
  }

  // A sum from 0 is never -0, so 0 + block is block: a single block needs no add.
  HB_HOST_DEVICE float value() const { return folded ? addRn(total, block) : block; }
};

}  // namespace hb
