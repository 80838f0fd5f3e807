// Fingerprint64 over columns of strings (one UTF-8 buffer plus offsets) or of integers
// (hashed as their decimal strings, as TF's hash-bucket columns do), optionally taken
// modulo a bucket count as uint64 (to_hash_bucket_fast).
#pragma once

#include <cstddef>
#include <cstdint>

#include "native/kernels/decimal_digits.h"
#include "native/kernels/farmhash.h"
#include "native/kernels/hb_host_device.h"

namespace hb {

// The per-value math of the CPU loops below and of cuda/string_hash.cu.
// numBuckets == 0: the raw fingerprint.
HB_HOST_DEVICE uint64_t fingerprintRange(const uint8_t* bytes, size_t length, uint64_t numBuckets) {
  const uint64_t fp = farmhash::fingerprint64(bytes, length);
  return numBuckets == 0 ? fp : fp % numBuckets;
}

HB_HOST_DEVICE uint64_t fingerprintDecimalValue(int64_t value, uint64_t numBuckets) {
  char digits[kMaxDecimalChars];
  const int length = decimalDigits(value, digits);
  return fingerprintRange(reinterpret_cast<const uint8_t*>(digits), size_t(length), numBuckets);
}

// numBuckets == 0: the raw fingerprints. Offsets: n + 1 of them, already validated.
void fingerprintByteRanges(const uint8_t* bytes, const int64_t* offsets, int64_t n, uint64_t numBuckets, uint64_t* out);

template <typename Int>
void fingerprintDecimal(const Int* values, int64_t n, uint64_t numBuckets, uint64_t* out);

// One value; for callers that produce the bytes themselves.
uint64_t fingerprintBytes(const uint8_t* bytes, int64_t length, uint64_t numBuckets);

}  // namespace hb
