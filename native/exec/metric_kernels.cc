// Metric kernels, TF 1.15's tf.metrics update ops: "auc_accumulate" (the confusion
// counts at thresholds behind tf.metrics.auc), "mean_accumulate" (tf.metrics.mean), and
// "assert_finite" (tf.debugging.assert_all_finite). Accumulators are outputs that
// are read and written; each batch's sums are formed in float32 first, then added, as
// TF's reduce_sum then assign_add do.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/exec/kernel_def.h"
#include "native/kernels/finite_check.h"
#include "native/kernels/dense_math.h"

namespace hb {

namespace {

// Weights of n values: absent (1), one broadcast to all, or one per value.
struct Weights {
  const float* data = nullptr;
  bool broadcast = false;
  float at(int64_t i) const { return data ? data[broadcast ? 0 : i] : 1.0f; }
};

Weights weightsAt(const KernelArgs& args, size_t index, const char* kernel, int64_t n) {
  Weights w;
  if (!hasInput(args, index)) return w;
  const Tensor& t = args.in[index];
  HB_CHECK(t.size() == n || t.size() == 1, args.name, ": ", kernel, ": weights ", t.shapeString(),
           " must have 1 element or one per value (", n, ")");
  w.data = t.data<float>();
  w.broadcast = t.size() == 1 && n != 1;
  return w;
}

// Per-threshold sums: predictions are bucketed by how many thresholds lie below them
// (O(n log T)); a prediction in bucket k is positive at the k smallest thresholds.
// Buckets are summed over fixed blocks of predictions and the blocks combined in order,
// so the sums do not depend on the thread count.
// A step of no rows (a rank whose evaluation input ended, running the others' exchanges)
// adds nothing: not even the one value of a per-batch scalar such as the loss.
bool emptyStep(const KernelArgs& args) { return args.step != nullptr && args.step->batch == 0; }

void aucAccumulateKernel(KernelArgs& args) {
  if (emptyStep(args)) return;
  HB_CHECK((args.in.size() == 3 || args.in.size() == 4) && args.out.size() == 4, args.name,
           ": kernel auc_accumulate takes 3 or 4 inputs (labels, predictions, thresholds, weights) and 4 outputs "
           "(tp, fn, tn, fp), got ",
           args.in.size(), " and ", args.out.size());
  checkFloat32(args, "auc_accumulate");
  const Tensor& labels = args.in[0];
  const Tensor& predictions = args.in[1];
  const Tensor& thresholds = args.in[2];
  const int64_t n = predictions.size();
  const int64_t count = thresholds.size();
  HB_CHECK(labels.size() == n, args.name, ": auc_accumulate: labels ", labels.shapeString(), " and predictions ",
           predictions.shapeString(), " differ in size");
  static const char* const kOutputs[] = {"tp", "fn", "tn", "fp"};
  for (size_t k = 0; k < 4; ++k) {
    HB_CHECK(args.out[k].size() == count, args.name, ": auc_accumulate: accumulator ", kOutputs[k], " ",
             args.out[k].shapeString(), " must have one element per threshold (", count, ")");
  }
  const Weights w = weightsAt(args, 3, "auc_accumulate", n);
  const float* z = labels.data<float>();
  const float* p = predictions.data<float>();
  const float* t = thresholds.data<float>();
  // TF asserts predictions >= 0 and <= 1 before it counts anything.
  for (int64_t i = 0; i < n; ++i) {
    HB_CHECK(p[i] >= 0.0f && p[i] <= 1.0f, args.name, ": auc_accumulate: predictions must be in [0, 1], got ", p[i],
             " at index ", i);
  }
  for (int64_t s = 0; s < count; ++s) {
    HB_CHECK(!std::isnan(t[s]), args.name, ": auc_accumulate: threshold ", s, " is NaN");
  }
  if (count == 0) return;

  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return t[a] < t[b]; });
  std::vector<float> sorted(static_cast<size_t>(count));
  for (int64_t s = 0; s < count; ++s) sorted[size_t(s)] = t[order[size_t(s)]];

  // buckets[block][label][k], k in [0, count]: weight of the predictions with k
  // thresholds strictly below them (positive iff prediction > threshold).
  const int64_t buckets = count + 1;
  const int64_t blocks = std::max<int64_t>(1, (n + kSumBlock - 1) / kSumBlock);
  std::vector<float> sums(size_t(blocks * 2 * buckets), 0.0f);
  parallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      float* neg = sums.data() + b * 2 * buckets;
      float* pos = neg + buckets;
      for (int64_t i = b * kSumBlock; i < std::min(n, (b + 1) * kSumBlock); ++i) {
        const int64_t k = std::lower_bound(sorted.begin(), sorted.end(), p[i]) - sorted.begin();
        float* bucket = z[i] != 0.0f ? pos : neg;
        bucket[k] = addRn(bucket[k], w.at(i));
      }
    }
  });
  std::vector<float> neg(size_t(buckets), 0.0f), pos(size_t(buckets), 0.0f);
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t k = 0; k < buckets; ++k) {
      neg[size_t(k)] = addRn(neg[size_t(k)], sums[size_t(b * 2 * buckets + k)]);
      pos[size_t(k)] = addRn(pos[size_t(k)], sums[size_t((b * 2 + 1) * buckets + k)]);
    }
  }

  float* tp = args.out[0].data<float>();
  float* fn = args.out[1].data<float>();
  float* tn = args.out[2].data<float>();
  float* fp = args.out[3].data<float>();
  // At the s-th smallest threshold, buckets 0..s are predicted negative, s+1.. positive.
  float below = 0.0f, belowNeg = 0.0f;
  for (int64_t s = 0; s < count; ++s) {
    below = addRn(below, pos[size_t(s)]);
    belowNeg = addRn(belowNeg, neg[size_t(s)]);
    const int64_t out = order[size_t(s)];
    fn[out] = addRn(fn[out], below);
    tn[out] = addRn(tn[out], belowNeg);
  }
  float above = 0.0f, aboveNeg = 0.0f;
  for (int64_t s = count - 1; s >= 0; --s) {
    above = addRn(above, pos[size_t(s + 1)]);
    aboveNeg = addRn(aboveNeg, neg[size_t(s + 1)]);
    const int64_t out = order[size_t(s)];
    tp[out] = addRn(tp[out], above);
    fp[out] = addRn(fp[out], aboveNeg);
  }
}

// total += sum(v * w); count += sum(w) (the broadcast weights), or n without weights.
void meanAccumulateKernel(KernelArgs& args) {
  if (emptyStep(args)) return;
  HB_CHECK((args.in.size() == 1 || args.in.size() == 2) && args.out.size() == 2, args.name,
           ": kernel mean_accumulate takes 1 or 2 inputs (values, weights) and 2 outputs (total, count), got ",
           args.in.size(), " and ", args.out.size());
  checkFloat32(args, "mean_accumulate");
  HB_CHECK(args.out[0].size() == 1 && args.out[1].size() == 1, args.name, ": mean_accumulate: total ",
           args.out[0].shapeString(), " and count ", args.out[1].shapeString(), " must have one element each");
  const Tensor& values = args.in[0];
  const int64_t n = values.size();
  const Weights w = weightsAt(args, 1, "mean_accumulate", n);
  const float* v = values.data<float>();
  const float total = w.data ? blockedSum(n, [&](int64_t i) { return mulRn(v[i], w.at(i)); })
                             : blockedSum(n, [&](int64_t i) { return v[i]; });
  const float count = w.data ? blockedSum(n, [&](int64_t i) { return w.at(i); }) : float(n);
  float* pt = args.out[0].data<float>();
  float* pc = args.out[1].data<float>();
  pt[0] = addRn(pt[0], total);
  pc[0] = addRn(pc[0], count);
}

void assertFiniteKernel(KernelArgs& args) {
  checkArity(args, 1, 0, "assert_finite");
  checkFloat32(args, "assert_finite");
  const Tensor& x = args.in[0];
  const int64_t i = firstNonFiniteCpu(x.data<float>(), x.size());
  // Non-stateful, so the plan runs it before every update: nothing was applied yet.
  HB_CHECK_CODE(i < 0, NaN, args.name, " is NaN or infinite (", x.data<float>()[i < 0 ? 0 : i], " at index ", i, " of ",
                x.shapeString(), "); no update was applied");
}

}  // namespace

HB_REGISTER_KERNEL(KernelDef("auc_accumulate", aucAccumulateKernel, KernelPlacement::Host)
                       .input("labels", f32()).input("predictions", f32()).input("thresholds", f32())
                       .optionalInput("weights", f32())
                       .inPlaceOutput("tp", f32()).inPlaceOutput("fn", f32())
                       .inPlaceOutput("tn", f32()).inPlaceOutput("fp", f32()).writesVariables());
HB_REGISTER_KERNEL(KernelDef("mean_accumulate", meanAccumulateKernel, KernelPlacement::Host)
                       .input("values", f32()).optionalInput("weights", f32())
                       .inPlaceOutput("total", f32()).inPlaceOutput("count", f32()).writesVariables());
// Fails with ErrorCode::NaN (HB_ERR_NAN), which the Estimator reads as "the loss is not
// finite": no other kernel raises that code.
HB_REGISTER_KERNEL(KernelDef("assert_finite", assertFiniteKernel, KernelPlacement::Host).input("x", f32()));

}  // namespace hb
