// The CPU SGEMM, in the style of GotoBLAS / BLIS:
//
//   for each column block of C (nc wide)
//     for each depth block (kc deep)       pack op(B) [kc, nc]   -> lives in L2
//       for each row block (mc high)       pack op(A) [mc, kc]
//         for each MR-high micro-panel of A                      -> stays in L1
//           for each NR-wide micro-panel of B                    -> streams from L2
//             micro-kernel: an MR x NR tile of C in registers, kc rank-1 updates
//
// Packing turns any layout (transposed or not, any leading dimension) into the one
// order the micro-kernel streams, zero-padded to whole MR / NR panels so that the
// micro-kernel never branches on edges inside its loop. Running a row strip of C at a
// time (rather than BLIS's column of micro-tiles) writes C in address order, which
// matters when kc is small and the product is mostly stores (DLRM's 13-wide input
// layer).
//
// Three micro-kernels, chosen once at run time: AVX-512 (14 x 32), AVX2+FMA (6 x 16)
// and a portable one (4 x 8) the compiler auto-vectorises for whatever the build
// targets. HB_SGEMM_ISA=portable|avx2 caps the choice (for tests and for comparing
// them); an instruction set the CPU lacks is never used.
//
// Products with few columns of C (at most half of NR: DLRM's last layer has 1, a layer of
// 16 outputs 16) take a loop of their own on the vector kernels (sgemm_narrow_impl.h):
// B is not packed, and only the columns there are get multiply-adds, each element summed
// as the tile sums it (the same bits; HB_SGEMM_NARROW=0 sends them through the tiles).
//
// Threads: see gemmThreaded. Problems too small to repay a hand-off to the pool run
// on the calling thread.
//
// FMA: the project builds with -ffp-contract=off so that elementwise kernels round
// the same way everywhere; a GEMM's result already depends on its blocking, so the
// vector micro-kernels use explicit fused multiply-adds (the AVX2 and AVX-512 ones
// share KC and sum in the same order, so they give the same bits). Every kernel
// applies alpha and beta with separate multiplies and adds, in the same order on
// full and edge tiles.
#include "native/kernels/sgemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HB_SGEMM_X86 1
#endif

#include "native/core/env_switch.h"
#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/kernels/cpu_isa.h"

namespace hb {

namespace {

// The least work worth a rectangle of its own on the thread pool: about 15 us of one
// core's time, several times the cost of handing it to a thread.
constexpr double kMinFlopsPerRectangle = 3.0e6;

struct GemmProblem {
  bool transA, transB;
  int64_t M, N, K;
  float alpha;
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
  float beta;
  float* C;
  int64_t ldc;
  const SgemmEpilogue* epilogue = nullptr;
  // The epilogue over a finished piece of C, if there is one.
  void finished(int64_t m0, int64_t m1, int64_t n0, int64_t n1) const {
    if (epilogue != nullptr && m0 < m1 && n0 < n1) (*epilogue)(m0, m1, n0, n1);
  }
};

// Writes one micro-tile computed in a scratch tile `acc` ([MR, NR], already times
// alpha) into the first rows x cols of C: the edge path shared by every kernel.
inline void storeEdge(const float* acc, int64_t nr, float beta, float* c, int64_t ldc, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* cRow = c + r * ldc;
    const float* accRow = acc + r * nr;
    if (beta == 0.0f) {
      for (int64_t j = 0; j < cols; ++j) cRow[j] = accRow[j];
    } else {
      for (int64_t j = 0; j < cols; ++j) cRow[j] = accRow[j] + beta * cRow[j];
    }
  }
}

// ---------------------------------------------------------------------------------
// Packing. Each micro-kernel's file section instantiates these under its own target
// (they inline into its wrappers), so the copies use its vector width.

// op(A)[i0 : i0+mc, p0 : p0+kc] as ceil(mc / MR) panels of [kc][MR], zero rows past mc.
template <int64_t MR>
[[gnu::always_inline]] inline void packPanelsA(const GemmProblem& p, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                                               float* __restrict out) {
  const int64_t fullRows = mc / MR * MR;
  if (!p.transA) {
    // op(A)(i, k) = A[i * lda + k]: a panel reads MR rows of A side by side.
    for (int64_t ir = 0; ir < mc; ir += MR) {
      const int64_t rows = std::min(MR, mc - ir);
      const float* __restrict src = p.A + (i0 + ir) * p.lda + p0;
      float* __restrict panel = out + ir * kc;
      if (rows == MR) {
        for (int64_t k = 0; k < kc; ++k)
          for (int64_t r = 0; r < MR; ++r) panel[k * MR + r] = src[r * p.lda + k];
      } else {
        for (int64_t k = 0; k < kc; ++k) {
          for (int64_t r = 0; r < rows; ++r) panel[k * MR + r] = src[r * p.lda + k];
          for (int64_t r = rows; r < MR; ++r) panel[k * MR + r] = 0.0f;
        }
      }
    }
  } else {
    // op(A)(i, k) = A[k * lda + i]: row p0 + k of A holds step k of every panel. Read
    // each row once, in order, and deal it out: reading panel by panel instead would
    // stride through A a row at a time, which hardware prefetchers do not follow.
    for (int64_t k = 0; k < kc; ++k) {
      const float* __restrict srcRow = p.A + (p0 + k) * p.lda + i0;
      // A fixed-size memcpy compiles to a few vector moves; the equivalent loop becomes
      // a call to memmove per panel step.
      for (int64_t ir = 0; ir < fullRows; ir += MR) std::memcpy(out + ir * kc + k * MR, srcRow + ir, sizeof(float) * MR);
      if (fullRows < mc) {
        float* __restrict step = out + fullRows * kc + k * MR;
        for (int64_t r = 0; r < mc - fullRows; ++r) step[r] = srcRow[fullRows + r];
        for (int64_t r = mc - fullRows; r < MR; ++r) step[r] = 0.0f;
      }
    }
  }
}

// op(B)[p0 : p0+kc, j0 : j0+nc] as ceil(nc / NR) panels of [kc][NR], zero columns past nc.
template <int64_t NR>
[[gnu::always_inline]] inline void packPanelsB(const GemmProblem& p, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
                                               float* __restrict out) {
  const int64_t fullCols = nc / NR * NR;
  if (!p.transB) {
    // op(B)(k, j) = B[k * ldb + j]: row p0 + k of B holds step k of every panel; read
    // in order and dealt out, as for a transposed A.
    for (int64_t k = 0; k < kc; ++k) {
      const float* __restrict srcRow = p.B + (p0 + k) * p.ldb + j0;
      for (int64_t jr = 0; jr < fullCols; jr += NR) std::memcpy(out + jr * kc + k * NR, srcRow + jr, sizeof(float) * NR);
      if (fullCols < nc) {
        float* __restrict step = out + fullCols * kc + k * NR;
        for (int64_t j = 0; j < nc - fullCols; ++j) step[j] = srcRow[fullCols + j];
        for (int64_t j = nc - fullCols; j < NR; ++j) step[j] = 0.0f;
      }
    }
  } else {
    // op(B)(k, j) = B[j * ldb + k]: each panel column is a stretch of one row of B,
    // read in order; the scattered writes stay within the L1-sized panel.
    for (int64_t jr = 0; jr < nc; jr += NR) {
      const int64_t cols = std::min(NR, nc - jr);
      float* __restrict panel = out + jr * kc;
      for (int64_t j = 0; j < cols; ++j) {
        const float* __restrict srcRow = p.B + (j0 + jr + j) * p.ldb + p0;
        for (int64_t k = 0; k < kc; ++k) panel[k * NR + j] = srcRow[k];
      }
      for (int64_t j = cols; j < NR; ++j)
        for (int64_t k = 0; k < kc; ++k) panel[k * NR + j] = 0.0f;
    }
  }
}

// ---------------------------------------------------------------------------------
// Micro-kernels. Each computes C[rows, cols] = alpha * Apanel * Bpanel + beta * C over
// kc, for rows <= MR and cols <= NR, where Apanel is [kc][MR] and Bpanel is kc steps of
// NR floats, bStep apart (NR when packed, ldb when read from B in place). beta == 0
// never reads C.
//
// Each kernel struct also says its cache blocks. The loops run row strip by row strip
// (an MR x kc micro-panel of A stays in L1 while the NR-wide micro-panels of B stream
// past it from L2), so the packed B block, KC x NC floats, is sized to sit in L2
// (0.5-1 MiB), and C is written row strip by row strip, in order.

struct PortableKernel {
  static constexpr int64_t MR = 4, NR = 8;
  static constexpr int64_t KC = 256, MC = 4 * 32, NC = 512;
  // No narrow loop: its sums would round differently from this tile's (no FMA here).
  static constexpr int64_t kNarrowMax = 0;

  static void tile(int64_t kc, const float* __restrict a, const float* __restrict b, int64_t bStep, float alpha,
                   float beta, float* c, int64_t ldc, int64_t rows, int64_t cols) {
    float acc[MR * NR] = {};
    for (int64_t k = 0; k < kc; ++k) {
      for (int64_t r = 0; r < MR; ++r) {
        const float ar = a[r];
        for (int64_t j = 0; j < NR; ++j) acc[r * NR + j] += ar * b[j];
      }
      a += MR;
      b += bStep;
    }
    for (float& v : acc) v *= alpha;
    storeEdge(acc, NR, beta, c, ldc, rows, cols);
  }
  static void packA(const GemmProblem& p, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
    packPanelsA<MR>(p, i0, mc, p0, kc, out);
  }
  static void packB(const GemmProblem& p, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
    packPanelsB<NR>(p, p0, kc, j0, nc, out);
  }
};

#ifdef HB_SGEMM_X86

// How many steps of k ahead the vector kernels ask for B's next rows. B comes from L2
// when packed, from memory when read in place (see gemmRectangle), where its rows are
// ldb apart: a stride hardware prefetchers may not follow.
constexpr int64_t kPrefetchSteps = 16;

// Asks for the C tile's cache lines before the multiply-adds, so that with a small kc
// the stores do not wait on memory.
#define HB_SGEMM_PREFETCH_C(c, ldc, rows, lineFloats, NR)                               \
  for (int64_t r = 0; r < (rows); ++r)                                                  \
    for (int64_t j = 0; j < (NR); j += (lineFloats))                                    \
      _mm_prefetch(reinterpret_cast<const char*>((c) + r * (ldc) + j), _MM_HINT_T0)

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace avx2 {

constexpr int64_t MR = 6, NR = 16;

// 12 accumulators + 2 rows of B + 1 broadcast of A: 15 of the 16 ymm registers.
// Per k: 2 loads of B, 6 broadcasts, 12 FMAs; the two FMA ports are the limit.
void tile(int64_t kc, const float* __restrict a, const float* __restrict b, int64_t bStep, float alpha, float beta,
          float* c, int64_t ldc, int64_t rows, int64_t cols) {
  HB_SGEMM_PREFETCH_C(c, ldc, rows, 16, NR);
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchSteps * bStep), _MM_HINT_T0);
    const __m256 b0 = _mm256_loadu_ps(b);
    const __m256 b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a + r);
      acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
    }
    a += MR;
    b += bStep;
  }
  const __m256 alphas = _mm256_set1_ps(alpha);
  if (rows == MR && cols == NR) {
    const __m256 betas = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      float* cRow = c + r * ldc;
      __m256 v0 = _mm256_mul_ps(alphas, acc[r][0]);
      __m256 v1 = _mm256_mul_ps(alphas, acc[r][1]);
      if (beta != 0.0f) {
        v0 = _mm256_add_ps(v0, _mm256_mul_ps(betas, _mm256_loadu_ps(cRow)));
        v1 = _mm256_add_ps(v1, _mm256_mul_ps(betas, _mm256_loadu_ps(cRow + 8)));
      }
      _mm256_storeu_ps(cRow, v0);
      _mm256_storeu_ps(cRow + 8, v1);
    }
    return;
  }
  alignas(32) float scratch[MR * NR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    _mm256_store_ps(scratch + r * NR, _mm256_mul_ps(alphas, acc[r][0]));
    _mm256_store_ps(scratch + r * NR + 8, _mm256_mul_ps(alphas, acc[r][1]));
  }
  storeEdge(scratch, NR, beta, c, ldc, rows, cols);
}

// col[j] lane i = row[i] lane j, for 8 x 8 floats.
inline void transpose8x8(const __m256 row[8], __m256 col[8]) {
  __m256 pairs[8], quads[8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    pairs[2 * i] = _mm256_unpacklo_ps(row[2 * i], row[2 * i + 1]);
    pairs[2 * i + 1] = _mm256_unpackhi_ps(row[2 * i], row[2 * i + 1]);
  }
  // quads[4g + c], 128-bit lane L: rows 4g .. 4g+3 at column 4L + c.
#pragma GCC unroll 2
  for (int g = 0; g < 2; ++g) {
    quads[4 * g + 0] = _mm256_shuffle_ps(pairs[4 * g], pairs[4 * g + 2], 0x44);
    quads[4 * g + 1] = _mm256_shuffle_ps(pairs[4 * g], pairs[4 * g + 2], 0xEE);
    quads[4 * g + 2] = _mm256_shuffle_ps(pairs[4 * g + 1], pairs[4 * g + 3], 0x44);
    quads[4 * g + 3] = _mm256_shuffle_ps(pairs[4 * g + 1], pairs[4 * g + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    col[c] = _mm256_permute2f128_ps(quads[c], quads[4 + c], 0x20);
    col[4 + c] = _mm256_permute2f128_ps(quads[c], quads[4 + c], 0x31);
  }
}

// Packing a row-major A is a transpose (MR rows of A become kc steps of MR floats):
// done 8 steps at a time in registers, it costs a fraction of the scalar copy's
// element-by-element moves, which showed as a third of the time of DLRM's narrow
// layers ([4096, 256] x [256, 64]).
void packA(const GemmProblem& p, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
  if (p.transA) return packPanelsA<MR>(p, i0, mc, p0, kc, out);
  const int64_t fullRows = mc / MR * MR;
  const __m256i panelStep = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);  // MR = 6 of 8 lanes
  for (int64_t ir = 0; ir < fullRows; ir += MR) {
    const float* src = p.A + (i0 + ir) * p.lda + p0;
    float* panel = out + ir * kc;
    __m256 row[8], col[8];
    row[6] = row[7] = _mm256_setzero_ps();
    int64_t k0 = 0;
    for (; k0 + 8 <= kc; k0 += 8) {
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) row[r] = _mm256_loadu_ps(src + r * p.lda + k0);
      transpose8x8(row, col);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) _mm256_maskstore_ps(panel + (k0 + j) * MR, panelStep, col[j]);
    }
    for (; k0 < kc; ++k0)
      for (int64_t r = 0; r < MR; ++r) panel[k0 * MR + r] = src[r * p.lda + k0];
  }
  if (fullRows < mc) packPanelsA<MR>(p, i0 + fullRows, mc - fullRows, p0, kc, out + fullRows * kc);
}
void packB(const GemmProblem& p, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
  packPanelsB<NR>(p, p0, kc, j0, nc, out);
}

// Products of up to 8 columns take the narrow loop (9 or more fill most of a tile).
constexpr int kNarrowMax = NR / 2;
#define HB_NARROW_VEC __m256
#define HB_NARROW_LANES 8
#define HB_NARROW_ACCUMULATORS 12
#define HB_NARROW_LOAD_PANEL(ptr) _mm256_maskload_ps((ptr), _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0))
#define HB_NARROW_BROADCAST(x) _mm256_set1_ps(x)
#define HB_NARROW_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define HB_NARROW_ZERO() _mm256_setzero_ps()
#define HB_NARROW_STORE(ptr, v) _mm256_store_ps((ptr), (v))
static_assert(MR == 6, "HB_NARROW_LOAD_PANEL loads 6 lanes");
#include "native/kernels/sgemm_narrow_impl.h"

}  // namespace avx2

#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f")

namespace avx512 {

constexpr int64_t MR = 14, NR = 32;

// 28 accumulators + 2 rows of B + 1 broadcast of A: 31 of the 32 zmm registers.
// Per k: 2 loads of B, 14 broadcasts, 28 FMAs.
void tile(int64_t kc, const float* __restrict a, const float* __restrict b, int64_t bStep, float alpha, float beta,
          float* c, int64_t ldc, int64_t rows, int64_t cols) {
  HB_SGEMM_PREFETCH_C(c, ldc, rows, 16, NR);
  __m512 acc[MR][2];
#pragma GCC unroll 14
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchSteps * bStep), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b + kPrefetchSteps * bStep + 16), _MM_HINT_T0);
    const __m512 b0 = _mm512_loadu_ps(b);
    const __m512 b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 14
    for (int r = 0; r < MR; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
    }
    a += MR;
    b += bStep;
  }
  const __m512 alphas = _mm512_set1_ps(alpha);
  if (rows == MR && cols == NR) {
    const __m512 betas = _mm512_set1_ps(beta);
#pragma GCC unroll 14
    for (int r = 0; r < MR; ++r) {
      float* cRow = c + r * ldc;
      __m512 v0 = _mm512_mul_ps(alphas, acc[r][0]);
      __m512 v1 = _mm512_mul_ps(alphas, acc[r][1]);
      if (beta != 0.0f) {
        v0 = _mm512_add_ps(v0, _mm512_mul_ps(betas, _mm512_loadu_ps(cRow)));
        v1 = _mm512_add_ps(v1, _mm512_mul_ps(betas, _mm512_loadu_ps(cRow + 16)));
      }
      _mm512_storeu_ps(cRow, v0);
      _mm512_storeu_ps(cRow + 16, v1);
    }
    return;
  }
  alignas(64) float scratch[MR * NR];
#pragma GCC unroll 14
  for (int r = 0; r < MR; ++r) {
    _mm512_store_ps(scratch + r * NR, _mm512_mul_ps(alphas, acc[r][0]));
    _mm512_store_ps(scratch + r * NR + 16, _mm512_mul_ps(alphas, acc[r][1]));
  }
  storeEdge(scratch, NR, beta, c, ldc, rows, cols);
}

// col[j] lane i = row[i] lane j, for 16 x 16 floats: pairs of rows interleaved, then
// pairs of pairs, then the 128-bit lanes regrouped twice. (The zero-masked forms with a
// full mask are the plain instructions; the unmasked intrinsics start from an
// "undefined" register that GCC 12 reports as maybe uninitialized.)
inline void transpose16x16(const __m512 row[16], __m512 col[16]) {
  constexpr __mmask16 kAll = 0xFFFF;
  constexpr __mmask8 kAll64 = 0xFF;
  __m512 pairs[16], quads[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    pairs[2 * i] = _mm512_maskz_unpacklo_ps(kAll, row[2 * i], row[2 * i + 1]);
    pairs[2 * i + 1] = _mm512_maskz_unpackhi_ps(kAll, row[2 * i], row[2 * i + 1]);
  }
  // quads[4g + c], lane L: rows 4g .. 4g+3 at column 4L + c.
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    const __m512d lo0 = _mm512_castps_pd(pairs[4 * g]), hi0 = _mm512_castps_pd(pairs[4 * g + 1]);
    const __m512d lo1 = _mm512_castps_pd(pairs[4 * g + 2]), hi1 = _mm512_castps_pd(pairs[4 * g + 3]);
    quads[4 * g + 0] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll64, lo0, lo1));
    quads[4 * g + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll64, lo0, lo1));
    quads[4 * g + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll64, hi0, hi1));
    quads[4 * g + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll64, hi0, hi1));
  }
  // Lane L of a row of 16 is 4 columns; 0x88 takes lanes 0 and 2 of each source, 0xDD
  // lanes 1 and 3.
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512 even01 = _mm512_maskz_shuffle_f32x4(kAll, quads[c], quads[4 + c], 0x88);
    const __m512 odd01 = _mm512_maskz_shuffle_f32x4(kAll, quads[c], quads[4 + c], 0xDD);
    const __m512 even23 = _mm512_maskz_shuffle_f32x4(kAll, quads[8 + c], quads[12 + c], 0x88);
    const __m512 odd23 = _mm512_maskz_shuffle_f32x4(kAll, quads[8 + c], quads[12 + c], 0xDD);
    col[c] = _mm512_maskz_shuffle_f32x4(kAll, even01, even23, 0x88);
    col[8 + c] = _mm512_maskz_shuffle_f32x4(kAll, even01, even23, 0xDD);
    col[4 + c] = _mm512_maskz_shuffle_f32x4(kAll, odd01, odd23, 0x88);
    col[12 + c] = _mm512_maskz_shuffle_f32x4(kAll, odd01, odd23, 0xDD);
  }
}

// A row-major A packed 16 steps at a time, as avx2::packA does 8.
void packA(const GemmProblem& p, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
  if (p.transA) return packPanelsA<MR>(p, i0, mc, p0, kc, out);
  const int64_t fullRows = mc / MR * MR;
  constexpr __mmask16 kPanelStep = (1u << MR) - 1;
  for (int64_t ir = 0; ir < fullRows; ir += MR) {
    const float* src = p.A + (i0 + ir) * p.lda + p0;
    float* panel = out + ir * kc;
    __m512 row[16], col[16];
    row[14] = row[15] = _mm512_setzero_ps();
    for (int64_t k0 = 0; k0 < kc; k0 += 16) {
      const int64_t steps = std::min<int64_t>(16, kc - k0);
      const __mmask16 valid = steps == 16 ? __mmask16(0xFFFF) : __mmask16((1u << steps) - 1);
#pragma GCC unroll 14
      for (int r = 0; r < MR; ++r) row[r] = _mm512_maskz_loadu_ps(valid, src + r * p.lda + k0);
      transpose16x16(row, col);
      for (int64_t j = 0; j < steps; ++j) _mm512_mask_storeu_ps(panel + (k0 + j) * MR, kPanelStep, col[j]);
    }
  }
  if (fullRows < mc) packPanelsA<MR>(p, i0 + fullRows, mc - fullRows, p0, kc, out + fullRows * kc);
}
void packB(const GemmProblem& p, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
  packPanelsB<NR>(p, p0, kc, j0, nc, out);
}

// Products of up to 16 columns take the narrow loop.
constexpr int kNarrowMax = NR / 2;
#define HB_NARROW_VEC __m512
#define HB_NARROW_LANES 16
#define HB_NARROW_ACCUMULATORS 24
#define HB_NARROW_LOAD_PANEL(ptr) _mm512_maskz_loadu_ps(__mmask16((1u << MR) - 1), (ptr))
#define HB_NARROW_BROADCAST(x) _mm512_set1_ps(x)
#define HB_NARROW_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define HB_NARROW_ZERO() _mm512_setzero_ps()
#define HB_NARROW_STORE(ptr, v) _mm512_store_ps((ptr), (v))
#include "native/kernels/sgemm_narrow_impl.h"

}  // namespace avx512

#pragma GCC pop_options

#undef HB_SGEMM_PREFETCH_C

struct Avx2Kernel {
  static constexpr int64_t MR = avx2::MR, NR = avx2::NR;
  static constexpr int64_t KC = 256, MC = 6 * 80, NC = 512;
  static constexpr auto tile = avx2::tile;
  static constexpr auto packA = avx2::packA;
  static constexpr auto packB = avx2::packB;
  static constexpr int64_t kNarrowMax = avx2::kNarrowMax;
  static constexpr auto narrowPanels = avx2::narrowPanels;
};

struct Avx512Kernel {
  static constexpr int64_t MR = avx512::MR, NR = avx512::NR;
  static constexpr int64_t KC = 256, MC = 14 * 32, NC = 1024;
  static constexpr auto tile = avx512::tile;
  static constexpr auto packA = avx512::packA;
  static constexpr auto packB = avx512::packB;
  static constexpr int64_t kNarrowMax = avx512::kNarrowMax;
  static constexpr auto narrowPanels = avx512::narrowPanels;
};

// The vector kernels give the same bits (see the top of the file) only while they cut K
// the same way.
static_assert(Avx2Kernel::KC == Avx512Kernel::KC, "AVX2 and AVX-512 results would differ");

#endif  // HB_SGEMM_X86

// Packing buffers, kept between calls (the pool's threads live as long as the process)
// and aligned to a cache line. Each thread has its own A and B blocks; the calling
// thread also holds the operand packed once for all threads.
enum PackSlot { kOwnA = 0, kOwnB = 1, kShared = 2 };

float* packBuffer(PackSlot slot, size_t floats) {
  constexpr size_t kAlignFloats = 16;
  thread_local std::vector<float> storage[3];
  std::vector<float>& buffer = storage[slot];
  if (buffer.size() < floats + kAlignFloats) buffer.resize(floats + kAlignFloats);
  const uintptr_t address = reinterpret_cast<uintptr_t>(buffer.data());
  const uintptr_t aligned = (address + 63) & ~uintptr_t(63);
  return reinterpret_cast<float*>(aligned);
}

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

// `extent` split into ceil(extent / limit) near-equal blocks, each a multiple of
// `unit`: K = 300 with KC = 256 runs as 152 + 148, not 256 + 44.
inline int64_t evenBlock(int64_t extent, int64_t limit, int64_t unit) {
  const int64_t blocks = ceilDiv(extent, limit);
  return std::min(limit, roundUp(ceilDiv(extent, blocks), unit));
}

// An operand packed whole, once, for every thread to read: the depth block starting at
// k = pc holds the panels of all rows (of A) or columns (of B), padded to `paddedWidth`,
// so the panel starting at row / column x of that block is at pc * paddedWidth + x * kc.
struct Prepacked {
  const float* data = nullptr;
  int64_t paddedWidth = 0;
  const float* block(int64_t pc, int64_t x, int64_t kc) const { return data + pc * paddedWidth + x * kc; }
};

// ---------------------------------------------------------------------------------
// The blocked loops over C[m0 : m1, n0 : n1], on the calling thread. m0 and n0 are
// multiples of MR and NR. An operand given prepacked is read from there; the other is
// packed block by block into this thread's buffers.
template <class Kernel>
void gemmRectangle(const GemmProblem& p, int64_t m0, int64_t m1, int64_t n0, int64_t n1, Prepacked sharedA = {},
                   Prepacked sharedB = {}) {
  constexpr int64_t MR = Kernel::MR, NR = Kernel::NR;
  const int64_t kcBlock = evenBlock(p.K, Kernel::KC, 1);
  const int64_t mcBlock = evenBlock(m1 - m0, Kernel::MC, MR);
  const int64_t ncBlock = evenBlock(n1 - n0, Kernel::NC, NR);
  // A rectangle one strip high uses each element of B once: packing B would only add a
  // copy, so the kernel reads B's rows in place (all but a last, partial panel).
  const bool bInPlace = !sharedB.data && !p.transB && m1 - m0 <= MR;
  float* ownA = sharedA.data ? nullptr : packBuffer(kOwnA, size_t(roundUp(mcBlock, MR) * kcBlock));
  float* ownB = sharedB.data ? nullptr : packBuffer(kOwnB, size_t(roundUp(ncBlock, NR) * kcBlock));
  for (int64_t jc = n0; jc < n1; jc += ncBlock) {
    const int64_t nc = std::min(ncBlock, n1 - jc);
    const int64_t inPlaceCols = bInPlace ? nc / NR * NR : 0;
    for (int64_t pc = 0; pc < p.K; pc += kcBlock) {
      const int64_t kc = std::min(kcBlock, p.K - pc);
      // Only the first depth block applies beta; the others add to what it wrote.
      const float beta = pc == 0 ? p.beta : 1.0f;
      const float* panelsB = ownB;
      if (!ownB) {
        panelsB = sharedB.block(pc, jc, kc);
      } else if (inPlaceCols < nc) {
        Kernel::packB(p, pc, kc, jc + inPlaceCols, nc - inPlaceCols, ownB);
        panelsB = ownB - inPlaceCols * kc;  // so that panelsB + jr * kc finds it
      }
      for (int64_t ic = m0; ic < m1; ic += mcBlock) {
        const int64_t mc = std::min(mcBlock, m1 - ic);
        const float* panelsA = ownA;
        if (ownA) {
          Kernel::packA(p, ic, mc, pc, kc, ownA);
        } else {
          panelsA = sharedA.block(pc, ic, kc);
        }
        for (int64_t ir = 0; ir < mc; ir += MR) {
          const float* panelA = panelsA + ir * kc;
          float* cStrip = p.C + (ic + ir) * p.ldc + jc;
          const int64_t rows = std::min(MR, mc - ir);
          for (int64_t jr = 0; jr < nc; jr += NR) {
            const int64_t cols = std::min(NR, nc - jr);
            if (jr < inPlaceCols) {
              Kernel::tile(kc, panelA, p.B + pc * p.ldb + jc + jr, p.ldb, p.alpha, beta, cStrip + jr, p.ldc, rows, cols);
            } else {
              Kernel::tile(kc, panelA, panelsB + jr * kc, NR, p.alpha, beta, cStrip + jr, p.ldc, rows, cols);
            }
          }
        }
      }
    }
  }
}

// Packs all of op(A) (forA) or op(B) in the Prepacked layout, on the pool when it is big.
template <class Kernel>
Prepacked prepack(const GemmProblem& p, bool forA) {
  const int64_t unit = forA ? Kernel::MR : Kernel::NR;
  const int64_t width = forA ? p.M : p.N;
  const int64_t paddedWidth = roundUp(width, unit);
  const int64_t kcBlock = evenBlock(p.K, Kernel::KC, 1);
  float* out = packBuffer(kShared, size_t(paddedWidth * p.K));
  // Pieces of one depth block and 8 panels each.
  const int64_t piece = 8 * unit;
  const int64_t piecesPerBlock = ceilDiv(width, piece);
  const int64_t pieces = ceilDiv(p.K, kcBlock) * piecesPerBlock;
  auto packPieces = [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const int64_t pc = (i / piecesPerBlock) * kcBlock;
      const int64_t kc = std::min(kcBlock, p.K - pc);
      const int64_t x = (i % piecesPerBlock) * piece;
      const int64_t extent = std::min(piece, width - x);
      float* dst = out + pc * paddedWidth + x * kc;
      if (forA) {
        Kernel::packA(p, x, extent, pc, kc, dst);
      } else {
        Kernel::packB(p, pc, kc, x, extent, dst);
      }
    }
  };
  // Below about 20 us of copying, waking the pool costs more than it saves.
  if (paddedWidth * p.K < (int64_t(1) << 16)) {
    packPieces(0, pieces);
  } else {
    parallelFor(pieces, 1, packPieces);
  }
  return Prepacked{out, paddedWidth};
}

// HB_SGEMM_NARROW=0 sends narrow products through the tiles too (to compare).
bool narrowWanted() {
  static const bool wanted = switchedOn("HB_SGEMM_NARROW");
  return wanted;
}

// C's rows [m0, m1) of a product of few columns (Kernel::narrowPanels), on the calling
// thread: A packed a row block and depth block at a time as the tiles take it.
template <class Kernel>
void narrowRows(const GemmProblem& p, int64_t m0, int64_t m1) {
  constexpr int64_t MR = Kernel::MR;
  const int64_t kcBlock = evenBlock(p.K, Kernel::KC, 1);
  const int64_t mcBlock = evenBlock(m1 - m0, Kernel::MC, MR);
  float* panels = packBuffer(kOwnA, size_t(roundUp(mcBlock, MR) * kcBlock));
  for (int64_t ic = m0; ic < m1; ic += mcBlock) {
    const int64_t mc = std::min(mcBlock, m1 - ic);
    for (int64_t pc = 0; pc < p.K; pc += kcBlock) {
      const int64_t kc = std::min(kcBlock, p.K - pc);
      Kernel::packA(p, ic, mc, pc, kc, panels);
      // Only the first depth block applies beta; the others add to what it wrote.
      Kernel::narrowPanels(p, kc, panels, ic, mc, pc, pc == 0 ? p.beta : 1.0f);
    }
  }
}

// A narrow product's rows in ranges on the pool when it is big enough to repay it.
template <class Kernel>
void narrowThreaded(const GemmProblem& p) {
  const double flops = 2.0 * double(p.M) * double(p.N) * double(p.K);
  const int64_t side = roundUp(128, Kernel::MR);
  const int64_t count = std::min<int64_t>({4 * threadPoolSize(), int64_t(flops / kMinFlopsPerRectangle), ceilDiv(p.M, side)});
  if (count <= 1) {
    narrowRows<Kernel>(p, 0, p.M);
    p.finished(0, p.M, 0, p.N);
    return;
  }
  const int64_t rows = roundUp(ceilDiv(p.M, count), Kernel::MR);
  parallelFor(ceilDiv(p.M, rows), 1, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      const int64_t m0 = t * rows, m1 = std::min(p.M, (t + 1) * rows);
      narrowRows<Kernel>(p, m0, m1);
      p.finished(m0, m1, 0, p.N);
    }
  });
}

// Splits C into rectangles along its longer side, M or N, and runs them on the pool.
// The operand every rectangle needs whole (B when splitting M, A when splitting N) is
// packed once beforehand; each rectangle packs only its own part of the other. There
// are up to 4 rectangles per thread, handed out as threads come free, so that a thread
// that starts late (a core busy with something else, a slow wake-up) delays the product
// by a small rectangle, not by half of it. Every rectangle reads the shared operand in
// full, so rectangles keep at least kMinSide rows or columns: that read then costs
// under one float per kMinSide multiply-adds.
template <class Kernel>
void gemmThreaded(const GemmProblem& p) {
  if constexpr (Kernel::kNarrowMax > 0) {
    if (p.N <= Kernel::kNarrowMax && narrowWanted()) return narrowThreaded<Kernel>(p);
  }
  constexpr int64_t kMinSide = 128;
  const double flops = 2.0 * double(p.M) * double(p.N) * double(p.K);
  const int64_t threads = threadPoolSize();
  const bool splitRows = p.M >= p.N;
  const int64_t extent = splitRows ? p.M : p.N;
  const int64_t unit = splitRows ? Kernel::MR : Kernel::NR;
  const int64_t minSide = roundUp(kMinSide, unit);
  int64_t count = std::min<int64_t>({4 * threads, int64_t(flops / kMinFlopsPerRectangle), ceilDiv(extent, minSide)});
  if (threads == 1 || count <= 1) {
    gemmRectangle<Kernel>(p, 0, p.M, 0, p.N);
    p.finished(0, p.M, 0, p.N);
    return;
  }
  // A whole number of rounds over the threads, when there is more than one round.
  if (count > threads) count = count / threads * threads;
  const int64_t side = roundUp(ceilDiv(extent, count), unit);
  count = ceilDiv(extent, side);
  const Prepacked shared = prepack<Kernel>(p, /*forA=*/!splitRows);
  parallelFor(count, 1, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      const int64_t begin = t * side;
      const int64_t end = std::min(extent, begin + side);
      if (splitRows) {
        gemmRectangle<Kernel>(p, begin, end, 0, p.N, {}, shared);
        p.finished(begin, end, 0, p.N);
      } else {
        gemmRectangle<Kernel>(p, 0, p.M, begin, end, shared, {});
        p.finished(0, p.M, begin, end);
      }
    }
  });
}

enum class Isa { Portable, Avx2, Avx512 };

Isa bestIsa() {
  Isa supported = Isa::Portable;
#ifdef HB_SGEMM_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) supported = Isa::Avx2;
  if (supported == Isa::Avx2 && __builtin_cpu_supports("avx512f")) supported = Isa::Avx512;
#endif
  // HB_CPU_ISA caps every host kernel (native/kernels/cpu_isa.h); HB_SGEMM_ISA this one.
  Isa cap = cpuIsaCap() == CpuIsa::Portable ? Isa::Portable : cpuIsaCap() == CpuIsa::Avx2 ? Isa::Avx2 : Isa::Avx512;
  if (const char* env = std::getenv("HB_SGEMM_ISA")) {
    if (std::strcmp(env, "portable") == 0) cap = Isa::Portable;
    if (std::strcmp(env, "avx2") == 0) cap = std::min(cap, Isa::Avx2);
  }
  return std::min(supported, cap);
}

Isa isa() {
  static const Isa chosen = bestIsa();
  return chosen;
}

// C = beta * C, the whole product when K == 0 or alpha == 0 (as in BLAS, A and B are
// not read then).
void scaleC(const GemmProblem& p) {
  if (p.beta == 1.0f) return;
  for (int64_t i = 0; i < p.M; ++i) {
    float* cRow = p.C + i * p.ldc;
    if (p.beta == 0.0f) {
      std::fill(cRow, cRow + p.N, 0.0f);
    } else {
      for (int64_t j = 0; j < p.N; ++j) cRow[j] *= p.beta;
    }
  }
}

}  // namespace

const char* sgemmIsaName() {
  switch (isa()) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    default: return "portable";
  }
}

void sgemmCpu(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const SgemmEpilogue* epilogue) {
  HB_CHECK(M >= 0 && N >= 0 && K >= 0, "sgemm: negative size M=", M, " N=", N, " K=", K);
  HB_CHECK(lda >= (transA ? M : K) && ldb >= (transB ? K : N) && ldc >= N,
           "sgemm: leading dimension too small (lda=", lda, " ldb=", ldb, " ldc=", ldc, " for M=", M, " N=", N,
           " K=", K, ")");
  if (M == 0 || N == 0) return;
  const GemmProblem p{transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, epilogue};
  if (K == 0 || alpha == 0.0f) {
    scaleC(p);
    p.finished(0, M, 0, N);
    return;
  }
  switch (isa()) {
#ifdef HB_SGEMM_X86
    case Isa::Avx512:
      return gemmThreaded<Avx512Kernel>(p);
    case Isa::Avx2:
      return gemmThreaded<Avx2Kernel>(p);
#endif
    default:
      return gemmThreaded<PortableKernel>(p);
  }
}

}  // namespace hb
