// A dense layer's bias add and activation, y = op(x + bias) with the bias along the rows:
// the math of the bias_activation kernel, which matmul_bias_activation shares (it applies
// it to each piece of its product while the piece is still in cache). The same bits as
// binary add then unary op.
#pragma once

#include <cstdint>
#include <string>

#include "native/core/tensor.h"

namespace hb {

// Throws unless `op` (a UnaryOp) is an activation without a constant; `who` names the node.
void checkBiasActivationOp(int32_t op, const std::string& who, const char* kernel);

// Rows [r0, r1) and columns [c0, c1) of row-major x and y (`ld` floats between rows; y
// may be x), on the calling thread: safe inside a parallelFor body.
void biasActivationRows(int32_t op, const float* x, const float* bias, float* y, int64_t ld, int64_t r0, int64_t r1,
                        int64_t c0, int64_t c1);

// y = op(x + bias) for x, y [..., N] and bias [N] on a CUDA device: the add, then the
// activation in place.
void biasActivationOnDevice(int device, int32_t op, const Tensor& x, const Tensor& bias, const Tensor& y);

}  // namespace hb
