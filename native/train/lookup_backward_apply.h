// The update of an embedding table in a compiled training step: the backward of every
// lookup of the table, then the optimizer's sparse update of the rows they touched.
// Results equal those of runLookupBackward for each lookup, the IndexedSlices stacked (a
// table looked up twice makes one update, as TF aggregates them) and applied with
// runOptimizerApply; on a GPU the gradient never leaves the device.
#pragma once

#include <vector>

#include "native/core/tensor.h"
#include "native/embedding/embedding_lookup.h"
#include "native/train/optimizer_apply.h"

namespace hb {

// lookups: every lookup of update.var (each request's table is update.var); outGrads[i]:
// lookup i's output gradient, [batch_i, dim] on the table's device. update: hyper, name,
// var and slots; its sparse fields are ignored (filled here).
// The check does the O(1) checks of the lookups and the update; the run does the rest.
void checkLookupBackwardApply(const std::vector<SparseLookupRequest>& lookups, const std::vector<Tensor>& outGrads,
                              const OptimizerApplyRequest& update);
// `deferred` (a compiled GPU step's): the gradients' checks are queued there.
void runLookupBackwardApply(const std::vector<SparseLookupRequest>& lookups, const std::vector<Tensor>& outGrads,
                            const OptimizerApplyRequest& update, DeferredFiniteChecks* deferred = nullptr);

}  // namespace hb
