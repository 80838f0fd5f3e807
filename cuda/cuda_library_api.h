// The few cuBLAS and NCCL entry points hb-ts calls, declared by hand. The toolkit used
// to build may ship neither header, and opening the libraries with dlopen keeps the
// addon loadable on machines that lack them. Only ABI-stable C functions are named.
#pragma once

extern "C" {

// cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value);
// libraryPropertyType: MAJOR_VERSION = 0, MINOR_VERSION = 1, PATCH_LEVEL = 2.
typedef int (*HbCublasGetPropertyFn)(int type, int* value);

// cublasStatus_t (0: success) with cublasHandle_t as void*, cudaStream_t as void* and
// cublasOperation_t as int (CUBLAS_OP_N = 0, CUBLAS_OP_T = 1).
typedef int (*HbCublasCreateFn)(void** handle);
typedef int (*HbCublasSetStreamFn)(void* handle, void* stream);
typedef int (*HbCublasSgemmFn)(void* handle, int transa, int transb, int m, int n, int k, const float* alpha,
                               const float* A, int lda, const float* B, int ldb, const float* beta, float* C, int ldc);

// ncclResult_t ncclGetVersion(int* version); version = major*10000 + minor*100 + patch
// since NCCL 2.9 (major*1000 + minor*100 + patch before).
typedef int (*HbNcclGetVersionFn)(int* version);

}

namespace hb {
namespace cuda {
// The dlopen handle of cuBLAS, opened on first call; null when it could not be opened
// (cublasStatus() says why).
void* cublasLibrary();
}  // namespace cuda
}  // namespace hb
