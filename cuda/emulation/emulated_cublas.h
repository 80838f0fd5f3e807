// cuBLAS for the emulated CUDA device: the entry points cuda/cublas_sgemm.cu calls, with
// cuBLAS's column-major contract, computed by hb-ts's CPU sgemm on the emulated device's
// (host) memory. Signatures as cuda/cuda_library_api.h declares them.
#pragma once

namespace hb {
namespace cuda_emulation {

int cublasCreate(void** handle);
int cublasSetStream(void* handle, void* stream);
int cublasSgemm(void* handle, int transa, int transb, int m, int n, int k, const float* alpha, const float* A, int lda,
                const float* B, int ldb, const float* beta, float* C, int ldc);

}  // namespace cuda_emulation
}  // namespace hb
