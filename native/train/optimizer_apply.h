// opt.applyGradients for one (gradient, variable) pair: checks, then the update on the
// variable's device. Sparse gradients (IndexedSlices) have their duplicate rows summed
// first, in the order they come, as TF's _deduplicate_indexed_slices does.
#pragma once

#include <string>

#include "native/core/tensor.h"
#include "native/kernels/optimizer_rules.h"

namespace hb {

struct OptimizerApplyRequest {
  OptimizerHyper hyper;
  std::string name;  // the variable's, for messages
  Tensor var;
  bool hasSlot0 = false, hasSlot1 = false;
  Tensor slot0, slot1;
  bool sparse = false;
  Tensor grad;     // dense: var's shape
  Tensor values;   // sparse: [n, ...var.shape[1:]]
  Tensor indices;  // sparse: host int32/int64 [n], a copy
  // sparse: the indices are known to be distinct (one lookup's backward makes them so),
  // so no summing of duplicates is needed.
  bool distinctIndices = false;
};

// Shapes, dtypes, devices, hyperparameters and index ranges, on the JS thread.
void checkOptimizerApply(const OptimizerApplyRequest& r);
class DeferredFiniteChecks;

// Duplicate summing and the update; on the variable's executor. `deferred` (a compiled
// GPU step's): the gradient's check is queued there instead of waited for.
void runOptimizerApply(const OptimizerApplyRequest& r, DeferredFiniteChecks* deferred = nullptr);

// Throws HB_ERR_NAN naming `variable` and the row and column when `gradient` (float32,
// on any device) holds a NaN or infinity. Every update calls it before it writes.
void checkFiniteGradient(const Tensor& gradient, int64_t width, const std::string& variable, const char* what);
// The same check for an update about to be queued: with `deferred` and a GPU gradient,
// queued there, the update's skip flag set in *hyper (hyper->skip: a flag the update's
// other gradients share); else checkFiniteGradient.
void checkFiniteGradient(const Tensor& gradient, int64_t width, const std::string& variable, const char* what,
                         DeferredFiniteChecks* deferred, OptimizerHyper* hyper);
// checkFiniteGradient's error: element `index` of a gradient of rows of `width`.
[[noreturn]] void failNonFiniteGradient(const std::string& variable, const std::string& what, int64_t index, int64_t width);

}  // namespace hb
