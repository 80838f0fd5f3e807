#include "native/core/device.h"

#include <cstdlib>

#include "cuda/cuda_backend.h"
#include "native/core/status.h"

namespace hb {

std::string Device::str() const {
  return isCuda() ? "cuda:" + std::to_string(index) : std::string("cpu");
}

Device parseUsableDevice(const std::string& spec, const char* argument) {
  if (spec == "cpu") return Device::cpu();
  if (spec == "cuda-emulated") {
    HB_CHECK_CODE(cuda::emulated(), Device, argument,
                  ": 'cuda-emulated' requested, but this build of hb-ts does not emulate CUDA "
                  "(build it with HB_CUDA_EMULATE=ON: HB_CUDA_EMULATE=ON npm run build:addon)");
    return Device::cuda(0);
  }
  int index = 0;
  if (spec.rfind("cuda:", 0) == 0) {
    const std::string digits = spec.substr(5);
    HB_CHECK(!digits.empty() && digits.size() < 6 &&
                 digits.find_first_not_of("0123456789") == std::string::npos,
             argument, ": '", spec, "' is not a device (expected 'cpu', 'cuda', 'cuda:N' or 'cuda-emulated')");
    index = std::atoi(digits.c_str());
  } else if (spec != "cuda") {
    fail(argument, ": '", spec, "' is not a device (expected 'cpu', 'cuda', 'cuda:N' or 'cuda-emulated')");
  }
  HB_CHECK_CODE(cuda::compiled(), Device, argument, ": '", spec,
           "' requested, but this build of hb-ts has no CUDA support "
           "(it was built with HB_CUDA=OFF, without nvcc, or by node-gyp)");
  std::string why;
  const int count = cuda::deviceCount(&why);
  HB_CHECK_CODE(count > 0, Device, argument, ": '", spec, "' requested, but no CUDA device is usable: ", why);
  HB_CHECK_CODE(index < count, Device, argument, ": '", spec, "' requested, but only ", count,
           " CUDA device(s) exist");
  return Device::cuda(index);
}

}  // namespace hb
