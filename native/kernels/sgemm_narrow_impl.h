// The narrow product's loop (sgemm_cpu.cc's narrowRows), included once per vector
// instruction set inside its namespace, with:
//   HB_NARROW_VEC             the vector type
//   HB_NARROW_LANES           its floats
//   HB_NARROW_ACCUMULATORS    how many vectors of sums the registers hold beside the rest
//   HB_NARROW_LOAD_PANEL(p)   MR floats of a packed panel (the rest of the lanes zero)
//   HB_NARROW_BROADCAST(x), HB_NARROW_FMA(a, b, c), HB_NARROW_ZERO(), HB_NARROW_STORE(p, v)
// and MR, the kernel's panel height (<= HB_NARROW_LANES). The macros are undefined at the end.
//
// A product with few columns of C (N at most half the tile's NR) spent most of the tile's
// multiply-adds on the zero columns its packed B panel is padded with: DLRM's last layer
// (N = 1) did 32 times its work, a layer of 16 outputs twice. Here each vector holds a
// panel's MR rows of one column of C, and only the N columns there are get computed. Each
// element of C is summed as the tile sums it: over a depth block, k in order, one fused
// multiply-add at a time from 0; then alpha times the sum, plus beta times C when beta
// is not 0. So the bits are the tile's, on both vector kernels.

namespace narrow {

// The sums of P panels (P * kc * MR floats from `panels`) for the N columns of op(B)'s
// rows [pc, pc + kc), into C's rows from `c` (ldc apart; `rows` of the P * MR are real).
// kTransB as a constant: with B's column stride known to be 1, the N loads of a step of
// k are fixed offsets (computed at run time, 16 of them took more registers than there are).
template <int N, int P, bool kTransB>
void panelGroup(const GemmProblem& p, int64_t kc, const float* __restrict panels, int64_t pc, float beta, float* c,
                int64_t rows) {
  HB_NARROW_VEC acc[P][N];
#pragma GCC unroll 8
  for (int q = 0; q < P; ++q) {
#pragma GCC unroll 16
    for (int j = 0; j < N; ++j) acc[q][j] = HB_NARROW_ZERO();
  }
  // op(B)(pc + k, j): B[(pc + k) * ldb + j], or B[j * ldb + pc + k] when transposed.
  const int64_t stepK = kTransB ? 1 : p.ldb, stepJ = kTransB ? p.ldb : 1;
  const float* b = p.B + pc * stepK;
  for (int64_t k = 0; k < kc; ++k) {
#pragma GCC unroll 8
    for (int q = 0; q < P; ++q) {
      const HB_NARROW_VEC a = HB_NARROW_LOAD_PANEL(panels + (q * kc + k) * MR);
#pragma GCC unroll 16
      for (int j = 0; j < N; ++j) acc[q][j] = HB_NARROW_FMA(a, HB_NARROW_BROADCAST(b[j * stepJ]), acc[q][j]);
    }
    b += stepK;
  }
  alignas(64) float sums[N][HB_NARROW_LANES];
  for (int q = 0; q < P; ++q) {
#pragma GCC unroll 16
    for (int j = 0; j < N; ++j) HB_NARROW_STORE(sums[j], acc[q][j]);
    const int64_t panelRows = std::min<int64_t>(MR, rows - q * MR);
    for (int64_t r = 0; r < panelRows; ++r) {
      float* cRow = c + (q * MR + r) * p.ldc;
      for (int j = 0; j < N; ++j) {
        const float scaled = p.alpha * sums[j][r];
        cRow[j] = beta == 0.0f ? scaled : scaled + beta * cRow[j];
      }
    }
  }
}

// Panels `count` of them, P at a time while P fit.
template <int N>
void panels(const GemmProblem& p, int64_t kc, const float* panelData, int64_t count, int64_t pc, float beta, float* c,
            int64_t rows) {
  // As many panels at once as their sums fit the registers: independent chains of
  // multiply-adds, where one panel of one column would wait on each add's latency.
  constexpr int P = std::max(1, std::min(8, HB_NARROW_ACCUMULATORS / N));
  const auto group = p.transB ? panelGroup<N, P, true> : panelGroup<N, P, false>;
  const auto single = p.transB ? panelGroup<N, 1, true> : panelGroup<N, 1, false>;
  int64_t g = 0;
  for (; g + P <= count; g += P) group(p, kc, panelData + g * kc * MR, pc, beta, c + g * MR * p.ldc, rows - g * MR);
  for (; g < count; ++g) single(p, kc, panelData + g * kc * MR, pc, beta, c + g * MR * p.ldc, rows - g * MR);
}

template <int... Ns>
void dispatch(std::integer_sequence<int, Ns...>, const GemmProblem& p, int64_t kc, const float* panelData, int64_t count,
              int64_t pc, float beta, float* c, int64_t rows) {
  using Run = void (*)(const GemmProblem&, int64_t, const float*, int64_t, int64_t, float, float*, int64_t);
  static constexpr Run byWidth[] = {panels<Ns + 1>...};
  byWidth[p.N - 1](p, kc, panelData, count, pc, beta, c, rows);
}

}  // namespace narrow

// C's rows [i0, i0 + rows) over depth block [pc, pc + kc), from A's panels packed by
// packA: p.N (1 .. kNarrowMax) columns.
void narrowPanels(const GemmProblem& p, int64_t kc, const float* panelData, int64_t i0, int64_t rows, int64_t pc,
                  float beta) {
  narrow::dispatch(std::make_integer_sequence<int, kNarrowMax>{}, p, kc, panelData, (rows + MR - 1) / MR, pc, beta,
                   p.C + i0 * p.ldc, rows);
}

#undef HB_NARROW_VEC
#undef HB_NARROW_LANES
#undef HB_NARROW_ACCUMULATORS
#undef HB_NARROW_LOAD_PANEL
#undef HB_NARROW_BROADCAST
#undef HB_NARROW_FMA
#undef HB_NARROW_ZERO
#undef HB_NARROW_STORE
