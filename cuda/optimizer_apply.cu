// Dense optimizer updates on the GPU: the same HB_HOST_DEVICE rules as the CPU, one thread
// per element (per row for RowwiseAdagrad), so results match the CPU bit for bit (but for
// FTRL's powf with a learning-rate power other than -0.5). Sparse updates: see
// embedding_backward.cu.
#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/kernel_launch.h"
#include "cuda/element_launch.h"
#include "native/kernels/optimizer_rules.h"

namespace hb {
namespace cuda {

namespace {

__global__ void denseElements(OptimizerHyper h, OptimizerTarget t, const float* grad) {
  if (updateSkipped(h)) return;
  const int64_t i = elementIndex();
  if (i < t.rows * t.width) applyElement(h, t.var + i, t.s0 ? t.s0 + i : nullptr, t.s1 ? t.s1 + i : nullptr, grad[i]);
}

__global__ void denseRowwise(OptimizerHyper h, OptimizerTarget t, const float* grad) {
  if (updateSkipped(h)) return;
  const int64_t r = elementIndex();
  if (r < t.rows) applyRowwiseAdagradRow(h, t.var + r * t.width, t.s0 + r, grad + r * t.width, t.width);
}

}  // namespace

void applyDense(int device, const OptimizerHyper& h, const OptimizerTarget& t, const float* grad) {
  DeviceContext& context = useDevice(device);
  const int64_t total = t.rows * t.width;
  if (total == 0) return;  // also: no launch of 0 blocks
  if (h.kind == OptimizerKind::RowwiseAdagrad) {
    launchKernel(denseRowwise, elementBlocks(t.rows), kElementThreads, 0, context.compute, h, t, grad);
  } else {
    launchKernel(denseElements, elementBlocks(total), kElementThreads, 0, context.compute, h, t, grad);
  }
  check(cudaGetLastError(), "dense optimizer update");  // no wait, as the sparse updates
}

}  // namespace cuda
}  // namespace hb
