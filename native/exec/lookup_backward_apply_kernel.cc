// lookup_backward_apply: the fused form of a table's backward chain (segment_combine_grad
// [-> gather_rows_clip_grad] for each lookup of the table, then sparse_apply), which the
// compiler puts in its place (lib/graph/fusions/lookup_backward_apply.ts): the backward
// of every lookup of the table, then the optimizer's sparse rule on the rows seen. On a
// GPU the gradient never leaves the device.
//
// inputs: one group per lookup (ids, rowSplits, weights?, dy); outputs: the table, then
// its slots; attrs: the optimizer (an index into the step's hyperparameters), and the
// combiner and maxNorm of each lookup.
#include "native/core/status.h"
#include "native/exec/kernel_def.h"
#include "native/exec/update_request.h"
#include "native/train/lookup_backward_apply.h"

namespace hb {

namespace {

void lookupBackwardApplyKernel(KernelArgs& args) {
  const OptimizerApplyRequest update = updateRequest(args);
  const size_t lookups = args.in.size() / 4;
  HB_CHECK(args.listAttrs.size() == 2 && args.listAttrs[0].size() == lookups && args.listAttrs[1].size() == lookups,
           args.name, ": combiners and maxNorms must name one value per lookup (", lookups, ")");
  std::vector<SparseLookupRequest> requests;
  std::vector<Tensor> outGrads;
  for (size_t k = 0; k < lookups; ++k) {
    SparseLookupRequest r;
    r.table = update.var;
    r.name = args.name;
    r.ids = args.in[4 * k];
    r.rowSplits = args.in[4 * k + 1];
    r.hasWeights = hasInput(args, 4 * k + 2);
    if (r.hasWeights) r.weights = args.in[4 * k + 2];
    const double combiner = args.listAttrs[0][k];
    HB_CHECK(combiner >= 0 && combiner < kCombinerCount, args.name, ": bad combiner ", combiner);
    r.combiner = Combiner(int32_t(combiner));
    r.maxNorm = float(args.listAttrs[1][k]);
    requests.push_back(std::move(r));
    // The gradient comes from the plan's device; the table may be in host memory.
    outGrads.push_back(onDevice(args.in[4 * k + 3], update.var.device()));
  }
  checkLookupBackwardApply(requests, outGrads, update);
  runLookupBackwardApply(requests, outGrads, update, args.step ? args.step->finiteChecks : nullptr);
}

}  // namespace

HB_REGISTER_KERNEL(KernelDef("lookup_backward_apply", lookupBackwardApplyKernel, KernelPlacement::Any)
                       .hostInput("ids", ids()).hostInput("rowSplits", i32()).hostInput("weights", f32(), true)
                       .input("dy", f32()).repeatInputs(0)
                       .inPlaceOutput("table", f32()).inPlaceOutput("slot", f32()).repeatOutputs(1)
                       .optimizer()
                       .enumList("combiners", {std::begin(kCombinerNames), std::end(kCombinerNames)})
                       .numberList("maxNorms")
                       .writesVariables());

}  // namespace hb
