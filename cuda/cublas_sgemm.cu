// Row-major SGEMM on the GPU through cuBLAS, opened with dlopen (cuda/library_loader.cc):
// the addon loads where cuBLAS is missing, and a plan's matmul fails with the reason.
#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/cuda_library_api.h"
#include "cuda/dense_kernels.h"
#include "native/core/status.h"

#if defined(HB_CUDA_EMULATED)
#include "cuda/emulation/emulated_cublas.h"
#endif

namespace hb {
namespace cuda {

namespace {

struct CublasApi {
  HbCublasCreateFn create = nullptr;
  HbCublasSetStreamFn setStream = nullptr;
  HbCublasSgemmFn sgemm = nullptr;
};

const CublasApi& cublasApi() {
  static std::once_flag once;
  static CublasApi api;
  static std::string error;
  std::call_once(once, [] {
#if defined(HB_CUDA_EMULATED)
    api.create = &cuda_emulation::cublasCreate;
    api.setStream = &cuda_emulation::cublasSetStream;
    api.sgemm = &cuda_emulation::cublasSgemm;
    return;
#endif
    void* library = cublasLibrary();
    if (library == nullptr) {
      error = cublasStatus().error;
      return;
    }
    api.create = reinterpret_cast<HbCublasCreateFn>(dlsym(library, "cublasCreate_v2"));
    api.setStream = reinterpret_cast<HbCublasSetStreamFn>(dlsym(library, "cublasSetStream_v2"));
    api.sgemm = reinterpret_cast<HbCublasSgemmFn>(dlsym(library, "cublasSgemm_v2"));
    if (!api.create || !api.setStream || !api.sgemm) {
      api = CublasApi{};
      error = "cuBLAS opened, but cublasCreate_v2, cublasSetStream_v2 or cublasSgemm_v2 is missing";
    }
  });
  HB_CHECK(api.sgemm != nullptr, "matmul on CUDA needs cuBLAS: ", error,
           ". Put libcublas on the loader path or name its folder in HB_CUDA_LIB_DIRS");
  return api;
}

// One handle per device, bound to its compute stream; made on first use by the
// device's executor thread and kept for the life of the process.
void* handleFor(int device, const CublasApi& api) {
  static std::mutex mutex;
  static auto* handles = new std::map<int, void*>();
  DeviceContext& context = useDevice(device);
  std::lock_guard<std::mutex> lock(mutex);
  auto found = handles->find(device);
  if (found != handles->end()) return found->second;
  void* handle = nullptr;
  const int created = api.create(&handle);
  HB_CHECK(created == 0 && handle != nullptr, "cublasCreate failed with status ", created, " on cuda:", device);
  const int bound = api.setStream(handle, static_cast<void*>(context.compute));
  HB_CHECK(bound == 0, "cublasSetStream failed with status ", bound, " on cuda:", device);
  handles->emplace(device, handle);
  return handle;
}

int asInt(int64_t value, const char* what) {
  HB_CHECK(value >= 0 && value <= int64_t(2147483647), "matmul on CUDA: ", what, " = ", value,
           " does not fit cuBLAS's 32-bit sizes");
  return int(value);
}

}  // namespace

void sgemm(int device, bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const int m = asInt(M, "M"), n = asInt(N, "N"), k = asInt(K, "K");
  // cuBLAS wants leading dimensions >= 1 even where a matrix is empty.
  const int la = asInt(lda > 0 ? lda : 1, "lda"), lb = asInt(ldb > 0 ? ldb : 1, "ldb"), lc = asInt(ldc > 0 ? ldc : 1, "ldc");
  if (m == 0 || n == 0) return;
  if (k == 0 && (beta == 0.0f || beta == 1.0f)) {
    // C = beta * C without trusting the library's quick return to zero C: plan outputs
    // live in reused buffers.
    if (beta == 0.0f) {
      check(cudaMemset2DAsync(C, size_t(lc) * sizeof(float), 0, size_t(n) * sizeof(float), size_t(m),
                              useDevice(device).compute),
            "matmul with K = 0");
    }
    return;
  }
  const CublasApi& api = cublasApi();
  void* handle = handleFor(device, api);
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the stored B and A
  // are read as column-major op(B)^T and op(A)^T by swapping them and M with N. K == 0
  // gives C = beta * C, as BLAS defines.
  const int status = api.sgemm(handle, transB ? 1 : 0, transA ? 1 : 0, n, m, k, &alpha, B, lb, A, la, &beta, C, lc);
  HB_CHECK(status == 0, "cublasSgemm failed with status ", status, " (", M, "x", K, " by ", K, "x", N, ")");
}

}  // namespace cuda
}  // namespace hb
