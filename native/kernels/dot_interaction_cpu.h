// DLRM's dot interaction (no self pairs) and its gradient on the CPU. Same results, bit
// for bit, as dotInOrder / dotInteractionGrad in dense_math.h (what the CUDA kernels
// run): every dot product is summed in index order, one rounding per multiply and per
// add. The forward pass gets its speed from computing a block of examples at once (one
// vector lane per example) instead of reordering any sum.
#pragma once

#include <cstdint>

namespace hb {

// z[b, interactionPairIndex(i, j)] = t[b, i, :] . t[b, j, :] for j < i; t is [batch, F * D].
void dotInteractionCpu(const float* t, float* z, int64_t batch, int64_t features, int64_t width);
// dt[b, i, :] = sum over j != i (ascending) of dz[b, pair(i, j)] * t[b, j, :].
void dotInteractionGradCpu(const float* dz, const float* t, float* dt, int64_t batch, int64_t features, int64_t width);

// The vector code both run: "avx512", "avx2" or "portable".
const char* dotInteractionIsaName();

}  // namespace hb
