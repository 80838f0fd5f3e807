// Rows of a [*, width] float32 table in device memory named by host row lists: a dynamic
// table's new rows initialised (from (seed, id), as the CPU's initRow does through the
// same fillValue), rows written from / read into host memory (restore, snapshot), and
// rows put in place from device memory (a combine's gradient, row by row).
// Row lists and values go through device staging in chunks, so a snapshot of millions of
// rows needs a bounded amount of device memory beside the table.
#include <algorithm>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"
#include "cuda/device_scratch.h"
#include "cuda/element_launch.h"
#include "cuda/kernel_launch.h"
#include "native/kernels/random_fill.h"

namespace hb {
namespace cuda {

namespace {

// Staged values per chunk: 16 Mi floats (64 MiB).
constexpr int64_t kChunkValues = int64_t(1) << 24;

__global__ void initRowsKernel(float* table, int64_t width, const int64_t* rows, const int64_t* ids, int64_t n, FillSpec spec) {
  const int64_t i = elementIndex();
  if (i >= n * width) return;
  const int64_t k = i / width, j = i % width;
  const uint64_t first = ids ? uint64_t(ids[k]) * uint64_t(width) : 0;
  table[rows[k] * width + j] = fillValue(spec, first + uint64_t(j));
}

__global__ void scatterRowsKernel(float* table, int64_t width, const int64_t* rows, int64_t n, const float* values) {
  const int64_t i = elementIndex();
  if (i >= n * width) return;
  table[rows[i / width] * width + i % width] = values[i];
}

__global__ void gatherRowsKernel(const float* table, int64_t width, const int64_t* rows, int64_t n, float* values) {
  const int64_t i = elementIndex();
  if (i >= n * width) return;
  values[i] = table[rows[i / width] * width + i % width];
}

// body(first row, rows) over [0, n) in chunks of at most kChunkValues values.
template <typename Body>
void forEachChunk(int64_t n, int64_t width, Body body) {
  if (width <= 0) return;  // rows of no values: nothing to move (and no empty grid to launch)
  const int64_t chunk = std::max<int64_t>(1, kChunkValues / std::max<int64_t>(width, 1));
  for (int64_t at = 0; at < n; at += chunk) body(at, std::min(n - at, chunk));
}

// The chunk's row list (and ids) on the device.
void stage(int device, Scratch& to, const int64_t* host, int64_t n) {
  to = Scratch(device, size_t(n) * 8);
  copyToDevice(device, to.as<int64_t>(), host, size_t(n) * 8);
}

void finish(DeviceContext& context, const char* what) {
  check(cudaGetLastError(), what);
  check(cudaStreamSynchronize(context.compute), what);
}

}  // namespace

void initRows(int device, const std::vector<RowFill>& blocks, const int64_t* rows, const int64_t* ids, int64_t n) {
  DeviceContext& context = useDevice(device);
  int64_t widest = 1;
  for (const RowFill& b : blocks) widest = std::max(widest, b.width);
  forEachChunk(n, widest, [&](int64_t at, int64_t m) {
    Scratch deviceRows, deviceIds;
    stage(device, deviceRows, rows + at, m);
    if (ids) stage(device, deviceIds, ids + at, m);
    for (const RowFill& b : blocks) {
      if (b.width == 0) continue;
      launchKernel(initRowsKernel, elementBlocks(m * b.width), kElementThreads, 0, context.compute, b.table, b.width,
                   deviceRows.as<const int64_t>(), b.byId ? deviceIds.as<const int64_t>() : nullptr, m, b.spec);
    }
    finish(context, "initRows kernel");
  });
}

void placeRows(int device, float* table, int64_t width, const int64_t* rows, int64_t n, const float* values) {
  DeviceContext& context = useDevice(device);
  forEachChunk(n, width, [&](int64_t at, int64_t m) {
    Scratch deviceRows;
    stage(device, deviceRows, rows + at, m);
    launchKernel(scatterRowsKernel, elementBlocks(m * width), kElementThreads, 0, context.compute, table, width,
                 deviceRows.as<const int64_t>(), m, values + at * width);
    finish(context, "placeRows kernel");
  });
}

void writeRows(int device, float* table, int64_t width, const int64_t* rows, int64_t n, const float* hostRows) {
  forEachChunk(n, width, [&](int64_t at, int64_t m) {
    Scratch values(device, size_t(m * width) * 4);
    copyToDevice(device, values.as<float>(), hostRows + at * width, size_t(m * width) * 4);
    placeRows(device, table, width, rows + at, m, values.as<const float>());
  });
}

void readRows(int device, const float* table, int64_t width, const int64_t* rows, int64_t n, float* hostRows) {
  DeviceContext& context = useDevice(device);
  forEachChunk(n, width, [&](int64_t at, int64_t m) {
    Scratch deviceRows;
    stage(device, deviceRows, rows + at, m);
    Scratch values(device, size_t(m * width) * 4);
    launchKernel(gatherRowsKernel, elementBlocks(m * width), kElementThreads, 0, context.compute, table, width,
                 deviceRows.as<const int64_t>(), m, values.as<float>());
    finish(context, "readRows kernel");
    copyToHost(device, hostRows + at * width, values.as<const float>(), size_t(m * width) * 4);
  });
}

}  // namespace cuda
}  // namespace hb
