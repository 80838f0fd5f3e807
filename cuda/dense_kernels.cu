// The dense graph kernels on the GPU: one thread per output element, the per-element
// math from native/kernels/dense_math.h, so the CPU tests check what runs here. Sums
// keep the CPU's order (blocks of kSumBlock terms, each summed in order from 0, block
// sums added in order), so reductions give the CPU's bits; transcendental functions
// (exp, tanh, log) use CUDA's own and may differ from glibc's in the last place.
#include <algorithm>
#include <memory>

#include "cuda/cuda_context.h"
#include "cuda/kernel_launch.h"
#include "cuda/dense_kernels.h"
#include "cuda/element_launch.h"
#include "native/core/buffer.h"
#include "native/kernels/dense_math.h"

namespace hb {
namespace cuda {

namespace {

// Launches are queued on the compute stream; a bad launch is reported at once.
void launched(const char* what) { check(cudaGetLastError(), what); }

template <BinaryOp Op>
__global__ void binaryKernel(const float* a, const float* b, float* out, int64_t n, BroadcastIndex index) {
  const int64_t i = elementIndex();
  if (i >= n) return;
  int64_t offsetA = 0, offsetB = 0, rest = i;
  for (int32_t d = index.rank - 1; d >= 0; --d) {
    const int64_t at = rest % index.shape[d];
    rest /= index.shape[d];
    offsetA += at * index.strideA[d];
    offsetB += at * index.strideB[d];
  }
  out[i] = binaryOf<Op>(a[offsetA], b[offsetB]);
}

template <UnaryOp Op>
__global__ void unaryKernel(const float* x, float* y, int64_t n, float constant) {
  const int64_t i = elementIndex();
  if (i < n) y[i] = unaryOf<Op>(x[i], constant);
}

template <UnaryOp Op>
__global__ void unaryGradKernel(const float* dy, const float* v, float* dx, int64_t n) {
  const int64_t i = elementIndex();
  if (i < n) dx[i] = unaryGradOf<Op>(dy[i], v[i]);
}

// Row-major strides of the runs, and the offset of an index split over the runs of one
// kind (kept or reduced), last run fastest.
struct RunStrides {
  int32_t rank = 0;
  int64_t size[kMaxKernelRank] = {};
  int64_t stride[kMaxKernelRank] = {};
  bool reduced[kMaxKernelRank] = {};
};

RunStrides stridesOf(const RunLayout& runs) {
  RunStrides s;
  s.rank = runs.rank;
  int64_t step = 1;
  for (int32_t k = runs.rank - 1; k >= 0; --k) {
    s.size[k] = runs.size[k];
    s.reduced[k] = runs.reduced[k];
    s.stride[k] = step;
    step *= runs.size[k];
  }
  return s;
}

__device__ int64_t offsetOver(const RunStrides& s, bool reduced, int64_t index) {
  int64_t offset = 0;
  for (int32_t k = s.rank - 1; k >= 0; --k) {
    if (s.reduced[k] != reduced) continue;
    offset += (index % s.size[k]) * s.stride[k];
    index /= s.size[k];
  }
  return offset;
}

constexpr int kTermPrefetch = 16;

// partial[block * outputs + o]: the in-order sum of output o's terms in that block.
// Adjacent threads take adjacent outputs, so column sums read contiguous memory.
__global__ void reduceBlocks(RunStrides s, const float* in, float* partial, int64_t outputs, int64_t terms,
                             int64_t blocks) {
  const int64_t t = elementIndex();
  if (t >= outputs * blocks) return;
  const int64_t o = t % outputs;
  const int64_t block = t / outputs;
  const int64_t base = offsetOver(s, false, o);
  const int64_t first = block * kSumBlock;
  const int64_t last = first + kSumBlock < terms ? first + kSumBlock : terms;
  // Term j's position in each reduced run, advanced like an odometer (no division per
  // term), and kTermPrefetch loads issued before they are added in order: a thread's
  // terms are a chain of adds, but need not be a chain of loads.
  int64_t digit[kMaxKernelRank] = {};
  int64_t offset = 0;
  {
    int64_t index = first;
    for (int32_t k = s.rank - 1; k >= 0; --k) {
      if (!s.reduced[k]) continue;
      digit[k] = index % s.size[k];
      index /= s.size[k];
      offset += digit[k] * s.stride[k];
    }
  }
  auto advance = [&] {
    for (int32_t k = s.rank - 1; k >= 0; --k) {
      if (!s.reduced[k]) continue;
      offset += s.stride[k];
      if (++digit[k] < s.size[k]) return;
      offset -= digit[k] * s.stride[k];
      digit[k] = 0;
    }
  };
  float sum = 0.0f;
  for (int64_t j = first; j < last; j += kTermPrefetch) {
    // Positions first (arithmetic only; past the end they stay on the last term), then
    // the loads with no branch between them, then the adds in order.
    int64_t at[kTermPrefetch];
#pragma unroll
    for (int q = 0; q < kTermPrefetch; ++q) {
      at[q] = offset;
      if (j + q + 1 < last) advance();
    }
    float loaded[kTermPrefetch];
#pragma unroll
    for (int q = 0; q < kTermPrefetch; ++q) loaded[q] = in[base + at[q]];
#pragma unroll
    for (int q = 0; q < kTermPrefetch; ++q) {
      if (j + q < last) sum = addRn(sum, loaded[q]);
    }
  }
  partial[t] = sum;
}

__global__ void reduceCombine(const float* partial, float* out, int64_t outputs, int64_t blocks, float scale) {
  const int64_t o = elementIndex();
  if (o >= outputs) return;
  float total = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) total = addRn(total, partial[b * outputs + o]);
  out[o] = mulRn(total, scale);
}

// out (all runs) from in (the kept runs only, row-major).
__global__ void broadcastKernel(RunStrides s, RunStrides keptStrides, const float* in, float* out, int64_t n,
                                float scale) {
  const int64_t e = elementIndex();
  if (e >= n) return;
  int64_t offset = 0, rest = e;
  for (int32_t k = s.rank - 1; k >= 0; --k) {
    const int64_t at = rest % s.size[k];
    rest /= s.size[k];
    if (!s.reduced[k]) offset += at * keptStrides.stride[k];
  }
  out[e] = mulRn(in[offset], scale);
}

__global__ void scaledCopyKernel(const float* in, float* out, int64_t n, float scale) {
  const int64_t i = elementIndex();
  if (i < n) out[i] = mulRn(in[i], scale);
}

__global__ void sigmoidXentKernel(const float* z, const float* x, float* y, int64_t n) {
  const int64_t i = elementIndex();
  if (i < n) y[i] = hb::sigmoidCrossEntropy(z[i], x[i]);
}

__global__ void sigmoidXentGradKernel(const float* dy, const float* z, const float* x, float* dx, int64_t n) {
  const int64_t i = elementIndex();
  if (i < n) dx[i] = hb::sigmoidCrossEntropyGrad(dy[i], z[i], x[i]);
}

// Examples whose F x (D + 1) floats fit in this much shared memory are computed from it,
// one block per example; larger ones read global memory (the kernels after these).
constexpr size_t kInteractionSharedBytes = 40 << 10;
constexpr int kInteractionThreads = 128;

// Pair p (the output column) is (i, j) with i * (i - 1) / 2 <= p < i * (i + 1) / 2.
__device__ int32_t pairRow(int32_t p) {
  int32_t i = int32_t((1.0f + sqrtf(1.0f + 8.0f * float(p))) / 2.0f);
  while (i * (i - 1) / 2 > p) --i;
  while ((i + 1) * i / 2 <= p) ++i;
  return i;
}

// One block per example: its F rows staged in shared memory (stride D + 1, so the threads
// of a warp, reading rows j, j + 1, ... at one k, hit different banks), then one thread
// per pair, each dot in index order as the CPU's. 32-bit indices, as in the gradient's.
__global__ void dotInteractionSharedKernel(const float* t, float* z, int64_t batch, int32_t features, int32_t width) {
  float* rows = dynamicSharedMemory<float>();
  const int32_t stride = width + 1;
  const int32_t elements = features * width;
  const int32_t pairs = int32_t(interactionPairCount(features));
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    const float* example = t + b * elements;
    __syncthreads();  // the last example's rows are read
    for (int32_t e = threadIdx.x; e < elements; e += blockDim.x) {
      const int32_t row = e / width;
      rows[row * stride + e - row * width] = example[e];
    }
    __syncthreads();
    for (int32_t p = threadIdx.x; p < pairs; p += blockDim.x) {
      const int32_t i = pairRow(p);
      const int32_t j = p - i * (i - 1) / 2;
      z[b * pairs + p] = dotInOrder(rows + i * stride, rows + j * stride, width);
    }
  }
}

// One block per example: its rows and pair gradients staged in shared memory, then one
// thread per (i, k). An example fits in shared memory, so its indices fit in 32 bits
// (64-bit divisions and products cost the GPU several instructions each).
__global__ void dotInteractionGradSharedKernel(const float* dz, const float* t, float* dt, int64_t batch,
                                               int32_t features, int32_t width) {
  float* rows = dynamicSharedMemory<float>();
  const int32_t elements = features * width;
  const int32_t pairs = int32_t(interactionPairCount(features));
  float* pairGrads = rows + elements;
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    const float* example = t + b * elements;
    __syncthreads();  // the last example's rows are read
    for (int32_t e = threadIdx.x; e < elements; e += blockDim.x) rows[e] = example[e];
    for (int32_t p = threadIdx.x; p < pairs; p += blockDim.x) pairGrads[p] = dz[b * pairs + p];
    __syncthreads();
    for (int32_t e = threadIdx.x; e < elements; e += blockDim.x) {
      const int32_t i = e / width;
      dt[b * elements + e] = dotInteractionGradElement<int32_t>(pairGrads, rows, features, width, i, e - i * width);
    }
  }
}

// One thread per (example, i, j); pairs with j >= i have no output.
__global__ void dotInteractionKernel(const float* t, float* z, int64_t batch, int64_t features, int64_t width) {
  const int64_t e = elementIndex();
  if (e >= batch * features * features) return;
  const int64_t j = e % features;
  const int64_t i = (e / features) % features;
  const int64_t b = e / (features * features);
  if (j >= i) return;
  const float* row = t + b * features * width;
  z[b * interactionPairCount(features) + interactionPairIndex(i, j)] = dotInOrder(row + i * width, row + j * width, width);
}

// One thread per (example, i, k): dT[b, i, k].
__global__ void dotInteractionGradKernel(const float* dz, const float* t, float* dt, int64_t batch, int64_t features,
                                         int64_t width) {
  const int64_t e = elementIndex();
  if (e >= batch * features * width) return;
  const int64_t k = e % width;
  const int64_t i = (e / width) % features;
  const int64_t b = e / (features * width);
  const int64_t rowOffset = b * features * width;
  dt[rowOffset + i * width + k] =
      dotInteractionGradElement<int64_t>(dz + b * interactionPairCount(features), t + rowOffset, features, width, i, k);
}

unsigned interactionBlocks(int64_t batch) { return unsigned(std::min<int64_t>(batch, int64_t(1) << 20)); }

cudaStream_t computeStream(int device) { return useDevice(device).compute; }

}  // namespace

void binary(int device, int32_t op, const float* a, const float* b, float* out, int64_t n, const BroadcastIndex& index) {
  if (n == 0) return;
  cudaStream_t stream = computeStream(device);
  withBinaryOp(op, [&](auto tag) {
    launchKernel(binaryKernel<decltype(tag)::value>, elementBlocks(n), kElementThreads, 0, stream, a, b, out, n, index);
  });
  launched("binary");
}

void unary(int device, int32_t op, float constant, const float* x, float* y, int64_t n) {
  if (n == 0) return;
  cudaStream_t stream = computeStream(device);
  withUnaryOp(op, [&](auto tag) {
    launchKernel(unaryKernel<decltype(tag)::value>, elementBlocks(n), kElementThreads, 0, stream, x, y, n, constant);
  });
  launched("unary");
}

void unaryGrad(int device, int32_t op, const float* dy, const float* v, float* dx, int64_t n) {
  if (n == 0) return;
  cudaStream_t stream = computeStream(device);
  withUnaryOp(op, [&](auto tag) {
    launchKernel(unaryGradKernel<decltype(tag)::value>, elementBlocks(n), kElementThreads, 0, stream, dy, v, dx, n);
  });
  launched("unary_grad");
}

void reduceToShape(int device, const RunLayout& runs, const float* in, float* out, float scale) {
  const RunStrides s = stridesOf(runs);
  int64_t outputs = 1, terms = 1;
  for (int32_t k = 0; k < runs.rank; ++k) (runs.reduced[k] ? terms : outputs) *= runs.size[k];
  if (outputs == 0) return;
  cudaStream_t stream = computeStream(device);
  const int64_t blocks = (terms + kSumBlock - 1) / kSumBlock;
  if (blocks == 0) {
    // A reduced dim of size 0: sums of nothing, +0 like the CPU's memset.
    check(cudaMemsetAsync(out, 0, size_t(outputs) * sizeof(float), stream), "reduce_to_shape");
    return;
  }
  // Freed in stream order, after the kernels queued here have read it.
  std::shared_ptr<Buffer> partial = Buffer::allocate(Device::cuda(device), size_t(blocks * outputs) * sizeof(float));
  float* sums = static_cast<float*>(partial->data());
  launchKernel(reduceBlocks, elementBlocks(outputs * blocks), kElementThreads, 0, stream, s, in, sums, outputs, terms, blocks);
  launched("reduce_to_shape");
  launchKernel(reduceCombine, elementBlocks(outputs), kElementThreads, 0, stream, sums, out, outputs, blocks, scale);
  launched("reduce_to_shape");
}

void broadcastTo(int device, const RunLayout& runs, const float* in, float* out, float scale) {
  const RunStrides s = stridesOf(runs);
  // Strides of `in`, which holds the kept runs only.
  RunStrides kept;
  kept.rank = runs.rank;
  int64_t step = 1, n = 1;
  for (int32_t k = runs.rank - 1; k >= 0; --k) {
    n *= runs.size[k];
    if (runs.reduced[k]) continue;
    kept.stride[k] = step;
    step *= runs.size[k];
  }
  if (n == 0) return;
  launchKernel(broadcastKernel, elementBlocks(n), kElementThreads, 0, computeStream(device), s, kept, in, out, n, scale);
  launched("broadcast_to");
}

void scaledCopy(int device, const float* in, float* out, int64_t n, float scale) {
  if (n == 0) return;
  launchKernel(scaledCopyKernel, elementBlocks(n), kElementThreads, 0, computeStream(device), in, out, n, scale);
  launched("scaled copy");
}

void copyRows(int device, const float* in, int64_t inStride, float* out, int64_t outStride, int64_t rows, int64_t width) {
  if (rows == 0 || width == 0) return;
  const size_t f = sizeof(float);
  // One block of memory (a whole copy, or rows with no gaps): a plain copy, since the 2D
  // copy wants pitches >= the width and below the device's pitch limit.
  if (rows == 1 || (inStride == width && outStride == width)) {
    check(cudaMemcpyAsync(out, in, size_t(rows * width) * f, cudaMemcpyDeviceToDevice, computeStream(device)), "copy rows");
    return;
  }
  check(cudaMemcpy2DAsync(out, size_t(outStride) * f, in, size_t(inStride) * f, size_t(width) * f, size_t(rows),
                          cudaMemcpyDeviceToDevice, computeStream(device)),
        "copy rows");
}

void sigmoidCrossEntropy(int device, const float* labels, const float* logits, float* out, int64_t n) {
  if (n == 0) return;
  launchKernel(sigmoidXentKernel, elementBlocks(n), kElementThreads, 0, computeStream(device), labels, logits, out, n);
  launched("sigmoid_xent");
}

void sigmoidCrossEntropyGrad(int device, const float* dy, const float* labels, const float* logits, float* dx, int64_t n) {
  if (n == 0) return;
  launchKernel(sigmoidXentGradKernel, elementBlocks(n), kElementThreads, 0, computeStream(device), dy, labels, logits, dx, n);
  launched("sigmoid_xent_grad");
}

void dotInteraction(int device, const float* t, float* z, int64_t batch, int64_t features, int64_t width) {
  const int64_t n = batch * features * features;
  if (n == 0 || features < 2) return;
  const size_t shared = size_t(features * (width + 1)) * sizeof(float);
  if (shared <= kInteractionSharedBytes) {
    launchKernel(dotInteractionSharedKernel, interactionBlocks(batch), kInteractionThreads, shared, computeStream(device), t, z, batch, int32_t(features), int32_t(width));
  } else {
    launchKernel(dotInteractionKernel, elementBlocks(n), kElementThreads, 0, computeStream(device), t, z, batch, features, width);
  }
  launched("dot_interaction");
}

void dotInteractionGrad(int device, const float* dz, const float* t, float* dt, int64_t batch, int64_t features,
                        int64_t width) {
  const int64_t n = batch * features * width;
  if (n == 0) return;
  const size_t shared = size_t(features * width + interactionPairCount(features)) * sizeof(float);
  if (shared <= kInteractionSharedBytes) {
    launchKernel(dotInteractionGradSharedKernel, interactionBlocks(batch), kInteractionThreads, shared, computeStream(device), dz, t, dt, batch, int32_t(features), int32_t(width));
  } else {
    launchKernel(dotInteractionGradKernel, elementBlocks(n), kElementThreads, 0, computeStream(device), dz, t, dt, batch, features, width);
  }
  launched("dot_interaction_grad");
}

void synchronize(int device, const char* what) {
  cudaStream_t stream = computeStream(device);
  check(cudaGetLastError(), what);
  check(cudaStreamSynchronize(stream), what);
}

}  // namespace cuda
}  // namespace hb
