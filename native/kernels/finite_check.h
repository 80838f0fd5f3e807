// Where the first NaN or infinity in a float32 array is: the loss check of a step, and
// every optimizer update's gradient before it writes a row (a non-finite gradient
// would otherwise be written into the table). One predicate for the CPU loop and the
// CUDA kernel (cuda/finite_check.cu).
#pragma once

#include <cstdint>

#include "native/kernels/half.h"

namespace hb {

// By the bits, so no compiler flag about floating point can fold it away.
HB_HOST_DEVICE bool finiteFloat(float x) { return (floatBits(x) & 0x7f800000u) != 0x7f800000u; }

// The index of the first non-finite value in x[0, n), or -1.
int64_t firstNonFiniteCpu(const float* x, int64_t n);

}  // namespace hb
