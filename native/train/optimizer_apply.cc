#include "native/train/optimizer_apply.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cuda/cuda_backend.h"
#include "native/core/status.h"
#include "native/kernels/finite_check.h"
#include "native/kernels/sparse_grad.h"
#include "native/train/deferred_finite_checks.h"

namespace hb {

namespace {

int64_t rowsOf(const Tensor& t) { return t.shape.empty() ? 1 : t.shape[0]; }
int64_t widthOf(const Tensor& t) { return rowsOf(t) == 0 ? 0 : t.size() / rowsOf(t); }

std::vector<int64_t> rowShape(const Tensor& t) {
  return t.shape.empty() ? std::vector<int64_t>{} : std::vector<int64_t>(t.shape.begin() + 1, t.shape.end());
}

template <typename Id>
void checkRowRange(const OptimizerApplyRequest& r, int64_t rows) {
  const Id* ids = r.indices.data<Id>();
  for (int64_t i = 0; i < r.indices.size(); ++i) {
    HB_CHECK(ids[i] >= 0 && int64_t(ids[i]) < rows, "applyGradients(", r.name, "): gradient indices[", i, "] = ",
             int64_t(ids[i]), " is out of range: the variable has ", rows, " rows");
  }
}

}  // namespace

void checkOptimizerApply(const OptimizerApplyRequest& r) {
  const char* op = "applyGradients";
  HB_CHECK_CODE(r.var.dtype == DType::Float32, Type, op, "(", r.name, "): only float32 variables can be trained, got ",
           dtypeName(r.var.dtype));
  const OptimizerHyper& h = r.hyper;
  for (float x : {h.learningRate, h.momentum, h.beta1, h.beta2, h.epsilon, h.alpha, h.learningRatePower, h.l1, h.l2,
                  h.l2Shrinkage}) {
    HB_CHECK(std::isfinite(x), op, "(", r.name, "): optimizer hyperparameters must be finite numbers");
  }
  if (h.kind == OptimizerKind::Ftrl) {
    // As TF's FTRL ops require.
    HB_CHECK(h.learningRate > 0.0f && h.l1 >= 0.0f && h.l2 >= 0.0f && h.l2Shrinkage >= 0.0f &&
                 h.learningRatePower <= 0.0f,
             op, "(", r.name, "): FTRL needs learningRate > 0, l1, l2, l2Shrinkage >= 0 and learningRatePower <= 0");
  }
  // The same memory in two roles would make the update read what it is writing.
  std::vector<const Buffer*> buffers{r.var.buffer.get()};
  if (r.hasSlot0) buffers.push_back(r.slot0.buffer.get());
  if (r.hasSlot1) buffers.push_back(r.slot1.buffer.get());
  buffers.push_back(r.sparse ? r.values.buffer.get() : r.grad.buffer.get());
  for (size_t i = 0; i < buffers.size(); ++i) {
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      HB_CHECK(buffers[i]->data() != buffers[j]->data(), op, "(", r.name,
               "): the variable, its slots and the gradient must be different tensors");
    }
  }
  const bool rowwise = h.kind == OptimizerKind::RowwiseAdagrad;
  const bool twoSlots = h.kind == OptimizerKind::Adam || h.kind == OptimizerKind::Ftrl;
  const bool oneSlot = h.kind != OptimizerKind::GradientDescent;
  HB_CHECK(r.hasSlot0 == oneSlot && r.hasSlot1 == twoSlots, op, "(", r.name, "): wrong slots for this optimizer");
  if (oneSlot) {
    HB_CHECK(r.slot0.device() == r.var.device() && r.slot0.dtype == DType::Float32 &&
                 (rowwise ? r.slot0.size() == rowsOf(r.var) : r.slot0.size() == r.var.size()),
             op, "(", r.name, "): slot does not match the variable");
  }
  if (twoSlots) {
    HB_CHECK(r.slot1.device() == r.var.device() && r.slot1.dtype == DType::Float32 && r.slot1.size() == r.var.size(), op,
             "(", r.name, "): slot does not match the variable");
  }
  if (!r.sparse) {
    HB_CHECK_CODE(r.grad.dtype == DType::Float32, Type, op, "(", r.name, "): the gradient must be float32, got ",
             dtypeName(r.grad.dtype));
    HB_CHECK(r.grad.shape == r.var.shape, op, "(", r.name, "): the gradient's shape ", r.grad.shapeString(),
             " does not match the variable's ", r.var.shapeString());
    HB_CHECK(r.grad.device() == r.var.device(), op, "(", r.name, "): the gradient is on ", r.grad.device().str(),
             " but the variable is on ", r.var.device().str());
    return;
  }
  HB_CHECK(!r.var.shape.empty(), op, "(", r.name, "): a scalar variable cannot take IndexedSlices");
  HB_CHECK(r.indices.size() < (int64_t(1) << 31), op, "(", r.name, "): at most 2^31 - 1 gradient rows per update, got ",
           r.indices.size());
  HB_CHECK_CODE(r.values.dtype == DType::Float32, Type, op, "(", r.name, "): IndexedSlices values must be float32, got ",
           dtypeName(r.values.dtype));
  HB_CHECK_CODE(r.indices.dtype == DType::Int64 || r.indices.dtype == DType::Int32, Type, op, "(", r.name,
           "): IndexedSlices indices must be a BigInt64Array or Int32Array");
  const Tensor rowsOnly{nullptr, r.values.dtype, rowShape(r.var)};
  // The indices are a host copy already; checking them here keeps a failing call from
  // queueing anything.
  if (r.indices.dtype == DType::Int64) checkRowRange<int64_t>(r, rowsOf(r.var));
  else checkRowRange<int32_t>(r, rowsOf(r.var));
  HB_CHECK(!r.values.shape.empty() && r.values.shape[0] == r.indices.size() && rowShape(r.values) == rowShape(r.var), op,
           "(", r.name, "): IndexedSlices values ", r.values.shapeString(), " must be [", r.indices.size(),
           " indices, ...", rowsOnly.shapeString(), "] for a variable of shape ", r.var.shapeString());
}

void failNonFiniteGradient(const std::string& variable, const std::string& what, int64_t index, int64_t width) {
  const int64_t w = std::max<int64_t>(width, 1);
  failWith(ErrorCode::NaN, "applyGradients(", variable, "): ", what, " is NaN or infinite at row ", index / w, ", column ",
           index % w, "; ", variable, " was not changed");
}

void checkFiniteGradient(const Tensor& gradient, int64_t width, const std::string& variable, const char* what) {
  const Device device = gradient.device();
  const float* g = gradient.data<float>();
  const int64_t i = device.isCuda() ? cuda::firstNonFinite(device.index, g, gradient.size())
                                    : firstNonFiniteCpu(g, gradient.size());
  if (i >= 0) failNonFiniteGradient(variable, what, i, width);
}

void checkFiniteGradient(const Tensor& gradient, int64_t width, const std::string& variable, const char* what,
                         DeferredFiniteChecks* deferred, OptimizerHyper* hyper) {
  if (deferred != nullptr && gradient.device().isCuda()) {
    if (const int32_t* skip = deferred->check(gradient, width, variable, what, hyper->skip)) {
      hyper->skip = skip;
      return;
    }
  }
  checkFiniteGradient(gradient, width, variable, what);
}

void runOptimizerApply(const OptimizerApplyRequest& request, DeferredFiniteChecks* deferred) {
  OptimizerApplyRequest r = request;
  // A non-finite gradient would be written into the variable (and its slots) for good.
  checkFiniteGradient(request.sparse ? request.values : request.grad, widthOf(request.var), request.name,
                      request.sparse ? "the gradient (IndexedSlices values)" : "the gradient", deferred, &r.hyper);
  r.hyper.sparse = r.sparse;
  r.hyper.scalarRows = r.sparse && widthOf(r.var) == 1;
  const Device device = r.var.device();
  OptimizerTarget target;
  target.var = r.var.data<float>();
  target.s0 = r.hasSlot0 ? r.slot0.data<float>() : nullptr;
  target.s1 = r.hasSlot1 ? r.slot1.data<float>() : nullptr;
  target.rows = rowsOf(r.var);
  target.width = widthOf(r.var);
  if (!r.sparse) {
    if (device.isCuda()) cuda::applyDense(device.index, r.hyper, target, r.grad.data<float>());
    else applyDenseCpu(r.hyper, target, r.grad.data<float>());
    return;
  }
  const bool wide = r.indices.dtype == DType::Int64;
  if (device.isCuda()) {
    // Grouping and summing happen on the device; only the indices travel.
    cuda::applyIndexedSlices(device.index, r.hyper, target, r.indices.buffer->data(), wide, r.indices.size(),
                             r.values.data<float>());
    return;
  }
  if (r.distinctIndices && wide) {
    // One entry per row: its own sum, and for GradientDescent its own scatter_sub.
    applySparseCpu(r.hyper, target, SparseRows{r.indices.data<int64_t>(), r.values.data<float>(), r.indices.size()});
    return;
  }
  if (r.hyper.kind == OptimizerKind::GradientDescent) {
    // TF subtracts each entry in turn (scatter_sub), duplicates included, not their sum.
    const RowEntries entries =
        groupEntriesCpu(r.indices.buffer->data(), wide, r.indices.size(), r.values.data<float>(), target.width);
    applyGradientDescentEntriesCpu(r.hyper, target, entries);
    return;
  }
  RowGradients storage;
  const SparseRows grads = sumDuplicateRowsCpu(r.indices.buffer->data(), wide, r.indices.size(),
                                               r.values.data<float>(), target.width, &storage);
  applySparseCpu(r.hyper, target, grads);
}

}  // namespace hb
