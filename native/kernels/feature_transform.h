// The per-value math of TensorFlow's feature-column transforms (bucketize, sparse
// cross hashing, identity defaults), shared by the CPU kernels and any CUDA port.
#pragma once

#include <cstdint>
#include <limits>

#include "native/kernels/farmhash.h"
#include "native/kernels/hb_host_device.h"

namespace hb {

// sparse_ops._DEFAULT_HASH_KEY: the seed of sparse_cross_hashed's fingerprint chain.
constexpr uint64_t kCrossDefaultHashKey = 0xDECAFCAFFEull;

// TF's Bucketize kernel: std::upper_bound over float32 boundaries, so bucket i holds
// [boundaries[i-1], boundaries[i]) and a value equal to a boundary goes right.
HB_HOST_DEVICE int64_t bucketOf(float value, const float* boundaries, int64_t count) {
  int64_t low = 0;
  int64_t high = count;
  while (low < high) {
    const int64_t mid = low + (high - low) / 2;
    if (value < boundaries[mid]) high = mid;
    else low = mid + 1;
  }
  return low;
}

// One step of SparseCrossOp's HashCrosser: the running hash absorbs the next feature
// (a raw int64 id, or the Fingerprint64 of a string).
HB_HOST_DEVICE uint64_t crossAbsorb(uint64_t running, uint64_t featureHash) {
  return farmhash::fingerprintCat64(running, featureHash);
}

// HashCrosser's output: modulo the bucket count, or modulo int64 max when it is 0.
HB_HOST_DEVICE int64_t crossBucket(uint64_t hash, uint64_t numBuckets) {
  return numBuckets > 0 ? int64_t(hash % numBuckets) : int64_t(hash % uint64_t(std::numeric_limits<int64_t>::max()));
}

// categorical_column_with_identity with a default_value: ids outside [0, numBuckets)
// take the default.
HB_HOST_DEVICE int64_t identityWithDefault(int64_t id, int64_t numBuckets, int64_t defaultValue) {
  return id < 0 || id >= numBuckets ? defaultValue : id;
}

// ---- CPU kernels over whole columns (feature_transform_cpu.cc) ----

// One feature's values, already validated: integers (int32 or int64), or strings as
// one UTF-8 buffer plus count + 1 offsets.
struct FeatureValues {
  const int32_t* ints32 = nullptr;
  const int64_t* ints64 = nullptr;
  const uint8_t* bytes = nullptr;
  const int32_t* offsets = nullptr;
  int64_t count = 0;

  bool isStrings() const { return bytes != nullptr; }
  int64_t intAt(int64_t i) const { return ints64 ? ints64[i] : int64_t(ints32[i]); }
  int64_t byteLength(int64_t i) const { return int64_t(offsets[i + 1]) - offsets[i]; }
};

// keep[i] = 0 for values that are not there: flagged missing in `valid` (when given),
// and, for dense inputs, TF's ignore values ('' for strings, -1 for integers) that
// _to_sparse_input_and_drop_ignore_values drops. Returns how many are kept.
int64_t markPresentValues(const FeatureValues& values, const uint8_t* valid, bool dropIgnoreValues, uint8_t* keep);

// Row splits of the kept values (rows + 1 of them).
void keptRowSplits(const int32_t* rowSplits, int64_t rows, const uint8_t* keep, int32_t* out);

// The kept values, in order. For strings, outOffsets gets kept + 1 offsets.
void keepInts(const FeatureValues& values, const uint8_t* keep, int64_t* out);
void keepStrings(const FeatureValues& values, const uint8_t* keep, uint8_t* outBytes, int32_t* outOffsets);
void keepFloats(const float* values, int64_t count, const uint8_t* keep, float* out);

// Integer ids as int64; with a default, ids outside [0, numBuckets) take it.
void identityIds(const FeatureValues& values, bool hasDefault, int64_t numBuckets, int64_t defaultValue, int64_t* out);

// Bucket ids of a [rows, sourceDim] float32 block: value i goes to
// bucketOf(value) + (i % sourceDim) * (boundaryCount + 1), as bucketized_column's ids.
void bucketizeIds(const float* values, int64_t count, int64_t sourceDim, const float* boundaries,
                  int64_t boundaryCount, int64_t* out);

// sparse_cross_hashed over `inputs`, all with `rows` rows. crossRowSplits fills the
// output's rows + 1 splits (each row: the product of its inputs' value counts) and
// returns the total; crossHashedIds then writes the ids, last input varying fastest.
struct CrossInput {
  FeatureValues values;
  const int32_t* rowSplits = nullptr;
};
int64_t crossRowSplits(const CrossInput* inputs, int64_t inputCount, int64_t rows, int32_t* outSplits);
void crossHashedIds(const CrossInput* inputs, int64_t inputCount, int64_t rows, uint64_t numBuckets,
                    uint64_t hashKey, const int32_t* outSplits, int64_t* out);

// indicator_column: out[row * numBuckets + id] sums 1 (or the id's weight) over the
// row's ids; ids outside [0, numBuckets) add nothing (TF's one_hot / sparse_slice).
// `out` must hold rows * numBuckets zeros.
void indicatorSums(const int64_t* ids, const int32_t* rowSplits, int64_t rows, const float* weights,
                   int64_t numBuckets, float* out);

// Row-wise concatenation of [rows, widths[p]] float32 blocks into [rows, sum of widths].
void concatRows(const float* const* parts, const int64_t* widths, int64_t partCount, int64_t rows, float* out);

}  // namespace hb
