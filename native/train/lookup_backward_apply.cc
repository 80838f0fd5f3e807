#include "native/train/lookup_backward_apply.h"

#include <algorithm>

#include "cuda/cuda_backend.h"
#include "native/core/status.h"
#include "native/train/embedding_backward.h"

namespace hb {

namespace {

// Row blocks of one device stacked on their first axis.
Tensor stackRows(const std::vector<Tensor>& parts, DType dtype, int64_t width) {
  int64_t rows = 0;
  for (const Tensor& p : parts) rows += p.shape.empty() ? 0 : p.shape[0];
  const Device device = parts.front().device();
  Tensor out{Buffer::allocate(device, std::max<size_t>(size_t(rows * width) * dtypeSize(dtype), 1)), dtype,
             width == 1 && parts.front().shape.size() == 1 ? std::vector<int64_t>{rows}
                                                            : std::vector<int64_t>{rows, width}};
  size_t offset = 0;
  for (const Tensor& p : parts) {
    if (p.bytes()) copyBytes(static_cast<char*>(out.buffer->data()) + offset, device, p.buffer->data(), device, p.bytes());
    offset += p.bytes();
  }
  return out;
}

// The update's request with empty IndexedSlices, so checkOptimizerApply checks all the
// rest before any gradient exists.
OptimizerApplyRequest withoutSlices(const OptimizerApplyRequest& update) {
  OptimizerApplyRequest r = update;
  r.sparse = true;
  r.grad = Tensor{};
  r.indices = Tensor{Buffer::allocate(Device::cpu(), 0), DType::Int64, {0}};
  std::vector<int64_t> shape = r.var.shape;
  if (!shape.empty()) shape[0] = 0;
  r.values = Tensor{Buffer::allocate(Device::cpu(), 0), DType::Float32, shape};
  return r;
}

}  // namespace

void checkLookupBackwardApply(const std::vector<SparseLookupRequest>& lookups, const std::vector<Tensor>& outGrads,
                              const OptimizerApplyRequest& update) {
  HB_CHECK(!lookups.empty() && lookups.size() == outGrads.size(), "applyGradients(", update.name,
           "): the fused lookup backward needs one output gradient per lookup, got ", outGrads.size(), " for ",
           lookups.size(), " lookups");
  for (size_t i = 0; i < lookups.size(); ++i) {
    const SparseLookupRequest& r = lookups[i];
    HB_CHECK(r.table.buffer && update.var.buffer && r.table.buffer->data() == update.var.buffer->data() &&
                 r.table.shape == update.var.shape,
             "applyGradients(", update.name, "): lookup ", i, " (", r.name, ") reads another table");
    checkLookupBackward(r, outGrads[i]);
  }
  checkOptimizerApply(withoutSlices(update));
}

void runLookupBackwardApply(const std::vector<SparseLookupRequest>& lookups, const std::vector<Tensor>& outGrads,
                            const OptimizerApplyRequest& update, DeferredFiniteChecks* deferred) {
  const Device device = update.var.device();
  if (!device.isCuda()) {
    std::vector<Tensor> indices, rows;
    for (size_t k = 0; k < lookups.size(); ++k) {
      LookupGradient g = runLookupBackward(lookups[k], outGrads[k]);
      indices.push_back(g.indices);
      rows.push_back(g.values);
    }
    OptimizerApplyRequest a = update;
    a.sparse = true;
    a.distinctIndices = indices.size() == 1;  // a table looked up twice may repeat rows
    a.indices = indices.size() == 1 ? indices[0] : stackRows(indices, DType::Int64, 1);
    a.values = rows.size() == 1 ? rows[0] : stackRows(rows, DType::Float32, a.var.shape[1]);
    checkOptimizerApply(a);
    runOptimizerApply(a, deferred);
    return;
  }
  OptimizerHyper hyper = update.hyper;
  for (size_t k = 0; k < outGrads.size(); ++k) {
    checkFiniteGradient(outGrads[k], update.var.shape[1], update.name, "the gradient of its lookup output", deferred, &hyper);
  }
  std::vector<EmbeddingLookupArgs> args;
  std::vector<const float*> grads;
  for (size_t k = 0; k < lookups.size(); ++k) {
    checkLookupValues(lookups[k]);  // ids in range before any kernel reads a row
    args.push_back(lookupBackwardArgs(lookups[k]));
    grads.push_back(outGrads[k].data<float>());
  }
  const int64_t width = update.var.shape[1];
  // As runOptimizerApply sets them for IndexedSlices.
  hyper.sparse = true;
  hyper.scalarRows = width == 1;
  OptimizerTarget target;
  target.var = update.var.data<float>();
  target.s0 = update.hasSlot0 ? update.slot0.data<float>() : nullptr;
  target.s1 = update.hasSlot1 ? update.slot1.data<float>() : nullptr;
  target.rows = update.var.shape[0];
  target.width = width;
  cuda::lookupBackwardApply(device.index, hyper, target, args, grads);
}

}  // namespace hb
