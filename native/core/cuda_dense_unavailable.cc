// The dense CUDA kernels for builds without CUDA. Kernels only call them for tensors on
// a CUDA device, which such a build never makes; the throws are a second line of defence.
#include "cuda/dense_kernels.h"
#include "native/core/status.h"

namespace hb {
namespace cuda {

namespace {
[[noreturn]] void notCompiled() { fail("CUDA support is not compiled into this build of hb-ts"); }
}  // namespace

void binary(int, int32_t, const float*, const float*, float*, int64_t, const BroadcastIndex&) { notCompiled(); }
void unary(int, int32_t, float, const float*, float*, int64_t) { notCompiled(); }
void unaryGrad(int, int32_t, const float*, const float*, float*, int64_t) { notCompiled(); }
void reduceToShape(int, const RunLayout&, const float*, float*, float) { notCompiled(); }
void broadcastTo(int, const RunLayout&, const float*, float*, float) { notCompiled(); }
void scaledCopy(int, const float*, float*, int64_t, float) { notCompiled(); }
void copyRows(int, const float*, int64_t, float*, int64_t, int64_t, int64_t) { notCompiled(); }
void sigmoidCrossEntropy(int, const float*, const float*, float*, int64_t) { notCompiled(); }
void sigmoidCrossEntropyGrad(int, const float*, const float*, const float*, float*, int64_t) { notCompiled(); }
void dotInteraction(int, const float*, float*, int64_t, int64_t, int64_t) { notCompiled(); }
void dotInteractionGrad(int, const float*, const float*, float*, int64_t, int64_t, int64_t) { notCompiled(); }
void sgemm(int, bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
           float*, int64_t) {
  notCompiled();
}
void synchronize(int, const char*) { notCompiled(); }

}  // namespace cuda
}  // namespace hb
