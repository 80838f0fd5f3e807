// The row-seeded generator Dataset.synthetic and the shuffle draw from (mulberry32 over
// mix), bit for bit as the JS one they replaced (test/support/synthetic_reference.ts): a
// seed gives the same rows and the same order as before, and tests check one against the
// other.
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

  // A generator that goes on from where one whose state() this was stopped.
  static RowRandom resume(uint32_t state) { return RowRandom(state); }
  uint32_t state() const { return state_; }

  // Uniform in [0, 2^32).
  uint32_t nextWord() {
    state_ += 0x6d2b79f5u;
    uint32_t t = state_;
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return t ^ (t >> 14);
  }

  // Uniform in [0, 1): nextWord() / 2^32.
  double next() { return double(nextWord()) / 4294967296.0; }

  // Uniform in [0, n): JS's Math.floor(next() * n), in the same double arithmetic.
  int64_t below(int64_t n) { return int64_t(std::floor(next() * double(n))); }

 private:
  explicit RowRandom(uint32_t state) : state_(state) {}
  uint32_t state_;
};

}  // namespace hb
