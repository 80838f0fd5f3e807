// The loops of Dataset.synthetic's generator that run over many ids at once, compiled once
// per instruction set (synthetic_rows.cc includes this file inside namespaces portable,
// avx2 and avx512). Integer mixing and exact conversions only: every build gives the same
// bits. Straight-line bodies over plain arrays, which GCC turns into vector code.

namespace HB_SYNTHETIC_NAMESPACE {

// One pass of the Feistel network over each lane (values below 2^(2 * half), half <= 16).
void feistelLanes(uint32_t* x, int64_t n, int half, uint32_t mask, const uint32_t* keys) {
  const uint32_t k0 = keys[0], k1 = keys[1], k2 = keys[2], k3 = keys[3];
  for (int64_t i = 0; i < n; ++i) {
    uint32_t left = x[i] >> half, right = x[i] & mask;
    uint32_t next = left ^ (mixWords(right, k0) & mask);
    left = right, right = next;
    next = left ^ (mixWords(right, k1) & mask);
    left = right, right = next;
    next = left ^ (mixWords(right, k2) & mask);
    left = right, right = next;
    next = left ^ (mixWords(right, k3) & mask);
    left = right, right = next;
    x[i] = (left << half) | right;
  }
}

// Each id's hidden weight, uniform in [-1, 1): mix(mix(key, id % 2^32), floor(id / 2^32)).
void hiddenWeights(const int64_t* ids, double* weights, int64_t n, uint32_t key) {
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t id = uint64_t(ids[i]);
    const uint32_t h = mixWords(mixWords(key, uint32_t(id)), uint32_t(id >> 32));
    weights[i] = (double(h) / 4294967296.0) * 2 - 1;
  }
}

}  // namespace HB_SYNTHETIC_NAMESPACE
