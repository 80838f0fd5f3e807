// The matmul kernels' product, for the kernels that fuse a dense layer's work with it
// (matmul_bias_activation beside it, matmul_activation_grad_bias in reduce_kernels.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "native/exec/kernel_args.h"
#include "native/kernels/sgemm.h"

namespace hb {

// out[0] = op(in[0]) * op(in[1]) + beta * out[0], rank-2 float32, attrs[0] / attrs[1] the
// transposes; every input and output checked float32 and the shapes checked first, naming
// `kernel`. On the CPU `epilogue` runs over each finished piece of the product; on a GPU
// it is not called (the caller's kernels follow the GEMM on the device's stream).
void matmulInto(const KernelArgs& args, const char* kernel, float beta, const SgemmEpilogue* epilogue = nullptr);

// attrs[index], the activation a fused kernel applies or differentiates, as a UnaryOp
// code: an integer in range, else an error naming the node and `kernel`.
int32_t activationAttr(const KernelArgs& args, size_t index, const char* kernel);

}  // namespace hb
