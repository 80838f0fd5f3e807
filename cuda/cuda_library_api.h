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

// The rest of NCCL's C API that cuda/nccl_communicator.cu calls. ncclComm_t and
// cudaStream_t as void*, ncclDataType_t / ncclRedOp_t / ncclResult_t as int.
// ncclUniqueId is a struct of 128 bytes passed by value.
struct HbNcclUniqueId {
  char internal[128];
};
typedef int (*HbNcclGetUniqueIdFn)(HbNcclUniqueId* id);
typedef int (*HbNcclCommInitRankFn)(void** comm, int nranks, HbNcclUniqueId id, int rank);
typedef int (*HbNcclCommAbortFn)(void* comm);
typedef int (*HbNcclCommGetAsyncErrorFn)(void* comm, int* asyncError);
typedef const char* (*HbNcclGetErrorStringFn)(int result);
typedef int (*HbNcclAllReduceFn)(const void* send, void* recv, size_t count, int dtype, int op, void* comm, void* stream);
typedef int (*HbNcclAllGatherFn)(const void* send, void* recv, size_t count, int dtype, void* comm, void* stream);
typedef int (*HbNcclBroadcastFn)(const void* send, void* recv, size_t count, int dtype, int root, void* comm,
                                 void* stream);
typedef int (*HbNcclSendFn)(const void* send, size_t count, int dtype, int peer, void* comm, void* stream);
typedef int (*HbNcclRecvFn)(void* recv, size_t count, int dtype, int peer, void* comm, void* stream);
typedef int (*HbNcclGroupFn)();

}

namespace hb {
namespace cuda {
// The dlopen handle of cuBLAS, opened on first call; null when it could not be opened
// (cublasStatus() says why).
void* cublasLibrary();
// The dlopen handle of NCCL, opened on first call; null when it could not be opened
// (ncclStatus() says why).
void* ncclLibrary();
}  // namespace cuda
}  // namespace hb
