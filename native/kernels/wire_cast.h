// float32 rows to and from their wire dtype (float16 or bfloat16) around an exchange
// between workers: packed natively before sending, unpacked after receiving. The
// per-value math is native/kernels/half.h's, shared by the CPU loop here and the CUDA
// kernel (cuda/wire_cast.cu).
#pragma once

#include <cstdint>

#include "native/kernels/half.h"

namespace hb {

HB_HOST_DEVICE uint16_t packWireValue(float x, bool bfloat16) {
  return bfloat16 ? floatToBFloat16(x) : floatToFloat16(x);
}

HB_HOST_DEVICE float unpackWireValue(uint16_t h, bool bfloat16) {
  return bfloat16 ? bfloat16ToFloat(h) : float16ToFloat(h);
}

void packWireCpu(const float* in, uint16_t* out, int64_t n, bool bfloat16);
void unpackWireCpu(const uint16_t* in, float* out, int64_t n, bool bfloat16);

}  // namespace hb
