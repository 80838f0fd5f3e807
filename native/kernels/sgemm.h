// Single-precision GEMM for the CPU: cache-blocked, packed, vectorised, threaded.
#pragma once

#include <cstdint>

namespace hb {

// C[M,N] = alpha * op(A) * op(B) + beta * C, row-major. op(A) is A [M,K] (lda >= K) or,
// with transA, A^T where A is [K,M] (lda >= M); likewise B. beta == 0 ignores C's
// previous contents (NaN included), as BLAS does.
void sgemmCpu(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

}  // namespace hb
