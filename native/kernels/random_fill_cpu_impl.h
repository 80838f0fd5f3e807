// The CPU fill loops, included once per instruction set by random_fill_cpu.cc inside
// namespace HB_FILL_NAMESPACE. Only single-rounding +, *, / and integer ops, so every
// variant (and the CUDA kernel) writes the same bits.

namespace HB_FILL_NAMESPACE {

// out[k] = element `logical + k` of the whole table, for k in [0, count): one loop per
// kind so each vectorizes.
inline void fillContiguous(float* out, int64_t count, const FillSpec& spec, uint64_t stream, uint64_t logical) {
  switch (spec.kind) {
    case FillKind::Uniform: {
      const float low = spec.minval;
      const float width = spec.maxval - spec.minval;
      for (int64_t k = 0; k < count; ++k) {
        out[k] = addRn(low, mulRn(uniformFromBits(elementBits(stream, logical + uint64_t(k))), width));
      }
      return;
    }
    case FillKind::TruncatedNormal: {
      const float mean = spec.mean;
      const float stddev = spec.stddev;
      for (int64_t k = 0; k < count; ++k) {
        out[k] = addRn(mean, mulRn(stddev, truncatedNormalFromBits(elementBits(stream, logical + uint64_t(k)))));
      }
      return;
    }
    default:
      for (int64_t k = 0; k < count; ++k) out[k] = spec.value;
  }
}

void fill(float* out, int64_t n, const FillSpec& spec) {
  const uint64_t stream = seedStream(spec.seed);
  parallelFor(n, 1 << 16, [&](int64_t first, int64_t last) {
    populateForWrite(out + first, size_t(last - first) * sizeof(float));
    if (spec.rowWidth == 0) {
      fillContiguous(out + first, last - first, spec, stream, uint64_t(first));
      return;
    }
    // A shard: row by row, since each of its rows is contiguous in the whole table.
    for (int64_t i = first; i < last;) {
      const uint64_t row = uint64_t(i) / spec.rowWidth;
      const uint64_t column = uint64_t(i) % spec.rowWidth;
      const int64_t count = std::min<int64_t>(last - i, int64_t(spec.rowWidth - column));
      fillContiguous(out + i, count, spec, stream, (row * spec.rowStride + spec.rowOffset) * spec.rowWidth + column);
      i += count;
    }
  });
}

// Row ids[k] of the table `spec` fills, into row rows[k] of `table` (ids null: row 0).
void fillRows(float* table, int64_t width, const int64_t* rows, const int64_t* ids, int64_t n, const FillSpec& spec) {
  const uint64_t stream = seedStream(spec.seed);
  parallelFor(n, std::max<int64_t>(1, 4096 / std::max<int64_t>(width, 1)), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const uint64_t first = ids ? logicalIndex(spec, uint64_t(ids[k]) * uint64_t(width)) : 0;
      fillContiguous(table + rows[k] * width, width, spec, stream, first);
    }
  });
}

}  // namespace HB_FILL_NAMESPACE
