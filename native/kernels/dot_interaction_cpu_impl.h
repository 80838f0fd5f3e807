// The CPU interaction loops, included once per instruction set by dot_interaction_cpu.cc
// inside namespace HB_INTERACTION_NAMESPACE. Only separate multiplies and adds, in the
// order of dense_math.h's reference, so every variant writes the same bits.

namespace HB_INTERACTION_NAMESPACE {

// Examples per block: one per lane of the widest vector (16 floats), and the transposed
// block (F * D * 16 floats: 110 KiB for DLRM's 27 x 64) stays in L2.
constexpr int64_t kBlock = 16;
// Pairs (i, j..j+3) share each load of feature i.
constexpr int64_t kPairsAtOnce = 4;

// One block of `count` <= kBlock examples starting at `first`.
inline void interactionBlock(const float* t, float* z, int64_t first, int64_t count, int64_t features, int64_t width,
                             float* __restrict block) {
  const int64_t rowWidth = features * width;
  const int64_t pairs = interactionPairCount(features);
  // block[e * kBlock + lane] = t[first + lane, e]; absent lanes hold zeros.
  for (int64_t lane = 0; lane < kBlock; ++lane) {
    const float* row = t + (first + lane) * rowWidth;
    if (lane < count) {
      for (int64_t e = 0; e < rowWidth; ++e) block[e * kBlock + lane] = row[e];
    } else {
      for (int64_t e = 0; e < rowWidth; ++e) block[e * kBlock + lane] = 0.0f;
    }
  }
  for (int64_t i = 1; i < features; ++i) {
    const float* __restrict ti = block + i * width * kBlock;
    for (int64_t j = 0; j < i; j += kPairsAtOnce) {
      const int64_t together = j + kPairsAtOnce <= i ? kPairsAtOnce : i - j;
      float acc[kPairsAtOnce][kBlock] = {};
      if (together == kPairsAtOnce) {
        const float* __restrict t0 = block + (j + 0) * width * kBlock;
        const float* __restrict t1 = block + (j + 1) * width * kBlock;
        const float* __restrict t2 = block + (j + 2) * width * kBlock;
        const float* __restrict t3 = block + (j + 3) * width * kBlock;
        for (int64_t k = 0; k < width; ++k) {
          const int64_t at = k * kBlock;
          for (int64_t lane = 0; lane < kBlock; ++lane) {
            const float a = ti[at + lane];
            acc[0][lane] = addRn(acc[0][lane], mulRn(a, t0[at + lane]));
            acc[1][lane] = addRn(acc[1][lane], mulRn(a, t1[at + lane]));
            acc[2][lane] = addRn(acc[2][lane], mulRn(a, t2[at + lane]));
            acc[3][lane] = addRn(acc[3][lane], mulRn(a, t3[at + lane]));
          }
        }
      } else {
        for (int64_t q = 0; q < together; ++q) {
          const float* __restrict tj = block + (j + q) * width * kBlock;
          for (int64_t k = 0; k < width; ++k) {
            for (int64_t lane = 0; lane < kBlock; ++lane) {
              acc[q][lane] = addRn(acc[q][lane], mulRn(ti[k * kBlock + lane], tj[k * kBlock + lane]));
            }
          }
        }
      }
      for (int64_t q = 0; q < together; ++q) {
        const int64_t column = interactionPairIndex(i, j + q);
        for (int64_t lane = 0; lane < count; ++lane) z[(first + lane) * pairs + column] = acc[q][lane];
      }
    }
  }
}

void interaction(const float* t, float* z, int64_t batch, int64_t features, int64_t width) {
  const int64_t blocks = (batch + kBlock - 1) / kBlock;
  const int64_t blockFloats = features * width * kBlock;
  // One block is ~F * F * D * 16 / 2 multiply-adds: a few blocks per task are enough.
  parallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> block(static_cast<size_t>(blockFloats));
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t first = b * kBlock;
      interactionBlock(t, z, first, std::min(kBlock, batch - first), features, width, block.data());
    }
  });
}

// dT[i, :] of one example, as dotInteractionGrad computes it, with the row's running
// sums in registers when its width is known here (kWidth > 0).
template <int64_t kWidth>
inline void interactionGradRow(const float* dz, const float* t, int64_t features, int64_t i, float* __restrict dti) {
  float acc[kWidth] = {};
  for (int64_t j = 0; j < features; ++j) {
    if (j == i) continue;
    const float g = dz[j < i ? interactionPairIndex(i, j) : interactionPairIndex(j, i)];
    const float* __restrict tj = t + j * kWidth;
    for (int64_t k = 0; k < kWidth; ++k) acc[k] = addRn(acc[k], mulRn(g, tj[k]));
  }
  for (int64_t k = 0; k < kWidth; ++k) dti[k] = acc[k];
}

void interactionGrad(const float* dz, const float* t, float* dt, int64_t batch, int64_t features, int64_t width) {
  const int64_t pairs = interactionPairCount(features);
  const int64_t rowWidth = features * width;
  const int64_t rowWork = std::max<int64_t>(1, features * features * width);
  parallelFor(batch, std::max<int64_t>(1, (int64_t(1) << 15) / rowWork), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float* g = dz + b * pairs;
      const float* row = t + b * rowWidth;
      float* out = dt + b * rowWidth;
      for (int64_t i = 0; i < features; ++i) {
        switch (width) {
          case 16: interactionGradRow<16>(g, row, features, i, out + i * width); break;
          case 32: interactionGradRow<32>(g, row, features, i, out + i * width); break;
          case 64: interactionGradRow<64>(g, row, features, i, out + i * width); break;
          case 128: interactionGradRow<128>(g, row, features, i, out + i * width); break;
          default: dotInteractionGrad(g, row, features, width, i, 0, width, out + i * width);
        }
      }
    }
  });
}

}  // namespace HB_INTERACTION_NAMESPACE
