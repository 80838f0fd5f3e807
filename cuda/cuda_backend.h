// What the rest of hb-ts may ask of CUDA. Plain C++: no CUDA header leaks out of cuda/.
// Builds with CUDA implement it in cuda/*.cu; builds without it link
// native/core/cuda_unavailable.cc, which reports "not compiled" and throws on use.
//
// Every call that does GPU work returns when that work is complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "native/kernels/embedding_lookup.h"
#include "native/kernels/random_fill.h"
#include "native/kernels/sparse_grad.h"

namespace hb {
namespace cuda {

bool compiled();
// True in builds made with HB_CUDA_EMULATE=ON: the CUDA code paths run on an emulated
// device whose kernels execute on host threads (cuda/emulation/). Never chosen by default.
bool emulated();
// The number of usable devices; 0 with the reason in *whyNone when there are none.
int deviceCount(std::string* whyNone);
std::string deviceName(int device);
// Free and total bytes of device memory now (cudaMemGetInfo).
void memoryInfo(int device, size_t* freeBytes, size_t* totalBytes);

// Called once by each device's executor thread.
void bindThreadToDevice(int device);

// Stream-ordered allocation, so that freeing never stalls the JS thread.
void* allocate(int device, size_t bytes);
void release(int device, void* pointer) noexcept;
// Gives the memory the device's pool kept for reuse back to the driver (the device's
// executor calls it once it has been idle for a while).
void releaseIdleDeviceMemory(int device) noexcept;

// Device address space reserved once and backed with memory from its start as it is
// needed (CUDA's virtual memory management, reached through the runtime's driver entry
// points): a dynamic table's rows on a device keep their addresses as the table grows,
// and its memory follows the rows made, as the host table's lazily committed pages do.
struct DeviceSpace;
std::shared_ptr<DeviceSpace> reserveDeviceSpace(int device, size_t bytes);
void* deviceSpaceBase(const DeviceSpace& space);
// Backs at least [base, base + bytes): memory is mapped in steps of at least a quarter of
// what is backed already (and the device's granularity), so growth row by row stays cheap.
void backDeviceSpace(DeviceSpace& space, size_t bytes);
size_t deviceSpaceBacked(const DeviceSpace& space);

// Rows of a [*, width] float32 table in device memory, named by host row lists
// (cuda/table_rows.cu); the CPU does the same in native/embedding/dynamic_table.cc.
// For each block: element j of its rows[k] <- fillValue(spec, ids[k] * width + j), row
// ids[k] of a table made with `spec` (byId false: element j of row 0, which a constant
// spec needs). The row list and ids go to the device once for every block.
struct RowFill {
  float* table;
  int64_t width;
  FillSpec spec;
  bool byId;
};
void initRows(int device, const std::vector<RowFill>& blocks, const int64_t* rows, const int64_t* ids, int64_t n);
// rows[k] of `table` <- hostRows[k]; hostRows[k] <- rows[k] of `table`.
void writeRows(int device, float* table, int64_t width, const int64_t* rows, int64_t n, const float* hostRows);
void readRows(int device, const float* table, int64_t width, const int64_t* rows, int64_t n, float* hostRows);
// rows[k] of `table` <- values[k], values in device memory (a gradient's rows put in place).
void placeRows(int device, float* table, int64_t width, const int64_t* rows, int64_t n, const float* values);

void copyToDevice(int device, void* dst, const void* src, size_t bytes);
void copyToHost(int device, void* dst, const void* src, size_t bytes);
void copyDeviceToDevice(int device, void* dst, const void* src, size_t bytes);

// args' pointers are device pointers.
void embeddingLookup(int device, const EmbeddingLookupArgs& args);
void fill(int device, float* out, int64_t n, const FillSpec& spec);

// Device pointers; same output order as the CPU kernels (unique_partition.h).
int64_t unique(int device, const void* ids, bool idsAreInt64, int64_t n, void* uniqueIds, int32_t* inverse);
void partitionByOwner(int device, const void* ids, bool idsAreInt64, int64_t n, int32_t worldSize, void* outIds,
                      int32_t* sizes, int32_t* restore);

// FarmHash Fingerprint64 (mod numBuckets unless 0) of host inputs into hostOut, as
// native/kernels/string_hash.h does on the CPU (cuda/string_hash.cu). Offsets: n + 1,
// already validated.
void fingerprintByteRanges(int device, const uint8_t* hostBytes, int64_t byteCount, const int64_t* hostOffsets, int64_t n,
                           uint64_t numBuckets, uint64_t* hostOut);
// int32 or int64 values, hashed as their decimal strings.
void fingerprintDecimal(int device, const void* hostValues, bool int64, int64_t n, uint64_t numBuckets, uint64_t* hostOut);

// Optimizer rules on device memory (target and grad are device pointers).
void applyDense(int device, const OptimizerHyper& hyper, const OptimizerTarget& target, const float* grad);

// Sparse gradients (cuda/embedding_backward.cu), with the CPU kernels' results bit for bit.
// The lookup's backward: args.table and outGrad are device pointers, args.ids / rowSplits /
// weights host ones (checked); rows as embeddingLookupBackwardCpu lists them (host), each
// clipped with args.maxNorm as runLookupBackward does; values in device memory.
RowGradients embeddingLookupBackward(int device, const EmbeddingLookupArgs& args, const float* outGrad);
// IndexedSlices: indices host [n] (in range), values device [n, target.width]; duplicate
// rows summed as sumDuplicateRowsCpu does (GradientDescent: each entry in turn).
void applyIndexedSlices(int device, const OptimizerHyper& hyper, const OptimizerTarget& target, const void* indices,
                        bool indicesAreInt64, int64_t n, const float* values);
// Backward of every lookup of the table target.var, then its sparse update, without the
// gradient leaving the device: the same results as each lookup's backward, stacked, then
// applied as IndexedSlices. lookups as for embeddingLookupBackward; outGrads[i] device.
void lookupBackwardApply(int device, const OptimizerHyper& hyper, const OptimizerTarget& target,
                         const std::vector<EmbeddingLookupArgs>& lookups, const std::vector<const float*>& outGrads);

// The index of the first NaN or infinity in device memory x[0, n), or -1.
int64_t firstNonFinite(int device, const float* x, int64_t n);
// The same check queued on the compute stream without waiting for it: where x[0, n) holds
// a NaN or infinity, *first becomes the least such index (if less) and *skip and
// *anyFailed become 1. Device pointers; the caller set *first to ~0 and the flags to 0.
void flagNonFinite(int device, const float* x, int64_t n, uint64_t* first, int32_t* skip, int32_t* anyFailed);
// Device memory [p, p + bytes) set to `byte`, queued on the compute stream.
void setDeviceBytes(int device, void* p, int byte, size_t bytes);

// float32 <-> float16 / bfloat16 wire values (native/kernels/wire_cast.h), device pointers.
void packWire(int device, const float* in, uint16_t* out, int64_t n, bool bfloat16);
void unpackWire(int device, const uint16_t* in, float* out, int64_t n, bool bfloat16);

struct LibraryStatus {
  bool loaded = false;
  std::string version;
  std::string error;
};
// Opened with dlopen on first call: the directories of HB_CUDA_LIB_DIRS, then the
// loader's default path.
LibraryStatus cublasStatus();
LibraryStatus ncclStatus();

}  // namespace cuda
}  // namespace hb
