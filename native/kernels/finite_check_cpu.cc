#include <algorithm>
#include <vector>

#include "native/core/thread_pool.h"
#include "native/kernels/finite_check.h"

namespace hb {

int64_t firstNonFiniteCpu(const float* x, int64_t n) {
  constexpr int64_t kBlock = 1 << 14;
  // Each fixed block records its first bad index, so the first overall is found
  // whichever thread sees it.
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<int64_t> firstBad(size_t(blocks), -1);
  parallelFor(blocks, 4, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t end = std::min(n, (b + 1) * kBlock);
      for (int64_t i = b * kBlock; i < end; ++i) {
        if (!finiteFloat(x[i])) {
          firstBad[size_t(b)] = i;
          break;
        }
      }
    }
  });
  for (int64_t i : firstBad) {
    if (i >= 0) return i;
  }
  return -1;
}

}  // namespace hb
