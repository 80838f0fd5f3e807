// The lookup table behind categorical_column_with_vocabulary_list / _file: key ->
// its position in the vocabulary; misses go to an OOV bucket (vocabulary size +
// Fingerprint64 of the value modulo the OOV bucket count, TF's IdTableWithHashBuckets
// with FastHashSpec) or to the default id. Built once per column, read-only after.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "native/kernels/feature_transform.h"

namespace hb {

class VocabularyTable {
 public:
  // Throws hb::Error naming `what` and both positions for a duplicate key.
  static std::unique_ptr<VocabularyTable> fromStrings(const FeatureValues& keys, int64_t numOovBuckets,
                                                      int64_t defaultValue, const std::string& what);
  static std::unique_ptr<VocabularyTable> fromInts(const FeatureValues& keys, int64_t numOovBuckets,
                                                   int64_t defaultValue, const std::string& what);

  bool hasStringKeys() const { return stringKeys_; }
  int64_t size() const { return size_; }
  // out[i] = id of values[i]; values must be strings for a string table, ints otherwise.
  void lookup(const FeatureValues& values, int64_t* out) const;

 private:
  VocabularyTable(bool stringKeys, int64_t size, int64_t numOovBuckets, int64_t defaultValue);
  // Slot of the key hashing to `hash`, or of the empty slot where it would go.
  template <typename Equal>
  size_t probe(uint64_t hash, Equal equal) const;
  void insert(uint64_t hash, int64_t position);
  int64_t miss(uint64_t oovHash) const;

  bool stringKeys_;
  int64_t size_;
  int64_t numOovBuckets_;
  int64_t defaultValue_;
  std::vector<uint8_t> keyBytes_;
  std::vector<int64_t> keyOffsets_;
  std::vector<int64_t> intKeys_;
  // Hash and position side by side: a probe touches one cache line.
  struct Slot {
    uint64_t hash = 0;
    int64_t position = -1;  // -1: empty
  };
  std::vector<Slot> slots_;
};

}  // namespace hb
