// CUDA entry points for builds without CUDA (HB_CUDA=OFF, no nvcc, or node-gyp).
// Nothing here is reached once parseUsableDevice has refused 'cuda'; the throws are a
// second line of defence.
#include "cuda/cuda_backend.h"
#include "native/core/status.h"

namespace hb {
namespace cuda {

namespace {
constexpr const char* kNotCompiled = "CUDA support is not compiled into this build of hb-ts";
[[noreturn]] void notCompiled() { fail(kNotCompiled); }
}  // namespace

bool compiled() { return false; }
bool emulated() { return false; }

int deviceCount(std::string* whyNone) {
  if (whyNone) *whyNone = kNotCompiled;
  return 0;
}

std::string deviceName(int) { notCompiled(); }
void memoryInfo(int, size_t*, size_t*) { notCompiled(); }
void bindThreadToDevice(int) {}
void* allocate(int, size_t) { notCompiled(); }
void release(int, void*) noexcept {}
void releaseIdleDeviceMemory(int) noexcept {}
std::shared_ptr<DeviceSpace> reserveDeviceSpace(int, size_t) { notCompiled(); }
void* deviceSpaceBase(const DeviceSpace&) { notCompiled(); }
void backDeviceSpace(DeviceSpace&, size_t) { notCompiled(); }
size_t deviceSpaceBacked(const DeviceSpace&) { notCompiled(); }
void initRows(int, const std::vector<RowFill>&, const int64_t*, const int64_t*, int64_t) { notCompiled(); }
void writeRows(int, float*, int64_t, const int64_t*, int64_t, const float*) { notCompiled(); }
void readRows(int, const float*, int64_t, const int64_t*, int64_t, float*) { notCompiled(); }
void placeRows(int, float*, int64_t, const int64_t*, int64_t, const float*) { notCompiled(); }
void copyToDevice(int, void*, const void*, size_t) { notCompiled(); }
void copyToHost(int, void*, const void*, size_t) { notCompiled(); }
void copyDeviceToDevice(int, void*, const void*, size_t) { notCompiled(); }
void embeddingLookup(int, const EmbeddingLookupArgs&) { notCompiled(); }
void fill(int, float*, int64_t, const FillSpec&) { notCompiled(); }
int64_t firstNonFinite(int, const float*, int64_t) { notCompiled(); }
void flagNonFinite(int, const float*, int64_t, uint64_t*, int32_t*, int32_t*) { notCompiled(); }
void setDeviceBytes(int, void*, int, size_t) { notCompiled(); }
void packWire(int, const float*, uint16_t*, int64_t, bool) { notCompiled(); }
void unpackWire(int, const uint16_t*, float*, int64_t, bool) { notCompiled(); }

int64_t unique(int, const void*, bool, int64_t, void*, int32_t*) { notCompiled(); }
void partitionByOwner(int, const void*, bool, int64_t, int32_t, void*, int32_t*, int32_t*) { notCompiled(); }
void fingerprintByteRanges(int, const uint8_t*, int64_t, const int64_t*, int64_t, uint64_t, uint64_t*) { notCompiled(); }
void fingerprintDecimal(int, const void*, bool, int64_t, uint64_t, uint64_t*) { notCompiled(); }

void applyDense(int, const OptimizerHyper&, const OptimizerTarget&, const float*) { notCompiled(); }
RowGradients embeddingLookupBackward(int, const EmbeddingLookupArgs&, const float*) { notCompiled(); }
void applyIndexedSlices(int, const OptimizerHyper&, const OptimizerTarget&, const void*, bool, int64_t, const float*) {
  notCompiled();
}
void lookupBackwardApply(int, const OptimizerHyper&, const OptimizerTarget&, const std::vector<EmbeddingLookupArgs>&,
                         const std::vector<const float*>&) {
  notCompiled();
}

LibraryStatus cublasStatus() { return LibraryStatus{false, "", kNotCompiled}; }
LibraryStatus ncclStatus() { return LibraryStatus{false, "", kNotCompiled}; }

}  // namespace cuda
}  // namespace hb
