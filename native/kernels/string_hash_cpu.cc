#include "native/kernels/string_hash.h"

namespace hb {

uint64_t fingerprintBytes(const uint8_t* bytes, int64_t length, uint64_t numBuckets) {
  return fingerprintRange(bytes, size_t(length), numBuckets);
}

void fingerprintByteRanges(const uint8_t* bytes, const int64_t* offsets, int64_t n, uint64_t numBuckets, uint64_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = fingerprintRange(bytes + offsets[i], size_t(offsets[i + 1] - offsets[i]), numBuckets);
}

template <typename Int>
void fingerprintDecimal(const Int* values, int64_t n, uint64_t numBuckets, uint64_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = fingerprintDecimalValue(int64_t(values[i]), numBuckets);
}

template void fingerprintDecimal<int32_t>(const int32_t*, int64_t, uint64_t, uint64_t*);
template void fingerprintDecimal<int64_t>(const int64_t*, int64_t, uint64_t, uint64_t*);

}  // namespace hb
