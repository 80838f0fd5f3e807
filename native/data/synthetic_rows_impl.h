// The loops of Dataset.synthetic's generator that run over many ids at once, compiled once
// per instruction set (synthetic_rows.cc includes this file inside namespaces portable,
// avx2 and avx512). Integer mixing and exact conversions, and ranks only where they are
// certain to be the C library's (powerLawRanks): every build gives the same bits.
// Straight-line bodies over plain arrays, which GCC turns into vector code, or vectors.

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

#if HB_SYNTHETIC_VECTOR_BYTES > 0
// A vector register's doubles, 64-bit integers (a comparison's lanes: -1 true, 0 false)
// and words: wider vectors than the build has registers for became one lane at a time
// where a comparison chose between them.
constexpr int64_t kRankLanes = HB_SYNTHETIC_VECTOR_BYTES / 8;
typedef double DoubleLanes __attribute__((vector_size(HB_SYNTHETIC_VECTOR_BYTES)));
typedef int64_t IntLanes __attribute__((vector_size(HB_SYNTHETIC_VECTOR_BYTES)));
typedef uint64_t WordLanes __attribute__((vector_size(HB_SYNTHETIC_VECTOR_BYTES)));

// Whole numbers in [0, 2^52) as doubles and back, by their bits: 2^52 + v holds v in its
// low bits. (Vector conversions between 64-bit integers and doubles, and 64-bit
// arithmetic shifts, are AVX-512 instructions: elsewhere GCC would make them one lane at a
// time, slower than the C library's exp and log.)
constexpr uint64_t kTwo52Bits = 0x4330000000000000ull;
#define HB_DOUBLES_OF(v) ((DoubleLanes)((v) | kTwo52Bits) - 0x1p52)
#define HB_WORDS_OF(v) ((WordLanes)((v) + 0x1p52) - kTwo52Bits)

// floor(v) of each lane, v >= 0: from 2^52 on every double is an integer; below, adding
// and taking away 2^52 rounds to an integer, one too many where it rounded up. (Vectors
// in and out through memory: passed by value, a 64-byte vector's ABI differs between the
// builds, which GCC warns of.)
__attribute__((always_inline)) inline void floorOfPositive(const DoubleLanes& v, DoubleLanes& out) {
  const DoubleLanes nearest = (v + 0x1p52) - 0x1p52;
  const DoubleLanes below = nearest > v ? nearest - 1 : nearest;
  out = v >= 0x1p52 ? v : below;
}

// c[0] x^(N-1) + ... + c[N-1], by Horner's rule from c[0]: a multiply, then an add
// (-ffp-contract=off), the same order in every build.
template <size_t N>
__attribute__((always_inline)) inline void horner(const DoubleLanes& x, const double (&c)[N], DoubleLanes& out) {
  out = DoubleLanes{} + c[0];
#pragma GCC unroll 16
  for (size_t k = 1; k < N; ++k) out = out * x + c[k];
}

// kRankLanes lanes of powerLawRanks below: words[0..kRankLanes) to ranks[0..kRankLanes).
__attribute__((always_inline)) inline void powerLawRankLanes(const int64_t* words, double span, double exponent,
                                                             double vocabulary, double margin, int64_t* ranks) {
  WordLanes word;
  std::memcpy(&word, words, sizeof word);
  // ln 2 in two parts; k * kLn2High is exact for |k| < 2^11.
  constexpr double kLn2High = 0x1.62e42fee00000p-1;
  constexpr double kLn2Low = 0x1.a39ef35793c76p-33;
  constexpr double kInvLn2 = 0x1.71547652b82fep0;
  constexpr double kRound = 0x1.8p52;  // adding it rounds a double below 2^51 to an integer
  constexpr double kSqrt2 = 0x1.6a09e667f3bcdp0;
  const DoubleLanes u = HB_DOUBLES_OF(word & 0xffffffffull) / 4294967296.0;  // exact
  const DoubleLanes y = 1 + u * span;  // > 0; a y too small for the bits below is left to the caller
  const DoubleLanes zeros = {};
  DoubleLanes t = u * span;  // the log law's exponent
  IntLanes inRange = IntLanes{} - 1;  // all true
  if (exponent != 0) {
    // log(y) = k ln 2 + log(m), m in [sqrt(1/2), sqrt(2)): log(m) = 2 atanh(s), s = (m - 1) / (m + 1).
    const WordLanes bits = (WordLanes)y;  // y > 0: the sign bit is clear
    DoubleLanes kd = HB_DOUBLES_OF(bits >> 52) - 1023;
    DoubleLanes m = (DoubleLanes)((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
    const IntLanes halve = m > kSqrt2;
    m = halve ? m * 0.5 : m;
    kd = halve ? kd + 1 : kd;
    const DoubleLanes f = m - 1;
    const DoubleLanes s = f / (2 + f);
    const DoubleLanes z = s * s;
    // 2 atanh(s) / (2 s) = 1 + z / 3 + z^2 / 5 + ... + z^11 / 23.
    static constexpr double kAtanhSeries[] = {1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13,
                                              1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3,  1};
    DoubleLanes q;
    horner(z, kAtanhSeries, q);
    t = exponent * (kd * kLn2High + (kd * kLn2Low + 2 * s * q));
    inRange = y >= 0x1p-1000;
  }
  // exp(t), t in [0, 45]: 2^k exp(r), |r| <= ln(2) / 2, exp(r) by its series to r^13 / 13!.
  // (A NaN or anything outside [0, 60] is left to the caller, and computes on 0 here.)
  inRange &= (t >= 0) & (t <= 60);
  t = inRange ? t : zeros;
  const DoubleLanes kd = (t * kInvLn2 + kRound) - kRound;
  const DoubleLanes r = (t - kd * kLn2High) - kd * kLn2Low;
  // exp(r) = 1 + r + r^2 / 2! + ... + r^13 / 13!.
  static constexpr double kExpSeries[] = {1.0 / 6227020800, 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880,
                                          1.0 / 40320,      1.0 / 5040,      1.0 / 720,      1.0 / 120,     1.0 / 24,
                                          1.0 / 6,          0.5,             1,              1};
  DoubleLanes p;
  horner(r, kExpSeries, p);
  const DoubleLanes scale = (DoubleLanes)((HB_WORDS_OF(kd) + 1023) << 52);
  const DoubleLanes x = p * scale;
  const DoubleLanes low = x * (1 - margin), high = x * (1 + margin);
  // rank = floor(x) - 1, 0 below 1, V - 1 from V on.
  DoubleLanes lowFloor, highFloor;
  floorOfPositive(low, lowFloor);
  floorOfPositive(high, highFloor);
  const IntLanes none = high < 2, top = low >= vocabulary + 1;
  const IntLanes certain = inRange & (none | top | (lowFloor == highFloor));
  const DoubleLanes rank = none ? zeros : top ? zeros + (vocabulary - 1) : highFloor - 1;  // in [0, 2^52)
  const IntLanes out = certain ? (IntLanes)HB_WORDS_OF(rank) : IntLanes{} - 1;
  std::memcpy(ranks, &out, sizeof out);
}

// x = exp(e * log(1 + u * span)) (power: `exponent` e != 0) or exp(u * span) (log:
// exponent 0) for u = word / 2^32, each word in the low 32 bits of words[i], as
// PowerLawRanks::rank computes it but with the log and exp above instead of the C
// library's: the ranks they certainly give go to ranks[i], -1 where the caller must
// compute it. Only separate multiplies and adds (-ffp-contract=off), so every build makes
// the same x.
//
// How close: y = 1 + u * span is the same double on both sides; this log and exp are
// within 4 units in the last place of the true values (the series end where their next
// terms are under 2^-60 of the result), the C library's within 1, so the two e * log(y)
// differ by at most 8 * 2^-52 * |e * log(y)| (e * log(y) is between 0 and log(V + 1) <= 45)
// and the two x by a factor within 1 +- 370 * 2^-52. `margin` (2^-36) is 180 times that:
// where x * (1 - margin) and x * (1 + margin) floor alike, the C library's x floors there
// too, and so gives that rank; elsewhere (a draw within 2^-36 of a rank's edge: none in
// 8M draws at 10^4 rows, alpha 1.1, 4 at 10^6 rows, 1 in 2000 at 10^9) the caller computes
// it with the C library.
// Vocabularies up to 2^52 (exact as doubles, with V + 1).
void powerLawRanks(const int64_t* words, int64_t n, double span, double exponent, double vocabulary, double margin,
                   int64_t* ranks) {
  int64_t i = 0;
  for (; i + kRankLanes <= n; i += kRankLanes) powerLawRankLanes(words + i, span, exponent, vocabulary, margin, ranks + i);
  if (i < n) {
    int64_t last[kRankLanes] = {}, lastRanks[kRankLanes];
    std::memcpy(last, words + i, size_t(n - i) * sizeof(int64_t));
    powerLawRankLanes(last, span, exponent, vocabulary, margin, lastRanks);
    std::memcpy(ranks + i, lastRanks, size_t(n - i) * sizeof(int64_t));
  }
}

#undef HB_DOUBLES_OF
#undef HB_WORDS_OF
#endif  // HB_SYNTHETIC_VECTOR_BYTES > 0

}  // namespace HB_SYNTHETIC_NAMESPACE
