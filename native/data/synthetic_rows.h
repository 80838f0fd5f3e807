// Dataset.synthetic's rows: power-law ids, a permutation that scatters the hot ones, and a
// planted logistic model that makes labels learnable. Generated here, in the reader
// thread's call, rather than in JS: in JS the generator took a third of the CPU of
// `npx hb-ts train` (3.2-4.0 us a Criteo-shaped row on a 2-vCPU EPYC VM), competing with
// the training step for the same two cores.
//
// Every row draws from its own generator (RowRandom seeded by the dataset seed and the row
// index), so the rows depend only on the seed, never on threads, blocks or partitions.
// The integer parts (the generator, the permutation, the hidden weights) are the JS
// generator's bit for bit (test/support/synthetic_reference.ts, which the rows are
// checked against); exp, log and pow are the C library's, which may round a last bit
// differently from V8's. Below vocabularies of about 2^40 that changes nothing seen (a
// review compared 110 specs up to 10^12 ids: no row differed; a later one found 1 id in
// 10029 differing at exactly 2^40, alpha 0.3); from there on, ranks near the
// vocabulary's size have a last bit of about 1, and some ids (and through their weights,
// labels) differ from the JS generator's. Either way a seed gives the same rows on any
// machine with the same C library.
#pragma once

#include <cstdint>
#include <vector>

namespace hb {

struct SyntheticTableSpec {
  uint64_t vocabularySize = 1;  // in [1, 2^52]
  int64_t hotnessLow = 1;       // ids per row, drawn uniformly in [low, high]
  int64_t hotnessHigh = 1;
  double alpha = 1.1;           // power-law exponent of id frequencies (0: uniform)
};

struct SyntheticSpec {
  uint32_t seed = 0;
  int64_t numDense = 0;
  std::vector<SyntheticTableSpec> tables;
};

// Where a block's columns go; the caller sizes them: label and each dense column n
// values, each table's splits n + 1, its ids n * hotnessHigh.
struct SyntheticBlock {
  float* label = nullptr;
  std::vector<float*> dense;
  std::vector<int32_t*> splits;
  std::vector<int64_t*> ids;
};

// Ranks in [0, V) (0 the most frequent) by inverse-CDF sampling of a continuous power law
// with density proportional to x^-alpha on [1, V + 1), floored.
class PowerLawRanks {
 public:
  PowerLawRanks(uint64_t vocabularySize, double alpha);
  uint64_t rank(double u) const;
  // values[i] (a draw's 32-bit word) becomes rank(word / 2^32): the same ranks, with the
  // exp and log of many draws at once in vector code (synthetic_rows_impl.h).
  void ranksOfWords(int64_t* values, int64_t n) const;

 private:
  enum class Kind { Uniform, Log, Power };
  uint64_t vocabularySize_;
  Kind kind_;
  double span_;
  double exponent_;
};

// A bijection of [0, n): a 4-round Feistel network over the smallest even number of bits
// that covers n, walking the cycle until the value falls inside [0, n).
class IdPermutation {
 public:
  IdPermutation(uint64_t size, uint32_t key);
  uint64_t apply(uint64_t x) const;
  // values[i] = apply(values[i]), many at once.
  void applyInPlace(int64_t* values, int64_t n) const;

 private:
  uint64_t size_;
  int half_;
  uint32_t mask_;
  uint32_t keys_[4];
};

// The planted model: logit = bias + dense weights . f(x) + scale * (mean hidden weight of
// each table's ids in the row).
class SyntheticRows {
 public:
  explicit SyntheticRows(SyntheticSpec spec);
  // Rows [firstRow, firstRow + n) into `out`.
  void generate(uint64_t firstRow, int64_t n, const SyntheticBlock& out) const;

 private:
  SyntheticSpec spec_;
  std::vector<double> denseWeights_;
  double tableScale_;
  std::vector<uint32_t> tableKeys_;
  std::vector<IdPermutation> permutations_;
  std::vector<PowerLawRanks> powerLaws_;
};

}  // namespace hb
