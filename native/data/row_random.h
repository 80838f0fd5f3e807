// The row-seeded generator of lib/data/synthetic_model.ts (RowRandom over mix), bit for
// bit: the native shuffle draws the same numbers the JS one did, so a seed gives the same
// order whichever side shuffles, and tests check one against the other.
#pragma once

#include <cmath>
#include <cstdint>

namespace hb {

// A 32-bit mix of two words (murmur3's finalizer over a combined word).
inline uint32_t mixWords(uint32_t a, uint32_t b) {
  uint32_t h = (a ^ 0x9e3779b9u) * 0x85ebca6bu + b * 0xc2b2ae35u;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

// mulberry32, seeded per row.
class RowRandom {
 public:
  RowRandom(uint32_t seed, uint64_t row)
      : state_(mixWords(mixWords(seed, uint32_t(row & 0xffffffffu)), uint32_t(row >> 32))) {}

  // Uniform in [0, 1): a multiple of 2^-32.
  double next() {
    state_ += 0x6d2b79f5u;
    uint32_t t = state_;
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return double(t ^ (t >> 14)) / 4294967296.0;
  }

  // Uniform in [0, n): JS's Math.floor(next() * n), in the same double arithmetic.
  int64_t below(int64_t n) { return int64_t(std::floor(next() * double(n))); }

 private:
  uint32_t state_;
};

}  // namespace hb
