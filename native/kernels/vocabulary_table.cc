#include "native/kernels/vocabulary_table.h"

#include <algorithm>
#include <cstring>

#include "native/core/status.h"
#include "native/kernels/string_hash.h"

namespace hb {

namespace {

// Spreads int keys over the slots (splitmix64's finalizer); strings use their
// Fingerprint64, which the OOV bucket needs anyway.
uint64_t mixInt(int64_t key) {
  uint64_t z = uint64_t(key) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t decimalFingerprint(int64_t value) {
  uint64_t hash = 0;
  fingerprintDecimal(&value, 1, 0, &hash);
  return hash;
}

}  // namespace

VocabularyTable::VocabularyTable(bool stringKeys, int64_t size, int64_t numOovBuckets, int64_t defaultValue)
    : stringKeys_(stringKeys), size_(size), numOovBuckets_(numOovBuckets), defaultValue_(defaultValue) {
  size_t capacity = 16;
  while (capacity < size_t(size) * 2) capacity *= 2;
  slots_.assign(capacity, Slot{});
}

template <typename Equal>
size_t VocabularyTable::probe(uint64_t hash, Equal equal) const {
  const size_t mask = slots_.size() - 1;
  size_t slot = size_t(hash) & mask;
  while (slots_[slot].position >= 0 && !(slots_[slot].hash == hash && equal(slots_[slot].position))) slot = (slot + 1) & mask;
  return slot;
}

void VocabularyTable::insert(uint64_t hash, int64_t position) {
  const size_t mask = slots_.size() - 1;
  size_t slot = size_t(hash) & mask;
  while (slots_[slot].position >= 0) slot = (slot + 1) & mask;
  slots_[slot] = Slot{hash, position};
}

std::unique_ptr<VocabularyTable> VocabularyTable::fromStrings(const FeatureValues& keys, int64_t numOovBuckets,
                                                              int64_t defaultValue, const std::string& what) {
  std::unique_ptr<VocabularyTable> table(new VocabularyTable(true, keys.count, numOovBuckets, defaultValue));
  const int64_t totalBytes = keys.offsets[keys.count];
  table->keyBytes_.assign(keys.bytes, keys.bytes + totalBytes);
  table->keyOffsets_.assign(keys.offsets, keys.offsets + keys.count + 1);
  const uint8_t* bytes = table->keyBytes_.data();
  const int64_t* offsets = table->keyOffsets_.data();
  for (int64_t i = 0; i < keys.count; ++i) {
    const int64_t length = offsets[i + 1] - offsets[i];
    const uint64_t hash = fingerprintBytes(bytes + offsets[i], length, 0);
    const size_t slot = table->probe(hash, [&](int64_t p) {
      return offsets[p + 1] - offsets[p] == length && std::memcmp(bytes + offsets[p], bytes + offsets[i], size_t(length)) == 0;
    });
    HB_CHECK(table->slots_[slot].position < 0, what, ": duplicate key '",
             std::string(reinterpret_cast<const char*>(bytes + offsets[i]), size_t(length)), "' at positions ",
             table->slots_[slot].position, " and ", i, " of the vocabulary");
    table->insert(hash, i);
  }
  return table;
}

std::unique_ptr<VocabularyTable> VocabularyTable::fromInts(const FeatureValues& keys, int64_t numOovBuckets,
                                                           int64_t defaultValue, const std::string& what) {
  std::unique_ptr<VocabularyTable> table(new VocabularyTable(false, keys.count, numOovBuckets, defaultValue));
  table->intKeys_.resize(size_t(keys.count));
  for (int64_t i = 0; i < keys.count; ++i) table->intKeys_[i] = keys.intAt(i);
  const int64_t* ints = table->intKeys_.data();
  for (int64_t i = 0; i < keys.count; ++i) {
    const uint64_t hash = mixInt(ints[i]);
    const size_t slot = table->probe(hash, [&](int64_t p) { return ints[p] == ints[i]; });
    HB_CHECK(table->slots_[slot].position < 0, what, ": duplicate key ", ints[i], " at positions ",
             table->slots_[slot].position, " and ", i, " of the vocabulary");
    table->insert(hash, i);
  }
  return table;
}

int64_t VocabularyTable::miss(uint64_t oovHash) const {
  return numOovBuckets_ > 0 ? size_ + int64_t(oovHash % uint64_t(numOovBuckets_)) : defaultValue_;
}

void VocabularyTable::lookup(const FeatureValues& values, int64_t* out) const {
  // Values come in blocks: hash a block and prefetch its slots, then probe. The table
  // outgrows the caches for large vocabularies, and a probe is otherwise one stall.
  constexpr int64_t kBlock = 32;
  uint64_t hashes[kBlock];
  const size_t mask = slots_.size() - 1;
  const uint8_t* bytes = keyBytes_.data();
  const int64_t* offsets = keyOffsets_.data();
  const int64_t* ints = intKeys_.data();
  for (int64_t start = 0; start < values.count; start += kBlock) {
    const int64_t end = std::min(values.count, start + kBlock);
    for (int64_t i = start; i < end; ++i) {
      hashes[i - start] = stringKeys_ ? fingerprintBytes(values.bytes + values.offsets[i], values.byteLength(i), 0)
                                      : mixInt(values.intAt(i));
      __builtin_prefetch(&slots_[size_t(hashes[i - start]) & mask]);
    }
    for (int64_t i = start; i < end; ++i) {
      const uint64_t hash = hashes[i - start];
      if (stringKeys_) {
        const uint8_t* value = values.bytes + values.offsets[i];
        const int64_t length = values.byteLength(i);
        const int64_t position = slots_[probe(hash, [&](int64_t p) {
          return offsets[p + 1] - offsets[p] == length && std::memcmp(bytes + offsets[p], value, size_t(length)) == 0;
        })].position;
        out[i] = position >= 0 ? position : miss(hash);
      } else {
        const int64_t value = values.intAt(i);
        const int64_t position = slots_[probe(hash, [&](int64_t p) { return ints[p] == value; })].position;
        // Integer values miss into the bucket of their decimal string (TF's as_string).
        out[i] = position >= 0 ? position : miss(numOovBuckets_ > 0 ? decimalFingerprint(value) : 0);
      }
    }
  }
}

}  // namespace hb
