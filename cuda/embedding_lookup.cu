// Embedding forward on the GPU: one warp per bag; each lane owns some columns and
// walks the bag's ids in order, so every output element is summed in the same order
// as the CPU kernel and, with the shared round-to-nearest helpers, to the same bits.
#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/kernel_launch.h"
#include "native/kernels/embedding_combine.h"

namespace hb {
namespace cuda {

namespace {

constexpr int kWarp = 32;
constexpr int kBagsPerBlock = 8;

// Weight sums of a bag (every lane computes them; ids and weights sit in L1).
template <typename Id, bool kWeighted>
__device__ void bagWeights(const EmbeddingLookupArgs& a, const Id* ids, int64_t begin, int64_t end,
                           float* weightSum, float* squaredWeightSum, bool* any) {
  float sum = 0.0f, squares = 0.0f;
  bool kept = false;
  for (int64_t j = begin; j < end; ++j) {
    const float w = kWeighted ? a.weights[j] : 1.0f;
    if (!keepLookupEntry(ids[j], w, kWeighted, a.combiner)) continue;
    kept = true;
    sum = addRn(sum, w);
    squares = addRn(squares, mulRn(w, w));
  }
  *weightSum = sum;
  *squaredWeightSum = squares;
  *any = kept;
}

// Rows whose loads a lane issues before adding them.
constexpr int kRowPrefetch = 8;

// kWidth consecutive floats of a row, in one 16- or 8-byte load where kWidth allows.
template <int kWidth>
__device__ void loadColumns(const float* at, float* x) {
  if (kWidth == 4) {
    const float4 v = *reinterpret_cast<const float4*>(at);
    x[0] = v.x; x[1] = v.y; x[2] = v.z; x[3] = v.w;
  } else if (kWidth == 2) {
    const float2 v = *reinterpret_cast<const float2*>(at);
    x[0] = v.x; x[1] = v.y;
  } else {
#pragma unroll
    for (int c = 0; c < kWidth; ++c) x[c] = at[c];
  }
}

// Columns are handled `kWidth` at a time: 4 (16-byte loads) when dim % 4 == 0 and the row
// has work for every lane at that width, else 2 (dim even: a dim-64 row fills the warp), else 1.
template <typename Id, bool kWeighted, bool kClipped, int kWidth>
__global__ void lookupKernel(EmbeddingLookupArgs a) {
  const int64_t bag = int64_t(blockIdx.x) * kBagsPerBlock + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (bag >= a.batch) return;
  const Id* ids = static_cast<const Id*>(a.ids);
  const int64_t begin = a.rowSplits[bag];
  const int64_t end = a.rowSplits[bag + 1];
  float weightSum, squaredWeightSum;
  bool any;
  bagWeights<Id, kWeighted>(a, ids, begin, end, &weightSum, &squaredWeightSum, &any);
  const float divisor = (any && a.combiner != Combiner::Sum)
                            ? combinerDivisor(a.combiner, weightSum, squaredWeightSum)
                            : 1.0f;
  float* out = a.out + bag * a.dim;
  // Clipped, each id's divisor (its whole row's norm) is taken once: the bag's ids go in
  // windows of a warp's width, each lane taking one id's norm into shared memory, and the
  // columns' sums so far wait in `out` between windows. Taken per column group instead, a
  // row of dim floats would have its norm taken dim / (32 * kWidth) times.
  float* divisors = kClipped ? dynamicSharedMemory<float>() + (threadIdx.x / kWarp) * kWarp : nullptr;
  for (int64_t window = begin;;) {
    const int64_t windowEnd = kClipped ? (end - window < kWarp ? end : window + kWarp) : end;
    if (kClipped) {
      const int64_t j = window + lane;
      float d = 1.0f;
      if (j < windowEnd) {
        const Id id = ids[j];
        const float w = kWeighted ? a.weights[j] : 1.0f;
        if (keepLookupEntry(id, w, kWeighted, a.combiner)) d = clipByNormDivisor(a.table + int64_t(id) * a.dim, a.dim, a.maxNorm);
      }
      __syncwarp();  // the last window's divisors are read
      divisors[lane] = d;
      __syncwarp();
    }
    for (int64_t column = int64_t(lane) * kWidth; column < a.dim; column += int64_t(kWarp) * kWidth) {
      float acc[kWidth];
#pragma unroll
      for (int c = 0; c < kWidth; ++c) acc[c] = window == begin ? 0.0f : out[column + c];
      // The rows of kRowPrefetch ids are loaded before any is added (in id order, as the
      // CPU): a bag's rows are independent loads, not a chain.
      for (int64_t first = window; first < windowEnd; first += kRowPrefetch) {
        float x[kRowPrefetch][kWidth];
        bool kept[kRowPrefetch];
        float w[kRowPrefetch];
        const float* rows[kRowPrefetch];
#pragma unroll
        for (int q = 0; q < kRowPrefetch; ++q) {
          const int64_t j = first + q;
          kept[q] = false;
          w[q] = 0.0f;
          rows[q] = a.table;
#pragma unroll
          for (int c = 0; c < kWidth; ++c) x[q][c] = 0.0f;
          if (j >= windowEnd) continue;
          const Id id = ids[j];
          w[q] = kWeighted ? a.weights[j] : 1.0f;
          kept[q] = keepLookupEntry(id, w[q], kWeighted, a.combiner);
          if (!kept[q]) continue;
          rows[q] = a.table + int64_t(id) * a.dim;
          loadColumns<kWidth>(rows[q] + column, x[q]);
        }
#pragma unroll
        for (int q = 0; q < kRowPrefetch; ++q) {
          if (!kept[q]) continue;
          const float clipDivisor = kClipped ? divisors[first + q - window] : 1.0f;
#pragma unroll
          for (int c = 0; c < kWidth; ++c) {
            float value = kClipped ? clipByNorm(x[q][c], a.maxNorm, clipDivisor) : x[q][c];
            if (kWeighted || kClipped) value = mulRn(value, w[q]);
            acc[c] = addRn(acc[c], value);
          }
        }
      }
      const bool last = windowEnd == end;
#pragma unroll
      for (int c = 0; c < kWidth; ++c) {
        out[column + c] = (last && any && a.combiner != Combiner::Sum) ? divRn(acc[c], divisor) : acc[c];
      }
    }
    if (windowEnd == end) break;
    window = windowEnd;
  }
}

template <typename Id, bool kWeighted, bool kClipped>
void launch(const EmbeddingLookupArgs& a, cudaStream_t stream) {
  const unsigned blocks = unsigned((a.batch + kBagsPerBlock - 1) / kBagsPerBlock);
  const size_t shared = kClipped ? size_t(kBagsPerBlock) * kWarp * sizeof(float) : 0;  // the ids' divisors
  if (a.dim % 4 == 0 && a.dim >= 4 * kWarp) {
    launchKernel(lookupKernel<Id, kWeighted, kClipped, 4>, blocks, kBagsPerBlock * kWarp, shared, stream, a);
  } else if (a.dim % 2 == 0) {
    launchKernel(lookupKernel<Id, kWeighted, kClipped, 2>, blocks, kBagsPerBlock * kWarp, shared, stream, a);
  } else {
    launchKernel(lookupKernel<Id, kWeighted, kClipped, 1>, blocks, kBagsPerBlock * kWarp, shared, stream, a);
  }
}

template <typename Id>
void launchVariant(const EmbeddingLookupArgs& a, cudaStream_t stream) {
  const bool weighted = a.weights != nullptr;
  const bool clipped = a.maxNorm > 0.0f;
  if (clipped) {
    if (weighted) launch<Id, true, true>(a, stream);
    else launch<Id, false, true>(a, stream);
  } else {
    if (weighted) launch<Id, true, false>(a, stream);
    else launch<Id, false, false>(a, stream);
  }
}

}  // namespace

void embeddingLookup(int device, const EmbeddingLookupArgs& args) {
  if (args.batch == 0) return;
  DeviceContext& context = useDevice(device);
  if (args.idsAreInt64) launchVariant<int64_t>(args, context.compute);
  else launchVariant<int32_t>(args, context.compute);
  // No wait: what reads the result is queued after it (a failure shows at the next
  // synchronisation: the step's end, or a read of the result).
  check(cudaGetLastError(), "embedding lookup kernel launch");
}

}  // namespace cuda
}  // namespace hb
