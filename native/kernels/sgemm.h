// Single-precision GEMM for the CPU: cache-blocked, packed, vectorised, threaded.
#pragma once

#include <cstdint>
#include <functional>

namespace hb {

// C[M,N] = alpha * op(A) * op(B) + beta * C, row-major. op(A) is A [M,K] (lda >= K) or,
// with transA, A^T where A is [K,M] (lda >= M); likewise B. beta == 0 ignores C's
// previous contents (NaN included), as BLAS does; so do K == 0 and alpha == 0, which
// leave C = beta * C without reading A or B. Throws hb::Error for a negative size or a
// leading dimension below the one the shapes need.
//
// Runs on hb::parallelFor's pool when the product is big enough to repay it; must not
// be called from inside a parallelFor body. Picks AVX-512, AVX2+FMA or portable code at
// the first call (HB_SGEMM_ISA=portable|avx2 caps the choice). Results do not depend on
// the thread count, and are the same bits with AVX2 and AVX-512.
//
// `epilogue`, when given, is called once for each finished piece of C, rows [m0, m1) and
// columns [n0, n1) (together they cover C once), on the thread that computed the piece,
// while it is still in that core's caches: a dense layer's bias and activation
// (matmul_bias_activation) cost no pass over C from memory. It must not call parallelFor.
using SgemmEpilogue = std::function<void(int64_t m0, int64_t m1, int64_t n0, int64_t n1)>;
void sgemmCpu(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const SgemmEpilogue* epilogue = nullptr);

// The instruction set sgemmCpu picked: "avx512", "avx2" or "portable".
const char* sgemmIsaName();

// The multiply-add peak of that instruction set on this machine, measured (fma_peak.cc)
// by every pool thread at once for about `seconds`: chains of independent vector FMAs.
// gflops is 0 for the portable GEMM.
struct FmaPeak {
  const char* isa = "portable";
  int threads = 1;
  double gflops = 0;
};
FmaPeak measureFmaPeak(double seconds);

}  // namespace hb
