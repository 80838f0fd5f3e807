// The unary gradient's loop, shared by the kernels that make it: "unary_grad" and the fused
// "activation_grad_bias" (where one row or column leaves nothing to fuse).
#pragma once

#include <cstdint>

#include "native/core/device.h"

namespace hb {

// dx[i] = unaryGradOf(op)(dy[i], v[i]) for i < n, on `device` (its executor's thread):
// the CUDA kernel on a GPU, the host thread pool on the CPU. op must have a gradient.
void runUnaryGrad(Device device, int32_t op, const float* dy, const float* v, float* dx, int64_t n);

}  // namespace hb
