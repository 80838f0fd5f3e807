// Initializer values, computed per element from (seed, element index) so any thread,
// on either backend, can produce any element: parallel fills are deterministic, do not
// depend on the thread count, and the same seed gives the same table bit for bit on
// CPU and CUDA (only single-rounding +, *, / below; no libm call whose last bit could
// differ between glibc and CUDA's math library).
//
// The generator is not TensorFlow's Philox stream, so seeded values differ from TF's;
// the distributions are the same (TF's truncated normal: a normal restricted to two
// standard deviations around the mean).
#pragma once

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

// Where a seed's SplitMix64 stream starts; element k of the table draws the stream's
// k-th output (one 64-bit mix per element).
HB_HOST_DEVICE uint64_t seedStream(uint64_t seed) { return mixBits64(seed ^ 0x5851F42D4C957F2Dull); }

HB_HOST_DEVICE uint64_t elementBits(uint64_t stream, uint64_t index) {
  return mixBits64(stream + index * 0x9E3779B97F4A7C15ull);
}

// Uniform in [0, 1) with 24 random bits (through int32, which every vector unit converts).
HB_HOST_DEVICE float uniformFromBits(uint64_t bits) {
  return mulRn(float(int32_t(bits >> 40)), 1.0f / 16777216.0f);
}

// A standard normal truncated to [-2, 2], by inverting its CDF: no rejection loop, so
// every element costs the same and vector units fill whole registers. The 32 high bits
// give p - 1/2 in (-1/2, 1/2) (centred: the draws are symmetric), scaled to the mass
// within two standard deviations, Phi(2) - Phi(-2); then z = Phi^-1(1/2 + q) by a
// rational function of q^2 fitted to it (relative error < 1.2e-7 over |q| <= 0.4773,
// i.e. within two float ulps), evaluated in double so cancellation costs nothing.
HB_HOST_DEVICE float truncatedNormalFromBits(uint64_t bits) {
  const double kMassWithinTwo = 0.9544997361036416;  // erf(sqrt(2))
  const int32_t centred = int32_t(uint32_t(bits >> 32) ^ 0x80000000u);  // u - 2^31
  const double q = mulRn(mulRn(addRn(double(centred), 0.5), 1.0 / 4294967296.0), kMassWithinTwo);
  const double r = mulRn(q, q);
  double num = 22.04873980481522;
  num = addRn(mulRn(num, r), -88.55104690292491);
  num = addRn(mulRn(num, r), 76.67864163595765);
  num = addRn(mulRn(num, r), -23.98429697956848);
  num = addRn(mulRn(num, r), 2.506627990151484);
  double den = 26.720865354192632;
  den = addRn(mulRn(den, r), -58.39108735810627);
  den = addRn(mulRn(den, r), 39.40413560727977);
  den = addRn(mulRn(den, r), -10.615558703294477);
  den = addRn(mulRn(den, r), 1.0);
  // |z| <= 1.9999998 at the extreme draws (q = +-(2^31 - 1/2) / 2^32 x the mass), and
  // the function is monotonic in q, so no clamp is needed (a branch would also stop
  // the CPU loops from vectorizing).
  return float(divRn(mulRn(q, num), den));
}

// Element `logical` of the whole table, given the seed's stream.
HB_HOST_DEVICE float fillValueAt(const FillSpec& spec, uint64_t stream, uint64_t logical) {
  switch (spec.kind) {
    case FillKind::Uniform:
      return addRn(spec.minval, mulRn(uniformFromBits(elementBits(stream, logical)), spec.maxval - spec.minval));
    case FillKind::TruncatedNormal:
      return addRn(spec.mean, mulRn(spec.stddev, truncatedNormalFromBits(elementBits(stream, logical))));
    default:
      return spec.value;
  }
}

// Element `element` of the tensor being filled.
HB_HOST_DEVICE float fillValue(const FillSpec& spec, uint64_t element) {
  return fillValueAt(spec, seedStream(spec.seed), logicalIndex(spec, element));
}

// Fills out[0..n) on the host thread pool.
void fillCpu(float* out, int64_t n, const FillSpec& spec);
// Element j of row rows[k] of `table` ([*, width]) <- fillValue(spec, ids[k] * width + j):
// row ids[k] of the table `spec` fills (ids null: row 0, for a constant), on the host
// thread pool; cuda::initRows is its twin on a device.
void fillRowsCpu(float* table, int64_t width, const int64_t* rows, const int64_t* ids, int64_t n, const FillSpec& spec);

// The vector code the two above run: "avx512", "avx2" or "portable".
const char* fillIsaName();

}  // namespace hb
