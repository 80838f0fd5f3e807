#include "native/train/embedding_backward.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "cuda/cuda_backend.h"
#include "native/core/status.h"
#include "native/kernels/embedding_combine.h"
#include "native/kernels/sparse_grad.h"

namespace hb {

void checkLookupBackward(const SparseLookupRequest& r, const Tensor& outGrad) {
  checkLookupShapes(r);
  HB_CHECK(std::isfinite(r.maxNorm) && r.maxNorm >= 0.0f, "embeddingLookupSparseGrad(", r.name,
           "): maxNorm must be a finite number >= 0 (0: no clipping), got ", r.maxNorm);
  const std::vector<int64_t> expected{r.rowSplits.size() - 1, r.table.shape[1]};
  const Tensor shaped{nullptr, DType::Float32, expected};
  HB_CHECK_CODE(outGrad.dtype == DType::Float32, Type, "embeddingLookupSparseGrad(", r.name,
                "): the output gradient must be float32 ", shaped.shapeString(), ", got ", dtypeName(outGrad.dtype), " ",
                outGrad.shapeString());
  HB_CHECK_CODE(outGrad.shape == expected, Shape, "embeddingLookupSparseGrad(", r.name,
                "): the output gradient must be float32 ", shaped.shapeString(), ", got ", dtypeName(outGrad.dtype), " ",
                outGrad.shapeString());
  HB_CHECK(outGrad.device() == r.table.device(), "embeddingLookupSparseGrad(", r.name, "): the output gradient is on ",
           outGrad.device().str(), " but the table is on ", r.table.device().str());
}

EmbeddingLookupArgs lookupBackwardArgs(const SparseLookupRequest& r) {
  EmbeddingLookupArgs args;
  args.table = r.table.data<float>();
  args.rows = r.table.shape[0];
  args.dim = r.table.shape[1];
  args.ids = r.ids.buffer->data();
  args.idsAreInt64 = r.ids.dtype == DType::Int64;
  args.numIds = r.ids.size();
  args.rowSplits = r.rowSplits.data<int32_t>();
  args.batch = r.rowSplits.size() - 1;
  args.weights = r.hasWeights ? r.weights.data<float>() : nullptr;
  args.combiner = r.combiner;
  args.maxNorm = r.maxNorm;
  return args;
}

LookupGradient runLookupBackward(const SparseLookupRequest& r, const Tensor& outGrad) {
  checkLookupValues(r);
  const EmbeddingLookupArgs args = lookupBackwardArgs(r);
  const Device device = r.table.device();
  // A table in host memory under a model on the GPU (embDevice: 'cpu'): the output's
  // gradient comes from the device, and the CPU kernel must read a host copy of it.
  const Tensor grad = device.isCuda() ? outGrad : onDevice(outGrad, Device::cpu());
  RowGradients rows = device.isCuda() ? cuda::embeddingLookupBackward(device.index, args, grad.data<float>())
                                      : embeddingLookupBackwardCpu(args, grad.data<float>());
  const int64_t n = int64_t(rows.rows.size());
  if (!device.isCuda() && r.maxNorm > 0.0f) {
    // Clipping depends only on the row, so it applies once to each row's summed gradient.
    // The rows are read as they are now, after any update queued before this call.
    float* values = static_cast<float*>(rows.values->data());
    for (int64_t i = 0; i < n; ++i) {
      clipByNormGradient(args.table + rows.rows[i] * args.dim, args.dim, r.maxNorm, values + i * args.dim);
    }
  }
  LookupGradient out;
  out.indices = Tensor{Buffer::allocate(Device::cpu(), size_t(n) * 8), DType::Int64, {n}};
  if (n) std::memcpy(out.indices.buffer->data(), rows.rows.data(), size_t(n) * 8);
  out.values = Tensor{rows.values, DType::Float32, {n, args.dim}};
  return out;
}

}  // namespace hb
