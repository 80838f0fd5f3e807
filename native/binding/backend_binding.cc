// hb.backend()'s native part, and device names checked for use (the current device is
// lib/backend.ts's: the addon has no global device).
#include "cuda/cuda_backend.h"
#include "native/binding/arguments.h"
#include "native/binding/exports.h"
#include "native/core/device.h"
#include "native/core/status.h"
#include "native/core/thread_pool.h"
#include "native/distribute/communicator.h"
#include "native/kernels/dot_interaction_cpu.h"
#include "native/kernels/embedding_lookup.h"
#include "native/kernels/random_fill.h"
#include "native/kernels/sgemm.h"

namespace hb {
namespace binding {

namespace {

Napi::Object libraryReport(Napi::Env env, const cuda::LibraryStatus& status) {
  Napi::Object report = Napi::Object::New(env);
  report.Set("loaded", status.loaded);
  if (status.loaded) report.Set("version", status.version);
  else report.Set("error", status.error);
  return report;
}

Napi::Value backendReport(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object report = Napi::Object::New(env);
  Napi::Object cudaReport = Napi::Object::New(env);
  cudaReport.Set("compiled", cuda::compiled());
  cudaReport.Set("emulated", cuda::emulated());
  std::string whyNone;
  const int count = cuda::deviceCount(&whyNone);
  cudaReport.Set("deviceCount", count);
  if (count == 0) cudaReport.Set("error", whyNone);
  report.Set("cuda", cudaReport);
  report.Set("nccl", libraryReport(env, cuda::ncclStatus()));
  report.Set("cublas", libraryReport(env, cuda::cublasStatus()));
  Napi::Object gloo = Napi::Object::New(env);
  gloo.Set("available", distribute::glooCompiled());
  if (!distribute::glooCompiled()) gloo.Set("error", distribute::glooUnavailableReason());
  report.Set("gloo", gloo);
  report.Set("threads", threadPoolSize());
  Napi::Object kernels = Napi::Object::New(env);
  kernels.Set("matmul", sgemmIsaName());
  kernels.Set("dotInteraction", dotInteractionIsaName());
  kernels.Set("randomFill", fillIsaName());
  kernels.Set("embeddingLookup", embeddingLookupIsaName());
  report.Set("cpuKernels", kernels);
  return report;
}

// 'cpu' or 'cuda:N' for a spec, after checking the device is usable.
Napi::Value resolveDevice(const Napi::CallbackInfo& info) {
  const std::string argument = info.Length() > 1 && info[1].IsString()
                                   ? info[1].As<Napi::String>().Utf8Value()
                                   : std::string("device");
  const std::string spec = stringArgument(info[0], argument.c_str());
  return Napi::String::New(info.Env(), parseUsableDevice(spec, argument.c_str()).str());
}

Napi::Value cudaDeviceName(const Napi::CallbackInfo& info) {
  const Device device = parseUsableDevice(stringArgument(info[0], "device"), "cudaDeviceName");
  HB_CHECK(device.isCuda(), "cudaDeviceName: '", device.str(), "' is not a CUDA device");
  return Napi::String::New(info.Env(), cuda::deviceName(device.index));
}

// cudaMemoryInfo(device) -> { free, total }: the device's memory now, in bytes.
Napi::Value cudaMemoryInfo(const Napi::CallbackInfo& info) {
  const Device device = parseUsableDevice(stringArgument(info[0], "device"), "cudaMemoryInfo");
  HB_CHECK(device.isCuda(), "cudaMemoryInfo: '", device.str(), "' is not a CUDA device");
  size_t freeBytes = 0, totalBytes = 0;
  cuda::memoryInfo(device.index, &freeBytes, &totalBytes);
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("free", Napi::Number::New(info.Env(), double(freeBytes)));
  out.Set("total", Napi::Number::New(info.Env(), double(totalBytes)));
  return out;
}

// measureFmaPeak(seconds) -> { isa, threads, gflops }: for benches, which print a GEMM's
// GFLOP/s as a share of it. Blocks the calling thread for about `seconds`.
Napi::Value measureFmaPeakBinding(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const double seconds = numberArgument(info[0], "measureFmaPeak: seconds");
  HB_CHECK(seconds > 0 && seconds <= 10, "measureFmaPeak: seconds must be in (0, 10], got ", seconds);
  const FmaPeak peak = measureFmaPeak(seconds);
  Napi::Object out = Napi::Object::New(env);
  out.Set("isa", peak.isa);
  out.Set("threads", Napi::Number::New(env, peak.threads));
  out.Set("gflops", Napi::Number::New(env, peak.gflops));
  return out;
}

}  // namespace

void exportBackend(Napi::Env env, Napi::Object exports) {
  exports.Set("cudaMemoryInfo", Napi::Function::New(env, guarded<cudaMemoryInfo>, "cudaMemoryInfo"));
  exports.Set("measureFmaPeak", Napi::Function::New(env, guarded<measureFmaPeakBinding>, "measureFmaPeak"));
  exports.Set("backendReport", Napi::Function::New(env, guarded<backendReport>, "backendReport"));
  exports.Set("resolveDevice", Napi::Function::New(env, guarded<resolveDevice>, "resolveDevice"));
  exports.Set("cudaDeviceName", Napi::Function::New(env, guarded<cudaDeviceName>, "cudaDeviceName"));
}

}  // namespace binding
}  // namespace hb
