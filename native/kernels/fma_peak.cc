// The multiply-add peak of this machine for the instruction set sgemmCpu uses: what a
// GEMM's GFLOP/s is a fraction of. Measured, not computed from a model number, since a
// VM reports neither its clock under load nor how many FMA pipes a core has.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "native/core/thread_pool.h"
#include "native/kernels/sgemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HB_PEAK_X86 1
#endif

namespace hb {

namespace {

// Independent accumulator chains: enough to cover the FMA latency on every pipe.
constexpr int kChains = 12;

#ifdef HB_PEAK_X86
#pragma GCC push_options
#pragma GCC target("avx512f")
float chainsAvx512(int64_t iterations, float seed) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(seed + float(c));
  const __m512 scale = _mm512_set1_ps(0.999999f);
  const __m512 shift = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], scale, shift);
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  float lanes[16];
  _mm512_storeu_ps(lanes, sum);
  float total = 0;
  for (float x : lanes) total += x;
  return total;
}
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
float chainsAvx2(int64_t iterations, float seed) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(seed + float(c));
  const __m256 scale = _mm256_set1_ps(0.999999f);
  const __m256 shift = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], scale, shift);
  }
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  float total = 0;
  for (float x : lanes) total += x;
  return total;
}
#pragma GCC pop_options
#endif

}  // namespace

FmaPeak measureFmaPeak(double seconds) {
  FmaPeak peak;
  peak.isa = sgemmIsaName();
  peak.threads = threadPoolSize();
  int lanes = 0;
  float (*chains)(int64_t, float) = nullptr;
#ifdef HB_PEAK_X86
  if (std::strcmp(peak.isa, "avx512") == 0) {
    lanes = 16;
    chains = chainsAvx512;
  } else if (std::strcmp(peak.isa, "avx2") == 0) {
    lanes = 8;
    chains = chainsAvx2;
  }
#endif
  if (chains == nullptr) return peak;  // portable GEMM: no FMA peak to speak of
  // Calibrate one thread's iterations to the time asked for, then run them on every
  // pool thread at once (the GEMMs use them all).
  int64_t iterations = 1 << 16;
  volatile float sink = 0;
  for (;;) {
    const auto start = std::chrono::steady_clock::now();
    sink = sink + chains(iterations, 1.0f);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (took >= seconds / 4 || iterations >= (int64_t(1) << 40)) {
      iterations = int64_t(double(iterations) * seconds / std::max(took, 1e-6));
      break;
    }
    iterations *= 4;
  }
  // Threads of its own, one per pool thread, all started before the clock: the pool may
  // run two items on one thread when another is slow to wake, which would halve the figure.
  std::vector<float> sums(size_t(peak.threads), 0.0f);
  std::vector<double> took(size_t(peak.threads), 0.0);
  std::vector<std::thread> threads;
  for (int t = 0; t < peak.threads; ++t) {
    threads.emplace_back([&, t] {
      const auto start = std::chrono::steady_clock::now();
      sums[size_t(t)] = chains(iterations, float(t));
      took[size_t(t)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (float s : sums) sink = sink + s;
  // Each thread's own rate, summed: a thread descheduled for a while lowers only its share.
  for (double threadSeconds : took) peak.gflops += double(iterations) * kChains * lanes * 2 / threadSeconds / 1e9;
  return peak;
}

}  // namespace hb
