#include <cstddef>
#include <vector>

#include "native/kernels/random_fill.h"  // mixBits64
#include "native/kernels/unique_partition.h"

namespace hb {

template <typename Id>
int64_t uniqueCpu(const Id* ids, int64_t n, Id* uniqueIds, int32_t* inverse) {
  // Open addressing, at most half full; slots hold an index into uniqueIds, -1 if empty.
  uint64_t capacity = 16;
  while (capacity < uint64_t(n) * 2) capacity <<= 1;
  std::vector<int32_t> slots(capacity, -1);
  const uint64_t mask = capacity - 1;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    const Id id = ids[i];
    uint64_t slot = mixBits64(uint64_t(int64_t(id))) & mask;
    for (;;) {
      const int32_t found = slots[slot];
      if (found < 0) {
        slots[slot] = int32_t(count);
        uniqueIds[count] = id;
        inverse[i] = int32_t(count);
        ++count;
        break;
      }
      if (uniqueIds[found] == id) {
        inverse[i] = found;
        break;
      }
      slot = (slot + 1) & mask;
    }
  }
  return count;
}

template <typename Id>
void partitionByOwnerCpu(const Id* ids, int64_t n, int32_t worldSize, Id* outIds, int32_t* sizes, int32_t* restore) {
  std::vector<int64_t> next(size_t(worldSize) + 1, 0);
  for (int32_t w = 0; w < worldSize; ++w) sizes[w] = 0;
  for (int64_t i = 0; i < n; ++i) ++sizes[ownerOf(ids[i], worldSize)];
  for (int32_t w = 0; w < worldSize; ++w) next[w + 1] = next[w] + sizes[w];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t position = next[ownerOf(ids[i], worldSize)]++;
    outIds[position] = ids[i];
    restore[i] = int32_t(position);
  }
}

template int64_t uniqueCpu<int32_t>(const int32_t*, int64_t, int32_t*, int32_t*);
template int64_t uniqueCpu<int64_t>(const int64_t*, int64_t, int64_t*, int32_t*);
template void partitionByOwnerCpu<int32_t>(const int32_t*, int64_t, int32_t, int32_t*, int32_t*, int32_t*);
template void partitionByOwnerCpu<int64_t>(const int64_t*, int64_t, int32_t, int64_t*, int32_t*, int32_t*);

}  // namespace hb
