// Opens cuBLAS and NCCL on first need.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <sstream>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_library_api.h"

namespace hb {
namespace cuda {

namespace {

struct OpenedLibrary {
  void* handle = nullptr;
  std::string error;
};

std::vector<std::string> searchDirectories() {
  std::vector<std::string> dirs;
  const char* env = std::getenv("HB_CUDA_LIB_DIRS");
  if (env == nullptr) return dirs;
  std::stringstream list(env);
  std::string dir;
  while (std::getline(list, dir, ':')) {
    if (!dir.empty()) dirs.push_back(dir);
  }
  return dirs;
}

OpenedLibrary openFirst(const std::vector<std::string>& names) {
  OpenedLibrary result;
  std::vector<std::string> candidates;
  for (const std::string& dir : searchDirectories()) {
    for (const std::string& name : names) candidates.push_back(dir + "/" + name);
  }
  for (const std::string& name : names) candidates.push_back(name);  // the loader's path
  std::string lastError;
  for (const std::string& candidate : candidates) {
    result.handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (result.handle != nullptr) return result;
    const char* why = dlerror();
    lastError = why ? why : candidate + ": not found";
  }
  std::string tried;
  for (const std::string& name : names) tried += (tried.empty() ? "" : ", ") + name;
  result.error = "could not open " + tried + " (searched HB_CUDA_LIB_DIRS=" +
                 (std::getenv("HB_CUDA_LIB_DIRS") ? std::getenv("HB_CUDA_LIB_DIRS") : "<unset>") +
                 " and the loader path; last error: " + lastError + ")";
  return result;
}

struct Cublas {
  LibraryStatus status;
  void* handle = nullptr;
};

const Cublas& openedCublas() {
  static std::once_flag once;
  static Cublas cublas;
  std::call_once(once, [] {
    LibraryStatus& status = cublas.status;
#if defined(HB_CUDA_EMULATED)
    // The emulated device's memory is host memory: a real cuBLAS must never see it.
    status.loaded = true;
    status.version = "emulated (hb-ts's CPU sgemm)";
    return;
#endif
    OpenedLibrary lib = openFirst({"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"});
    if (lib.handle == nullptr) {
      status.error = lib.error;
      return;
    }
    auto getProperty = reinterpret_cast<HbCublasGetPropertyFn>(dlsym(lib.handle, "cublasGetProperty"));
    if (getProperty == nullptr) {
      status.error = "cuBLAS opened, but it has no cublasGetProperty";
      return;
    }
    int major = 0, minor = 0, patch = 0;
    getProperty(0, &major);
    getProperty(1, &minor);
    getProperty(2, &patch);
    status.loaded = true;
    status.version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
    cublas.handle = lib.handle;
  });
  return cublas;
}

}  // namespace

LibraryStatus cublasStatus() { return openedCublas().status; }

void* cublasLibrary() { return openedCublas().handle; }

namespace {
struct Nccl {
  LibraryStatus status;
  void* handle = nullptr;
};

const Nccl& openedNccl() {
  static std::once_flag once;
  static Nccl nccl;
  std::call_once(once, [] {
    LibraryStatus& status = nccl.status;
#if defined(HB_CUDA_EMULATED)
    status.error = "NCCL is not emulated in this build (HB_CUDA_EMULATE=ON); CUDA tensors take the Gloo backend";
    return;
#endif
    OpenedLibrary lib = openFirst({"libnccl.so.2", "libnccl.so"});
    if (lib.handle == nullptr) {
      status.error = lib.error;
      return;
    }
    auto getVersion = reinterpret_cast<HbNcclGetVersionFn>(dlsym(lib.handle, "ncclGetVersion"));
    int code = 0;
    if (getVersion == nullptr || getVersion(&code) != 0) {
      status.error = "NCCL opened, but ncclGetVersion failed";
      return;
    }
    const int major = code >= 10000 ? code / 10000 : code / 1000;
    const int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
    const int patch = code % 100;
    status.loaded = true;
    status.version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
    nccl.handle = lib.handle;
  });
  return nccl;
}
}  // namespace

LibraryStatus ncclStatus() { return openedNccl().status; }

void* ncclLibrary() { return openedNccl().handle; }

}  // namespace cuda
}  // namespace hb
