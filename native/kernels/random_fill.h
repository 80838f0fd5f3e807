// Initializer values, computed per element from (seed, element index) so any thread,
// on either backend, can produce any element: parallel fills are deterministic and
// the same seed gives the same table on CPU and CUDA (up to the last bit of
// logf/cosf, which differ between glibc and CUDA's math library).
//
// The generator is not TensorFlow's Philox stream, so seeded values differ from TF's;
// the distributions (TF's truncated normal resamples beyond 2 stddev) are the same.
#pragma once

#include <cmath>
#include <cstdint>

#include "native/kernels/hb_host_device.h"

namespace hb {

enum class FillKind : int32_t { Constant = 0, Uniform = 1, TruncatedNormal = 2 };

struct FillSpec {
  FillKind kind = FillKind::Constant;
  float value = 0.0f;   // Constant
  float minval = 0.0f;  // Uniform: [minval, maxval)
  float maxval = 1.0f;
  float mean = 0.0f;  // TruncatedNormal
  float stddev = 1.0f;
  uint64_t seed = 0;
  // A shard of a [rows, rowWidth] table (rowWidth > 0): local row j is the table's row
  // j * rowStride + rowOffset, and takes that row's values, so a table split over W
  // ranks holds the same numbers as the whole table made in one process.
  uint64_t rowWidth = 0;
  uint64_t rowStride = 1;
  uint64_t rowOffset = 0;
};

// The index in the whole table of element `index` of the tensor being filled.
HB_HOST_DEVICE uint64_t logicalIndex(const FillSpec& spec, uint64_t index) {
  if (spec.rowWidth == 0) return index;
  const uint64_t row = index / spec.rowWidth;
  return (row * spec.rowStride + spec.rowOffset) * spec.rowWidth + index % spec.rowWidth;
}

// SplitMix64's finaliser: a bijection that scatters nearby counters.
HB_HOST_DEVICE uint64_t mixBits64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 24 random bits, from the `draw`-th draw of element `index`.
HB_HOST_DEVICE float uniformDraw(uint64_t seed, uint64_t index, uint32_t draw) {
  const uint64_t bits = mixBits64(seed ^ mixBits64(index * 64u + draw));
  return float(bits >> 40) * (1.0f / 16777216.0f);
}

HB_HOST_DEVICE float fillValue(const FillSpec& spec, uint64_t element) {
  const uint64_t index = logicalIndex(spec, element);
  switch (spec.kind) {
    case FillKind::Uniform:
      return addRn(spec.minval, mulRn(uniformDraw(spec.seed, index, 0), spec.maxval - spec.minval));
    case FillKind::TruncatedNormal: {
      // Box-Muller; a draw beyond two standard deviations is redrawn, as TF does.
      for (uint32_t attempt = 0; attempt < 31; ++attempt) {
        const float u1 = 1.0f - uniformDraw(spec.seed, index, 2 * attempt);  // (0, 1]
        const float u2 = uniformDraw(spec.seed, index, 2 * attempt + 1);
        const float z = mulRn(sqrtf(mulRn(-2.0f, logf(u1))), cosf(mulRn(6.2831853071795865f, u2)));
        if (z >= -2.0f && z <= 2.0f) return addRn(spec.mean, mulRn(spec.stddev, z));
      }
      return spec.mean;  // 31 rejections in a row: probability ~1e-42
    }
    default:
      return spec.value;
  }
}

// Fills out[0..n) on the host thread pool.
void fillCpu(float* out, int64_t n, const FillSpec& spec);

}  // namespace hb
