// DLRM's dot interaction (no self pairs) and its gradient on the CPU. Same results, bit
// for bit, as dotInOrder / dotInteractionGradElement in dense_math.h (what the CUDA kernels
// run): every dot product is summed in index order, one rounding per multiply and per
// add. The forward pass gets its speed from computing a block of examples at once (one
// vector lane per example) instead of reordering any sum.
#pragma once

#include <cstdint>

namespace hb {

// Where each example's F feature vectors (D floats each) are: vector f of example b is
// at feature[f] + b * rowStride. One [batch, F * D] tensor t is {t + f * D}, stride F * D;
// F tensors x_f of [batch, D] are {x_f}, stride D (no concatenation needed).
struct InteractionRows {
  const float* const* feature;
  int64_t rowStride;
};
// The same for the gradient's outputs.
struct InteractionGradRows {
  float* const* feature;
  int64_t rowStride;
};

// Where each example's F(F-1)/2 pair values are: pair c of example b at
// values[b * rowStride + c]. rowStride is F(F-1)/2 for a tensor of their own, more when
// they follow other columns of a row (dotInteraction's output puts the bottom MLP's vector
// first).
struct InteractionPairs {
  float* values;
  int64_t rowStride;
};
struct InteractionPairGrads {
  const float* values;
  int64_t rowStride;
};

// z[b, interactionPairIndex(i, j)] = t[b, i, :] . t[b, j, :] for j < i.
void dotInteractionCpu(InteractionRows t, InteractionPairs z, int64_t batch, int64_t features, int64_t width);
// dt[b, i, :] = sum over j != i (ascending) of dz[b, pair(i, j)] * t[b, j, :].
void dotInteractionGradCpu(InteractionPairGrads dz, InteractionRows t, InteractionGradRows dt, int64_t batch,
                           int64_t features, int64_t width);

// The vector code both run: "avx512", "avx2" or "portable".
const char* dotInteractionIsaName();

}  // namespace hb
