#include "native/data/synthetic_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "native/core/status.h"
#include "native/data/row_random.h"
#include "native/kernels/cpu_isa.h"

namespace hb {

namespace {

#define HB_SYNTHETIC_NAMESPACE portable
#define HB_SYNTHETIC_VECTOR_BYTES 0  // no powerLawRanks: see below
#include "native/data/synthetic_rows_impl.h"
#undef HB_SYNTHETIC_NAMESPACE
#undef HB_SYNTHETIC_VECTOR_BYTES

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2")
#define HB_SYNTHETIC_NAMESPACE avx2
#define HB_SYNTHETIC_VECTOR_BYTES 32
#include "native/data/synthetic_rows_impl.h"
#undef HB_SYNTHETIC_NAMESPACE
#undef HB_SYNTHETIC_VECTOR_BYTES
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512vl,prefer-vector-width=512")
#define HB_SYNTHETIC_NAMESPACE avx512
#define HB_SYNTHETIC_VECTOR_BYTES 64
#include "native/data/synthetic_rows_impl.h"
#undef HB_SYNTHETIC_NAMESPACE
#undef HB_SYNTHETIC_VECTOR_BYTES
#pragma GCC pop_options
#endif

enum class Lanes { Portable, Avx2, Avx512 };

Lanes widestLanes() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      cpuIsaCap() >= CpuIsa::Avx512) {
    return Lanes::Avx512;
  }
  if (cpuTakesAvx2()) return Lanes::Avx2;
#endif
  return Lanes::Portable;
}

void feistelLanes(uint32_t* x, int64_t n, int half, uint32_t mask, const uint32_t* keys) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const Lanes lanes = widestLanes();
  if (lanes == Lanes::Avx512) return avx512::feistelLanes(x, n, half, mask, keys);
  if (lanes == Lanes::Avx2) return avx2::feistelLanes(x, n, half, mask, keys);
#endif
  portable::feistelLanes(x, n, half, mask, keys);
}

void hiddenWeights(const int64_t* ids, double* weights, int64_t n, uint32_t key) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const Lanes lanes = widestLanes();
  if (lanes == Lanes::Avx512) return avx512::hiddenWeights(ids, weights, n, key);
  if (lanes == Lanes::Avx2) return avx2::hiddenWeights(ids, weights, n, key);
#endif
  portable::hiddenWeights(ids, weights, n, key);
}

// False where there are no vector units for it: with 2 lanes (SSE2) it was slower than
// the C library's exp and log one at a time (0.81 -> 0.99 us a row; AVX2 0.59 -> 0.48).
bool powerLawRanks(const int64_t* words, int64_t n, double span, double exponent, double vocabulary, double margin,
                   int64_t* ranks) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const Lanes lanes = widestLanes();
  if (lanes == Lanes::Avx512) return avx512::powerLawRanks(words, n, span, exponent, vocabulary, margin, ranks), true;
  if (lanes == Lanes::Avx2) return avx2::powerLawRanks(words, n, span, exponent, vocabulary, margin, ranks), true;
#endif
  return false;
}

constexpr double kBias = -1;
// Ids a table's pass takes at a time (its lanes and weights stay in L1).
constexpr int64_t kIdChunk = 2048;
// How far apart powerLawRanks lets its x and the C library's be (synthetic_rows_impl.h).
constexpr double kRankMargin = 0x1p-36;

// A dense value is floor(expm1(4u)), u a generator draw: an integer from 0 to 53 (e^4 - 1
// is 53.6). The model sees log1p(x) / 2 - 1 of it. Both depend only on which of 54
// ranges the draw's 32-bit word falls in, so each is looked up instead of computed (the
// two calls were half of the generator's time). The thresholds are the least words whose
// floor(expm1(4u)) reaches 1, 2, ..., 53, found once with the same expm1, so a value is
// the one expm1 gives: consecutive words move expm1(4u) by over 2^22 of its last bits, so
// it cannot fall back below a threshold it has passed. The thresholds are 2^24 words apart
// or more, so a range of 2^20 words (the top 12 bits) holds one at most: a value is its
// range's first value, plus one past the threshold inside it.
class DenseDraw {
 public:
  static constexpr int kMax = 53;
  static constexpr int kRangeBits = 20;

  DenseDraw() {
    uint64_t threshold[kMax];
    for (int k = 1; k <= kMax; ++k) {
      uint64_t low = 0, high = uint64_t(1) << 32;  // the least word reaching k lies in (low, high]
      while (high - low > 1) {
        const uint64_t mid = low + (high - low) / 2;
        (valueOf(mid) >= k ? high : low) = mid;
      }
      threshold[k - 1] = high;
    }
    int passed = 0;
    for (uint64_t range = 0; range < kRanges; ++range) {
      const uint64_t begin = range << kRangeBits, end = begin + (uint64_t(1) << kRangeBits);
      while (passed < kMax && threshold[passed] <= begin) ++passed;
      first_[range] = uint8_t(passed);
      step_[range] = uint32_t(end - begin);  // none inside: never reached
      if (passed < kMax && threshold[passed] < end) {
        step_[range] = uint32_t(threshold[passed] - begin);
        HB_CHECK_CODE(passed + 1 == kMax || threshold[passed + 1] >= end, Internal,
                      "synthetic rows: two dense thresholds in one range");
      }
    }
    for (int x = 0; x <= kMax; ++x) input_[x] = std::log1p(std::max(0.0, double(x))) / 2 - 1;
    // The lookup against expm1 itself on each side of every threshold and on words spread
    // over the whole range (once a process, about a millisecond): a C library whose
    // expm1 broke the argument above would fail here, not give other rows.
    const auto agrees = [&](uint64_t word) { return word > 0xffffffffu || value(uint32_t(word)) == int(valueOf(word)); };
    for (int k = 0; k < kMax; ++k) {
      HB_CHECK_CODE(agrees(threshold[k] - 1) && agrees(threshold[k]), Internal, "synthetic rows: dense threshold ", k + 1,
                    " is off");
    }
    for (uint64_t word = 0; word <= 0xffffffffu; word += 0x40001) {
      HB_CHECK_CODE(agrees(word), Internal, "synthetic rows: the dense lookup disagrees with expm1 at ", word);
    }
  }

  // floor(expm1(4 * word / 2^32)).
  int value(uint32_t word) const {
    const uint32_t range = word >> kRangeBits;
    return first_[range] + int((word & ((uint32_t(1) << kRangeBits) - 1)) >= step_[range]);
  }
  // What the model sees of value x.
  double input(int x) const { return input_[x]; }

 private:
  static constexpr uint64_t kRanges = uint64_t(1) << (32 - kRangeBits);
  static double valueOf(uint64_t word) { return std::floor(std::expm1(4 * (double(word) / 4294967296.0))); }

  uint8_t first_[kRanges];
  uint32_t step_[kRanges];
  double input_[kMax + 1];
};

const DenseDraw& denseDraw() {
  static const DenseDraw draw;
  return draw;
}

double sigmoid(double z) { return 1 / (1 + std::exp(-z)); }

}  // namespace

PowerLawRanks::PowerLawRanks(uint64_t vocabularySize, double alpha) : vocabularySize_(vocabularySize) {
  const double top = double(vocabularySize) + 1;
  kind_ = alpha == 0 ? Kind::Uniform : std::fabs(alpha - 1) < 1e-9 ? Kind::Log : Kind::Power;
  span_ = kind_ == Kind::Power ? std::pow(top, 1 - alpha) - 1 : kind_ == Kind::Log ? std::log(top) : double(vocabularySize);
  exponent_ = kind_ == Kind::Power ? 1 / (1 - alpha) : 0;
}

uint64_t PowerLawRanks::rank(double u) const {
  // exp(log) rather than pow, as the JS generator did (its pow with a fractional exponent
  // took twice as long): the same function, so the same ranks.
  const double x = kind_ == Kind::Power ? std::exp(exponent_ * std::log(1 + u * span_))
                   : kind_ == Kind::Log ? std::exp(u * span_)
                                        : 1 + u * span_;
  const double rank = std::floor(x) - 1;
  if (!(rank > 0)) return 0;  // NaN too
  return rank >= double(vocabularySize_) ? vocabularySize_ - 1 : uint64_t(rank);
}

void PowerLawRanks::ranksOfWords(int64_t* values, int64_t n) const {
  const auto exact = [&](int64_t word) { return int64_t(rank(double(uint32_t(uint64_t(word))) / 4294967296.0)); };
  // The uniform law needs no exp or log; past 2^52 the lanes' doubles would not hold V + 1.
  // Either way, and without vector units, each is computed as rank() does.
  int64_t ranks[kIdChunk];
  for (int64_t c0 = 0; c0 < n; c0 += kIdChunk) {
    const int64_t m = std::min(kIdChunk, n - c0);
    const bool lanes = kind_ != Kind::Uniform && vocabularySize_ <= (uint64_t(1) << 52) &&
                       powerLawRanks(values + c0, m, span_, kind_ == Kind::Power ? exponent_ : 0,
                                     double(vocabularySize_), kRankMargin, ranks);
    for (int64_t i = 0; i < m; ++i) values[c0 + i] = lanes && ranks[i] >= 0 ? ranks[i] : exact(values[c0 + i]);
  }
}

IdPermutation::IdPermutation(uint64_t size, uint32_t key) : size_(size) {
  int bits = 2;
  while ((uint64_t(1) << bits) < size) bits += 2;
  half_ = bits / 2;
  mask_ = uint32_t((uint64_t(1) << half_) - 1);
  for (uint32_t i = 0; i < 4; ++i) keys_[i] = mixWords(key, i + 1);
}

uint64_t IdPermutation::apply(uint64_t x) const {
  if (size_ <= 1) return 0;
  do {
    uint32_t left = uint32_t(x >> half_), right = uint32_t(x) & mask_;
    for (int r = 0; r < 4; ++r) {
      const uint32_t next = left ^ (mixWords(right, keys_[r]) & mask_);
      left = right;
      right = next;
    }
    x = (uint64_t(left) << half_) | right;
  } while (x >= size_);
  return x;
}

void IdPermutation::applyInPlace(int64_t* values, int64_t n) const {
  if (half_ > 16) {
    for (int64_t i = 0; i < n; ++i) values[i] = int64_t(apply(uint64_t(values[i])));
    return;
  }
  if (size_ <= 1) {
    std::fill(values, values + n, 0);
    return;
  }
  // Values fit 32-bit lanes. Every lane takes a pass; the lanes that fell outside [0,
  // size) are gathered and take another, until none is left (the cycle walk, a lane at a
  // time, cost most of the generator's time when each id walked on its own).
  uint32_t lanes[kIdChunk], walking[kIdChunk];
  int32_t at[kIdChunk];
  for (int64_t c0 = 0; c0 < n; c0 += kIdChunk) {
    const int64_t m = std::min(kIdChunk, n - c0);
    for (int64_t i = 0; i < m; ++i) lanes[i] = uint32_t(values[c0 + i]);
    feistelLanes(lanes, m, half_, mask_, keys_);
    int64_t left = 0;
    for (int64_t i = 0; i < m; ++i) {
      walking[left] = lanes[i];
      at[left] = int32_t(i);
      left += lanes[i] >= size_;
    }
    while (left > 0) {
      feistelLanes(walking, left, half_, mask_, keys_);
      int64_t still = 0;
      for (int64_t j = 0; j < left; ++j) {
        lanes[at[j]] = walking[j];
        walking[still] = walking[j];
        at[still] = at[j];
        still += walking[j] >= size_;
      }
      left = still;
    }
    for (int64_t i = 0; i < m; ++i) values[c0 + i] = int64_t(lanes[i]);
  }
}

SyntheticRows::SyntheticRows(SyntheticSpec spec) : spec_(std::move(spec)) {
  const uint32_t seed = spec_.seed;
  const double scale = spec_.numDense > 0 ? 1.5 / std::sqrt(double(spec_.numDense)) : 0;
  for (int64_t j = 0; j < spec_.numDense; ++j) {
    denseWeights_.push_back((mixWords(mixWords(seed, 0x5eed), uint32_t(j)) / 4294967296.0) * 2 * scale - scale);
  }
  const size_t tables = spec_.tables.size();
  tableScale_ = tables > 0 ? 3 / std::sqrt(double(tables)) : 0;
  for (size_t t = 0; t < tables; ++t) {
    const SyntheticTableSpec& table = spec_.tables[t];
    tableKeys_.push_back(mixWords(mixWords(seed, 0x7ab1e), uint32_t(t)));
    permutations_.emplace_back(table.vocabularySize, mixWords(tableKeys_[t], 0x9e37));
    powerLaws_.emplace_back(table.vocabularySize, table.alpha);
  }
}

// In three passes that give the bits a row-at-a-time loop gives (the draws of a row in its
// order, the logit's terms added in the same order): the draws, row by row; the ids and
// their weights, table by table, over many ids at once; the labels.
void SyntheticRows::generate(uint64_t firstRow, int64_t n, const SyntheticBlock& out) const {
  const size_t tables = spec_.tables.size();
  const DenseDraw& dense = denseDraw();
  std::vector<double> logit(static_cast<size_t>(n));
  std::vector<uint32_t> labelDraw(static_cast<size_t>(n));  // each row's generator, where its label draw is next
  // Dense values, each table's id count, and its ids' ranks (in the ids' place for now).
  for (size_t t = 0; t < tables; ++t) out.splits[t][0] = 0;
  for (int64_t i = 0; i < n; ++i) {
    RowRandom random(spec_.seed, firstRow + uint64_t(i));
    double z = kBias;
    for (int64_t j = 0; j < spec_.numDense; ++j) {
      const int x = dense.value(random.nextWord());
      out.dense[size_t(j)][i] = float(x);
      z += denseWeights_[size_t(j)] * dense.input(x);
    }
    for (size_t t = 0; t < tables; ++t) {
      const SyntheticTableSpec& table = spec_.tables[t];
      const int64_t low = table.hotnessLow, high = table.hotnessHigh;
      const int64_t hotness =
          low == high ? low : low + std::min(high - low, int64_t(std::floor(random.next() * double(high - low + 1))));
      const int32_t at = out.splits[t][i];
      // The draws' words for now: ranksOfWords turns them into ranks, many at once.
      for (int64_t k = 0; k < hotness; ++k) out.ids[t][at + k] = int64_t(random.nextWord());
      out.splits[t][i + 1] = at + int32_t(hotness);
    }
    logit[size_t(i)] = z;
    labelDraw[size_t(i)] = random.state();
  }
  // Ranks become ids; each row's ids' mean weight joins its logit, table after table.
  std::vector<double> rowSum(static_cast<size_t>(n));
  double weights[kIdChunk];
  for (size_t t = 0; t < tables; ++t) {
    const int32_t* splits = out.splits[t];
    const int64_t count = splits[n];
    powerLaws_[t].ranksOfWords(out.ids[t], count);
    permutations_[t].applyInPlace(out.ids[t], count);
    std::fill(rowSum.begin(), rowSum.end(), 0.0);
    int64_t row = 0;
    for (int64_t c0 = 0; c0 < count; c0 += kIdChunk) {
      const int64_t m = std::min(kIdChunk, count - c0);
      hiddenWeights(out.ids[t] + c0, weights, m, tableKeys_[t]);
      for (int64_t k = c0; k < c0 + m; ++k) {
        while (splits[row + 1] <= k) ++row;
        rowSum[size_t(row)] += weights[k - c0];
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      const int32_t hotness = splits[i + 1] - splits[i];
      logit[size_t(i)] += tableScale_ * (hotness > 0 ? rowSum[size_t(i)] / double(hotness) : 0);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    out.label[i] = RowRandom::resume(labelDraw[size_t(i)]).next() < sigmoid(logit[size_t(i)]) ? 1.0f : 0.0f;
  }
}

}  // namespace hb
