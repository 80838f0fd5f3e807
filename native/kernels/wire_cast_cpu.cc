#include "native/core/thread_pool.h"
#include "native/kernels/wire_cast.h"

namespace hb {

void packWireCpu(const float* in, uint16_t* out, int64_t n, bool bfloat16) {
  parallelFor(n, 1 << 16, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) out[i] = packWireValue(in[i], bfloat16);
  });
}

void unpackWireCpu(const uint16_t* in, float* out, int64_t n, bool bfloat16) {
  parallelFor(n, 1 << 16, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) out[i] = unpackWireValue(in[i], bfloat16);
  });
}

}  // namespace hb
