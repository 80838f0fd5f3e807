// Marks math that both the C++ kernels and the CUDA kernels call, so the CPU tests
// check exactly what the GPU runs.
#pragma once

#if defined(__CUDACC__)
#define HB_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define HB_HOST_DEVICE inline
#endif

namespace hb {

// Single-rounding float arithmetic. nvcc contracts a*b+c into one FMA by default and
// the host compiler may not; spelling each rounding out keeps CPU and CUDA results
// bit-identical.
HB_HOST_DEVICE float mulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

HB_HOST_DEVICE float addRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

HB_HOST_DEVICE float divRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// The same for doubles (the truncated normal's inverse CDF runs in double).
HB_HOST_DEVICE double mulRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

HB_HOST_DEVICE double addRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

HB_HOST_DEVICE double divRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

}  // namespace hb
