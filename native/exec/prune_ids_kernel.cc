// prune_ids: the first step of tf.nn.safe_embedding_lookup_sparse. Drops ids < 0 and,
// with weights and a combiner other than 'sum', entries whose weight is not > 0 (TF's
// _prune_invalid_ids and _prune_invalid_weights), keeping the ragged rows.
#include "native/core/status.h"
#include "native/exec/kernel_def.h"
#include "native/exec/ragged_checks.h"
#include "native/kernels/embedding_combine.h"

namespace hb {

namespace {

template <typename Id>
void pruneIds(KernelArgs& args, Combiner combiner, bool keepNegative) {
  const Tensor& ids = args.in[0];
  const Tensor& splits = args.in[1];
  const bool weighted = hasInput(args, 2);
  const Id* id = ids.data<Id>();
  const float* w = weighted ? args.in[2].data<float>() : nullptr;
  const int32_t* s = splits.data<int32_t>();
  const int64_t n = ids.size();
  const int64_t batch = splits.size() - 1;
  // A dynamic table's ids are any int64 (missing values were dropped by the column).
  auto keep = [&](Id i, float wj) { return keepLookupEntry(keepNegative ? Id(0) : i, wj, weighted, combiner); };
  int64_t kept = 0;
  for (int64_t j = 0; j < n; ++j) kept += keep(id[j], weighted ? w[j] : 1.0f);
  Id* outIds = allocateOutput(args, 0, {kept}).data<Id>();
  int32_t* outSplits = allocateOutput(args, 1, {batch + 1}).data<int32_t>();
  float* outWeights = nullptr;
  if (wantsOutput(args, 2)) {
    HB_CHECK(weighted, args.name, ": prune_ids writes weights only when it reads them");
    outWeights = allocateOutput(args, 2, {kept}).data<float>();
  }
  int64_t at = 0;
  outSplits[0] = 0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = s[b]; j < s[b + 1]; ++j) {
      const float wj = weighted ? w[j] : 1.0f;
      if (!keep(id[j], wj)) continue;
      outIds[at] = id[j];
      if (outWeights != nullptr) outWeights[at] = wj;
      ++at;
    }
    outSplits[b + 1] = int32_t(at);
  }
}

void pruneIdsKernel(KernelArgs& args) {
  const Tensor& ids = args.in[0];
  checkRowSplits(args.in[1], ids.size(), args.name);
  if (hasInput(args, 2)) checkEntryWeights(args.in[2], ids.size(), args.name);
  checkSameDType(args, 0, 0);
  const Combiner combiner = Combiner(int32_t(args.attrs[0]));
  const bool keepNegative = attrOr(args, 1, 0) != 0;
  if (ids.dtype == DType::Int64) pruneIds<int64_t>(args, combiner, keepNegative);
  else pruneIds<int32_t>(args, combiner, keepNegative);
}

}  // namespace

HB_REGISTER_KERNEL(KernelDef("prune_ids", pruneIdsKernel, KernelPlacement::Host)
                       .input("ids", ids()).input("rowSplits", i32()).optionalInput("weights", f32())
                       .sizedOutput("prunedIds", ids()).sizedOutput("prunedRowSplits", i32()).sizedOutput("prunedWeights", f32(), true)
                       .enumeration("combiner", {std::begin(kCombinerNames), std::end(kCombinerNames)})
                       .boolean("keepNegative", false));

}  // namespace hb
