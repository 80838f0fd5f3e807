#include "cuda/emulation/emulated_cublas.h"

#include <cuda_runtime.h>

#include <exception>
#include <string>

#include "cuda/emulation/runtime_state.h"
#include "native/kernels/sgemm.h"

namespace hb {
namespace cuda_emulation {

namespace {
constexpr int kSuccess = 0;
constexpr int kInvalidValue = 7;    // CUBLAS_STATUS_INVALID_VALUE
constexpr int kExecutionFailed = 13;  // CUBLAS_STATUS_EXECUTION_FAILED

struct Handle {
  cudaStream_t stream = nullptr;
};

// The floats a column-major rows x cols matrix with leading dimension ld spans.
size_t extent(int rows, int cols, int ld) {
  if (rows == 0 || cols == 0) return 0;
  return (size_t(cols) - 1) * size_t(ld) + size_t(rows);
}
}  // namespace

int cublasCreate(void** handle) {
  if (handle == nullptr) return kInvalidValue;
  *handle = new Handle();
  return kSuccess;
}

int cublasSetStream(void* handle, void* stream) {
  if (handle == nullptr || !isStream(static_cast<cudaStream_t>(stream))) return kInvalidValue;
  static_cast<Handle*>(handle)->stream = static_cast<cudaStream_t>(stream);
  return kSuccess;
}

int cublasSgemm(void* handle, int transa, int transb, int m, int n, int k, const float* alpha, const float* A, int lda,
                const float* B, int ldb, const float* beta, float* C, int ldc) {
  if (handle == nullptr || alpha == nullptr || beta == nullptr || m < 0 || n < 0 || k < 0) return kInvalidValue;
  if ((transa != 0 && transa != 1) || (transb != 0 && transb != 1)) return kInvalidValue;
  const int aRows = transa ? k : m, aCols = transa ? m : k;
  const int bRows = transb ? n : k, bCols = transb ? k : n;
  if (lda < (aRows > 0 ? aRows : 1) || ldb < (bRows > 0 ? bRows : 1) || ldc < (m > 0 ? m : 1)) return kInvalidValue;
  // On a GPU a matrix past its allocation is an illegal address; here, an error.
  if (!isDeviceRange(C, extent(m, n, ldc) * sizeof(float))) return kExecutionFailed;
  if (k > 0 && (!isDeviceRange(A, extent(aRows, aCols, lda) * sizeof(float)) ||
                !isDeviceRange(B, extent(bRows, bCols, ldb) * sizeof(float)))) {
    return kExecutionFailed;
  }
  // Column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T, and a column-major
  // matrix's memory read row-major is its transpose.
  // Queued on the handle's stream; alpha and beta are host values, read now as cuBLAS's
  // host pointer mode reads them.
  const cudaStream_t stream = static_cast<Handle*>(handle)->stream;
  const float a = *alpha, b = *beta;
  enqueue(stream, [=] {
    try {
      sgemmCpu(transb != 0, transa != 0, n, m, k, a, B, ldb, A, lda, b, C, ldc);
    } catch (const std::exception& e) {
      reportKernelFailure(stream, std::string("cublasSgemm: ") + e.what());
    }
  });
  return kSuccess;
}

}  // namespace cuda_emulation
}  // namespace hb
