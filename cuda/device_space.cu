// Device address space that grows without moving (cuda_backend.h: DeviceSpace), on CUDA's
// virtual memory management: reserve the range once, then create physical memory and map
// it behind the range's start as rows are made. The driver functions come through the
// runtime's cudaGetDriverEntryPointByVersion, so the addon still links cudart alone and
// loads on machines without a driver. (Under HB_CUDA_EMULATE the emulated runtime answers
// these entry points over host pages: cuda/emulation/runtime.cc.)
#include <cuda.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_context.h"

namespace hb {
namespace cuda {

namespace {

struct VirtualMemoryCalls {
  CUresult (*granularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*addressReserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*addressFree)(CUdeviceptr, size_t) = nullptr;
  CUresult (*create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long) = nullptr;
  CUresult (*release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
  CUresult (*unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*setAccess)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  std::string missing;  // the first entry point the driver did not give
};

const VirtualMemoryCalls& calls() {
  static const VirtualMemoryCalls found = [] {
    VirtualMemoryCalls c;
    auto get = [&c](const char* symbol, auto& fn) {
      void* p = nullptr;
      cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
      // 12000: the functions as CUDA 12.0 declared them (unchanged since 10.2).
      if (cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &status) != cudaSuccess ||
          status != cudaDriverEntryPointSuccess || p == nullptr) {
        cudaGetLastError();
        if (c.missing.empty()) c.missing = symbol;
        return;
      }
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    get("cuMemGetAllocationGranularity", c.granularity);
    get("cuMemAddressReserve", c.addressReserve);
    get("cuMemAddressFree", c.addressFree);
    get("cuMemCreate", c.create);
    get("cuMemRelease", c.release);
    get("cuMemMap", c.map);
    get("cuMemUnmap", c.unmap);
    get("cuMemSetAccess", c.setAccess);
    return c;
  }();
  return found;
}

void checkDriver(CUresult status, const char* what) {
  if (status != CUDA_SUCCESS) fail("CUDA driver error in ", what, ": CUresult ", int(status));
}

CUmemAllocationProp deviceMemory(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

}  // namespace

struct DeviceSpace {
  int device = 0;
  CUdeviceptr base = 0;
  size_t reserved = 0;
  size_t granularity = 0;
  // Each mapping made, (offset, bytes): unmapped one by one, as the driver asks.
  std::vector<std::pair<size_t, size_t>> mapped;
  size_t backed = 0;
  std::mutex mutex;

  ~DeviceSpace() {
    const VirtualMemoryCalls& c = calls();
    try {
      useDevice(device);
      // Kernels still reading the rows finish before the memory goes.
      cudaDeviceSynchronize();
    } catch (...) {
    }
    for (const auto& [offset, bytes] : mapped) c.unmap(base + offset, bytes);
    if (base) c.addressFree(base, reserved);
  }
};

std::shared_ptr<DeviceSpace> reserveDeviceSpace(int device, size_t bytes) {
  const VirtualMemoryCalls& c = calls();
  if (!c.missing.empty()) {
    fail("this CUDA driver has no ", c.missing, " (virtual memory management), which a dynamic table on a GPU needs; keep it in host memory (embDevice: 'cpu')");
  }
  useDevice(device);
  auto space = std::make_shared<DeviceSpace>();
  space->device = device;
  const CUmemAllocationProp prop = deviceMemory(device);
  checkDriver(c.granularity(&space->granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "cuMemGetAllocationGranularity");
  space->granularity = std::max<size_t>(space->granularity, 1);
  space->reserved = (std::max<size_t>(bytes, 1) + space->granularity - 1) / space->granularity * space->granularity;
  const CUresult reserved = c.addressReserve(&space->base, space->reserved, 0, 0, 0);
  if (reserved != CUDA_SUCCESS) {
    space->base = 0;
    failWith(ErrorCode::OutOfMemory, "cannot reserve ", space->reserved, " bytes of device address space (CUresult ",
             int(reserved), "); set embMaxRows to reserve less");
  }
  return space;
}

void* deviceSpaceBase(const DeviceSpace& space) { return reinterpret_cast<void*>(space.base); }

size_t deviceSpaceBacked(const DeviceSpace& space) { return space.backed; }

void backDeviceSpace(DeviceSpace& space, size_t bytes) {
  std::lock_guard<std::mutex> lock(space.mutex);
  if (bytes <= space.backed) return;
  HB_CHECK_CODE(bytes <= space.reserved, OutOfRange, "device space: ", bytes, " bytes asked of a reservation of ", space.reserved);
  const VirtualMemoryCalls& c = calls();
  useDevice(space.device);
  const size_t g = space.granularity;
  const size_t wanted = std::max(bytes, space.backed + space.backed / 4);
  const size_t target = std::min(space.reserved, (wanted + g - 1) / g * g);
  const size_t size = target - space.backed;
  const CUmemAllocationProp prop = deviceMemory(space.device);
  CUmemGenericAllocationHandle handle = 0;
  const CUresult made = c.create(&handle, size, &prop, 0);
  if (made != CUDA_SUCCESS) {
    failWith(ErrorCode::OutOfMemory, "out of device memory: ", size, " more bytes for a dynamic table's rows (CUresult ",
             int(made), "); cap it with embMaxRows or keep it in host memory (embDevice: 'cpu')");
  }
  const CUdeviceptr at = space.base + space.backed;
  const CUresult mappedStatus = c.map(at, size, 0, handle, 0);
  // The mapping holds the memory from here on; the handle is not needed again.
  c.release(handle);
  checkDriver(mappedStatus, "cuMemMap");
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = space.device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const CUresult accessStatus = c.setAccess(at, size, &access, 1);
  if (accessStatus != CUDA_SUCCESS) {
    c.unmap(at, size);
    checkDriver(accessStatus, "cuMemSetAccess");
  }
  space.mapped.emplace_back(space.backed, size);
  space.backed = target;
}

}  // namespace cuda
}  // namespace hb
