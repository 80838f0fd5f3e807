// The CUDA mirrors of the dense graph kernels (native/exec/*_kernels.cc). Plain C++: the
// kernels in native/exec check their arguments, then call these with device pointers.
// Every call is queued on the device's compute stream and returns without waiting, so
// a plan's kernels run back to back; copies made on the executor thread (fetches, host
// fallbacks) wait for what was queued before them. Builds without CUDA link
// native/core/cuda_dense_unavailable.cc, whose functions throw.
#pragma once

#include <cstdint>

namespace hb {
namespace cuda {

// Dims a device kernel indexes with; more are refused by the caller before launch.
constexpr int kMaxKernelRank = 8;

// out[i] = op(a[offsetA(i)], b[offsetB(i)]) over out's shape (row-major), each operand
// read through its own strides (0 along a broadcast dim).
struct BroadcastIndex {
  int32_t rank = 0;
  int64_t shape[kMaxKernelRank] = {};
  int64_t strideA[kMaxKernelRank] = {};
  int64_t strideB[kMaxKernelRank] = {};
};
void binary(int device, int32_t op, const float* a, const float* b, float* out, int64_t n, const BroadcastIndex& index);
void unary(int device, int32_t op, float constant, const float* x, float* y, int64_t n);
void unaryGrad(int device, int32_t op, const float* dy, const float* v, float* dx, int64_t n);

// A big shape S as runs of dims that a small shape T keeps or broadcasts (reduced).
struct RunLayout {
  int32_t rank = 0;
  int64_t size[kMaxKernelRank] = {};
  bool reduced[kMaxKernelRank] = {};
};
// T = scale * (S summed over the reduced runs), each output's terms in row-major order,
// blocked by kSumBlock as the CPU sums them (dense_math.h), so the bits match.
void reduceToShape(int device, const RunLayout& runs, const float* in, float* out, float scale);
// S = scale * T broadcast along the reduced runs.
void broadcastTo(int device, const RunLayout& runs, const float* in, float* out, float scale);
// out[i] = in[i] * scale.
void scaledCopy(int device, const float* in, float* out, int64_t n, float scale);

// `rows` rows of `width` floats, from rows inStride apart to rows outStride apart.
void copyRows(int device, const float* in, int64_t inStride, float* out, int64_t outStride, int64_t rows, int64_t width);

void sigmoidCrossEntropy(int device, const float* labels, const float* logits, float* out, int64_t n);
void sigmoidCrossEntropyGrad(int device, const float* dy, const float* labels, const float* logits, float* dx, int64_t n);

// t [batch, features * width] -> z [batch, features * (features - 1) / 2], and back.
void dotInteraction(int device, const float* t, float* z, int64_t batch, int64_t features, int64_t width);
void dotInteractionGrad(int device, const float* dz, const float* t, float* dt, int64_t batch, int64_t features,
                        int64_t width);

// Row-major C = alpha * op(A) op(B) + beta * C through cuBLAS (opened with dlopen).
// Sizes and leading dimensions must fit in int32 (checked, throws hb::Error).
void sgemm(int device, bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// Waits for everything queued on the device's compute stream; reports a kernel's
// failure as hb::Error naming `what`.
void synchronize(int device, const char* what);

}  // namespace cuda
}  // namespace hb
