// Decimal text of an integer, for hashing integers as TF does (as their decimal
// strings). One routine for the CPU and CUDA kernels, because std::to_chars has no
// device version and the two backends must hash identical bytes.
#pragma once

#include <cstdint>

#include "native/kernels/hb_host_device.h"

namespace hb {

// "-9223372036854775808" (INT64_MIN) is the longest: 20 characters.
constexpr int kMaxDecimalChars = 20;

// Writes the digits of `value` (a leading '-' when negative, no terminator) to `out`,
// which must hold kMaxDecimalChars characters; returns how many were written.
HB_HOST_DEVICE int decimalDigits(int64_t value, char* out) {
  // The magnitude as uint64: -INT64_MIN overflows int64 but not uint64.
  uint64_t magnitude = value < 0 ? 0 - uint64_t(value) : uint64_t(value);
  int length = value < 0 ? 1 : 0;
  if (value < 0) out[0] = '-';
  int digits = 1;
  for (uint64_t bound = 10; digits < 20 && magnitude >= bound; bound *= 10) ++digits;
  length += digits;
  for (int i = length - 1; i >= length - digits; --i) {
    out[i] = char('0' + magnitude % 10);
    magnitude /= 10;
  }
  return length;
}

}  // namespace hb
