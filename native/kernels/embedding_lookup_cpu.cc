#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "native/core/thread_pool.h"
#include "native/kernels/cpu_isa.h"
#include "native/kernels/embedding_lookup.h"

namespace hb {

namespace {

// How far ahead the rows are prefetched: enough to hide DRAM latency behind the adds of
// the rows in between. The look-ahead runs over the flat id stream, across bag
// boundaries, so a bag's first rows are already on their way while the previous bag
// finishes (bags of ~20 ids would otherwise start cold). The rows are fetched into L2,
// not L1: 16 rows of dim 64 ahead are 64 lines in flight, more than L1 tracks, and the
// loads then waited on DRAM anyway. On a 2-vCPU EPYC VM (Zen 4), 1M-row tables, 20 ids
// a bag: 4096 bags of dim 64 1.57-1.91 -> 0.84-0.93 ms, of dim 128 3.0-3.1 -> 1.4-1.5 ms;
// in the lookup grid the uniform 20-id cells went from 0.78-1.56x PyTorch to 1.39-2.68x.
// The distance is counted in cache lines, kPrefetchLines of them, and 24 to 96 ids: narrow
// rows need more ids ahead for as many lines in flight. A later session, in a phase of the
// VM where memory ran at 40-70 GB/s (a copy), swept it again with a C++ loop over the
// kernel: 96 ids ahead against 24-48 took dim 64, 4096 bags x 20 power-law ids 220-227 ->
// 132 us, 16384 x 20 uniform 2.25 -> 1.83 ms, dim 32 176 -> 131 us, dim 128 power-law
// 419 -> 380 us; one-id bags and dim 16 unchanged. 96 rows of dim 64 ahead are 24 KiB: L2
// keeps them until they are read. (Earlier, at 18-25 GB/s, dims 64 and 128 were flat from
// 12 to 48 ids.)
constexpr int64_t kPrefetchLines = 384;
constexpr int64_t kMinPrefetchIds = 24;
constexpr int64_t kMaxPrefetchIds = 96;

constexpr int64_t prefetchDistance(int64_t dim) {
  const int64_t lines = std::max<int64_t>(1, (dim * int64_t(sizeof(float)) + 63) / 64);
  return std::max(kMinPrefetchIds, std::min(kMaxPrefetchIds, kPrefetchLines / lines));
}

// The kernel's vectors only live in registers of inlined code: the ABI note GCC
// gives about passing them without AVX does not apply.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#define HB_LOOKUP_NAMESPACE portable
#define HB_LOOKUP_MASKED_TAIL 0
#include "native/kernels/embedding_lookup_cpu_impl.h"
#undef HB_LOOKUP_MASKED_TAIL
#undef HB_LOOKUP_NAMESPACE

#if defined(__x86_64__) && defined(__GNUC__)
// The same kernel with 256-bit vectors. Only AVX2 is enabled, not FMA: the results stay
// those of separate multiplies and adds.
#pragma GCC push_options
#pragma GCC target("avx2")
#define HB_LOOKUP_NAMESPACE avx2
// Widths up to 64 with no kernel of their own (4, 12, 24, 48, ...; unclipped) keep their
// sums in registers too, the row's last vector cut to the row: they summed in the output
// row, in memory, at 2-3x the time of the widths around them. 4096 bags x 20
// ids over 100k-row tables, lookups alone on a 2-vCPU EPYC VM (Zen 5), builds alternated
// three times: dim 4 139-181 -> 91-98 us (dim 8: 62), 12 150-185 -> 108-110, 24 161-175 ->
// 102-122, 48 232-252 -> 162-167 (one run 335).
#define HB_LOOKUP_MASKED_TAIL 1
#include "native/kernels/embedding_lookup_cpu_impl.h"
#undef HB_LOOKUP_MASKED_TAIL
#undef HB_LOOKUP_NAMESPACE
#pragma GCC pop_options

// And with 512-bit vectors of 16 floats (AVX-512F; again no FMA), for the widths held in
// registers of 32 floats and more (32, 64, 128): half the loads and adds, which shows
// where rows come from cache. On a 2-vCPU EPYC VM (Zen 5), lookups alone in a loop, the
// builds alternated three times: over one small set of ids (rows cached), dim 128, 16384
// one-id bags 132-172 -> 106-108 us, dim 64, 4096 bags x 20 ids 141-146 -> 128-130 us;
// bench/embedding.bench.js (1M x 64, 4096 bags x 20 uniform ids, alternated twice)
// 0.63-0.77 -> 0.58-0.59 ms; other shapes whose rows come from memory within the noise
// (dim 128, 16384 bags x 20 power-law ids: 2.2-2.7 against 2.3-2.6 ms). One 512-bit
// vector a row of 16 floats was slower over cached rows (39-49 -> 48-60 us), so narrower
// rows stay on AVX2.
#pragma GCC push_options
#pragma GCC target("avx512f,prefer-vector-width=512")
#define HB_LOOKUP_NAMESPACE avx512
#define HB_LOOKUP_LANES 16
#define HB_LOOKUP_MASKED_TAIL 0
#include "native/kernels/embedding_lookup_cpu_impl.h"
#undef HB_LOOKUP_MASKED_TAIL
#undef HB_LOOKUP_LANES
#undef HB_LOOKUP_NAMESPACE
#pragma GCC pop_options
#endif

enum class LookupIsa { Portable, Avx2, Avx512 };

LookupIsa lookupIsa() {
#if defined(__x86_64__) && defined(__GNUC__)
  // The AVX-512 build takes three widths; the AVX2 one every other.
  static const LookupIsa isa = !cpuTakesAvx2() ? LookupIsa::Portable
                               : __builtin_cpu_supports("avx512f") && cpuIsaCap() >= CpuIsa::Avx512 ? LookupIsa::Avx512
                                                                                                    : LookupIsa::Avx2;
  return isa;
#else
  return LookupIsa::Portable;
#endif
}

}  // namespace

bool embeddingLookupCpu(const EmbeddingLookupArgs& args) {
  switch (lookupIsa()) {
#if defined(__x86_64__) && defined(__GNUC__)
    case LookupIsa::Avx512:
      if (args.dim == 32 || args.dim == 64 || args.dim == 128) return avx512::embeddingLookup<true>(args);
      return avx2::embeddingLookup(args);
    case LookupIsa::Avx2: return avx2::embeddingLookup(args);
#endif
    default: return portable::embeddingLookup(args);
  }
}

const char* embeddingLookupIsaName() {
  switch (lookupIsa()) {
    case LookupIsa::Avx512: return "avx512";
    case LookupIsa::Avx2: return "avx2";
    default: return "portable";
  }
}

}  // namespace hb
