// The one way cuda/*.cu launch kernels, so the same kernel bodies build twice: under
// nvcc as the real launch, under the host compiler (HB_CUDA_EMULATE=ON) on the emulated
// device of cuda/emulation/, which runs every block and thread of the launch on the host.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace hb {
namespace cuda {

// kernel<<<grid, block, sharedBytes, stream>>>(args...): queued on the GPU; emulated,
// queued on the stream too (cuda/emulation/runtime_state.h's enqueue). Errors surface as for a real launch: a bad
// configuration through cudaGetLastError, a failure while running through the next
// synchronizing call.
template <typename... Params, typename... Args>
void launchKernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t sharedBytes, cudaStream_t stream,
                  Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launchKernel: wrong number of kernel arguments");
  static_assert((std::is_convertible<Args&&, Params>::value && ...),
                "launchKernel: an argument does not convert implicitly to its kernel parameter");
#if defined(__CUDACC__)
  kernel<<<grid, block, sharedBytes, stream>>>(std::forward<Args>(args)...);
#else
  // Kernel parameters are copied once at launch, as CUDA copies them to the device.
  std::tuple<std::decay_t<Params>...> params(std::forward<Args>(args)...);
  cuda_emulation::launch(grid, block, sharedBytes, stream, [kernel, params = std::move(params)] { std::apply(kernel, params); });
#endif
}

// The block's dynamic shared memory (the launch's sharedBytes), as T.
#if defined(__CUDACC__)
template <typename T>
__device__ inline T* dynamicSharedMemory() {
  extern __shared__ __align__(16) unsigned char hbDynamicShared[];
  return reinterpret_cast<T*>(hbDynamicShared);
}
#else
template <typename T>
inline T* dynamicSharedMemory() {
  return static_cast<T*>(cuda_emulation::dynamicShared());
}
#endif

}  // namespace cuda
}  // namespace hb
