// CPU kernels of the feature-column transforms. They run on the calling thread: a
// column of a batch is small next to a training step, and the thread pool may be busy
// with one.
#include <cstring>
#include <vector>

#include "native/kernels/feature_transform.h"
#include "native/kernels/string_hash.h"

namespace hb {

int64_t markPresentValues(const FeatureValues& values, const uint8_t* valid, bool dropIgnoreValues, uint8_t* keep) {
  int64_t kept = 0;
  for (int64_t i = 0; i < values.count; ++i) {
    bool present = valid == nullptr || valid[i] != 0;
    if (present && dropIgnoreValues) {
      present = values.isStrings() ? values.byteLength(i) != 0 : values.intAt(i) != -1;
    }
    keep[i] = present ? 1 : 0;
    kept += present ? 1 : 0;
  }
  return kept;
}

void keptRowSplits(const int32_t* rowSplits, int64_t rows, const uint8_t* keep, int32_t* out) {
  out[0] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int32_t n = 0;
    for (int32_t i = rowSplits[r]; i < rowSplits[r + 1]; ++i) n += keep[i];
    out[r + 1] = out[r] + n;
  }
}

void keepInts(const FeatureValues& values, const uint8_t* keep, int64_t* out) {
  int64_t at = 0;
  for (int64_t i = 0; i < values.count; ++i) {
    if (keep[i]) out[at++] = values.intAt(i);
  }
}

void keepStrings(const FeatureValues& values, const uint8_t* keep, uint8_t* outBytes, int32_t* outOffsets) {
  int64_t at = 0;
  int32_t byte = 0;
  outOffsets[0] = 0;
  for (int64_t i = 0; i < values.count; ++i) {
    if (!keep[i]) continue;
    const int64_t length = values.byteLength(i);
    if (length) std::memcpy(outBytes + byte, values.bytes + values.offsets[i], size_t(length));
    byte += int32_t(length);
    outOffsets[++at] = byte;
  }
}

void keepFloats(const float* values, int64_t count, const uint8_t* keep, float* out) {
  int64_t at = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (keep[i]) out[at++] = values[i];
  }
}

void identityIds(const FeatureValues& values, bool hasDefault, int64_t numBuckets, int64_t defaultValue, int64_t* out) {
  for (int64_t i = 0; i < values.count; ++i) {
    const int64_t id = values.intAt(i);
    out[i] = hasDefault ? identityWithDefault(id, numBuckets, defaultValue) : id;
  }
}

void bucketizeIds(const float* values, int64_t count, int64_t sourceDim, const float* boundaries,
                  int64_t boundaryCount, int64_t* out) {
  for (int64_t i = 0; i < count; ++i) {
    out[i] = bucketOf(values[i], boundaries, boundaryCount) + (i % sourceDim) * (boundaryCount + 1);
  }
}

int64_t crossRowSplits(const CrossInput* inputs, int64_t inputCount, int64_t rows, int32_t* outSplits) {
  outSplits[0] = 0;
  int64_t total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t product = 1;
    for (int64_t k = 0; k < inputCount && product > 0; ++k) {
      product *= int64_t(inputs[k].rowSplits[r + 1]) - inputs[k].rowSplits[r];
      // The caller refuses totals beyond int32; stop multiplying before int64 overflows.
      if (product > (int64_t(1) << 31)) product = int64_t(1) << 31;
    }
    total += product;
    if (total > (int64_t(1) << 31)) total = int64_t(1) << 31;
    outSplits[r + 1] = int32_t(total > INT32_MAX ? INT32_MAX : total);
  }
  return total;
}

namespace {

// The per-value inputs of HashCrosser: raw int64 ids, or Fingerprint64 of strings.
std::vector<uint64_t> crossFeatureHashes(const FeatureValues& values) {
  std::vector<uint64_t> hashes(size_t(values.count));
  for (int64_t i = 0; i < values.count; ++i) {
    hashes[i] = values.isStrings() ? fingerprintBytes(values.bytes + values.offsets[i], values.byteLength(i), 0)
                                   : uint64_t(values.intAt(i));
  }
  return hashes;
}

}  // namespace

void crossHashedIds(const CrossInput* inputs, int64_t inputCount, int64_t rows, uint64_t numBuckets,
                    uint64_t hashKey, const int32_t* outSplits, int64_t* out) {
  std::vector<std::vector<uint64_t>> hashes;
  hashes.reserve(size_t(inputCount));
  for (int64_t k = 0; k < inputCount; ++k) hashes.push_back(crossFeatureHashes(inputs[k].values));
  std::vector<int64_t> position(static_cast<size_t>(inputCount));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = outSplits[r];
    const int64_t end = outSplits[r + 1];
    if (at == end) continue;
    std::fill(position.begin(), position.end(), 0);
    for (; at < end; ++at) {
      uint64_t hash = hashKey;
      for (int64_t k = 0; k < inputCount; ++k) hash = crossAbsorb(hash, hashes[k][inputs[k].rowSplits[r] + position[k]]);
      out[at] = crossBucket(hash, numBuckets);
      // Odometer: the last input turns fastest, as SparseCrossOp's ProductIterator.
      for (int64_t k = inputCount - 1; k >= 0; --k) {
        if (++position[k] < inputs[k].rowSplits[r + 1] - inputs[k].rowSplits[r]) break;
        position[k] = 0;
      }
    }
  }
}

void indicatorSums(const int64_t* ids, const int32_t* rowSplits, int64_t rows, const float* weights,
                   int64_t numBuckets, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = out + r * numBuckets;
    for (int32_t i = rowSplits[r]; i < rowSplits[r + 1]; ++i) {
      if (ids[i] < 0 || ids[i] >= numBuckets) continue;
      row[ids[i]] = addRn(row[ids[i]], weights ? weights[i] : 1.0f);
    }
  }
}

void concatRows(const float* const* parts, const int64_t* widths, int64_t partCount, int64_t rows, float* out) {
  int64_t width = 0;
  for (int64_t p = 0; p < partCount; ++p) width += widths[p];
  for (int64_t r = 0; r < rows; ++r) {
    float* row = out + r * width;
    for (int64_t p = 0; p < partCount; ++p) {
      if (widths[p]) std::memcpy(row, parts[p] + r * widths[p], size_t(widths[p]) * sizeof(float));
      row += widths[p];
    }
  }
}

}  // namespace hb
