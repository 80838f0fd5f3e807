// The emulated CUDA device's controls, for tests: its schedule and poisoning (the race
// checks), its counters, and the self-test kernels of cuda/emulation/self_test.cc. Every
// function throws in builds made without HB_CUDA_EMULATE=ON.
#include "native/binding/arguments.h"
#include "native/binding/exports.h"
#include "native/core/status.h"

#if defined(HB_CUDA_EMULATED)
#include "cuda/emulation/emulation_options.h"
#include "cuda/emulation/self_test.h"
#endif

namespace hb {
namespace binding {

namespace {

#if defined(HB_CUDA_EMULATED)
// cudaEmulation() -> { scheduleSeed, poison, launches, blocks, threads, hostWaits, deferred }
Napi::Value cudaEmulation(const Napi::CallbackInfo& info) {
  const cuda_emulation::EmulationOptions options = cuda_emulation::emulationOptions();
  const cuda_emulation::EmulationCounters counters = cuda_emulation::emulationCounters();
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("scheduleSeed", double(options.scheduleSeed));
  out.Set("poison", options.poison);
  out.Set("launches", double(counters.launches));
  out.Set("blocks", double(counters.blocks));
  out.Set("threads", double(counters.threads));
  out.Set("hostWaits", double(counters.hostWaits));
  out.Set("deferred", options.deferred);
  return out;
}

// setCudaEmulation({ scheduleSeed, poison, deferred? }) (deferred: kept where not given)
Napi::Value setCudaEmulation(const Napi::CallbackInfo& info) {
  HB_CHECK(info.Length() == 1 && info[0].IsObject(), "setCudaEmulation: expected { scheduleSeed, poison, deferred? }");
  const Napi::Object spec = info[0].As<Napi::Object>();
  const double seed = numberArgument(spec.Get("scheduleSeed"), "setCudaEmulation: scheduleSeed");
  HB_CHECK(seed >= 0 && seed <= 9007199254740991.0 && seed == double(uint64_t(seed)),
           "setCudaEmulation: scheduleSeed must be a whole number >= 0, got ", seed);
  const Napi::Value poison = spec.Get("poison");
  HB_CHECK(poison.IsBoolean(), "setCudaEmulation: poison must be a boolean");
  cuda_emulation::EmulationOptions next = cuda_emulation::emulationOptions();
  next.scheduleSeed = uint64_t(seed);
  next.poison = poison.As<Napi::Boolean>();
  const Napi::Value deferred = spec.Get("deferred");
  if (!deferred.IsUndefined()) {
    HB_CHECK(deferred.IsBoolean(), "setCudaEmulation: deferred must be a boolean");
    next.deferred = deferred.As<Napi::Boolean>();
  }
  cuda_emulation::setEmulationOptions(next);
  return info.Env().Undefined();
}

// cudaEmulationSelfTest(name) -> { values: number[], error: string }
Napi::Value cudaEmulationSelfTest(const Napi::CallbackInfo& info) {
  const std::string name = stringArgument(info[0], "cudaEmulationSelfTest: name");
  cuda_emulation::SelfTestResult result;
  try {
    result = cuda_emulation::runSelfTest(name);
  } catch (const std::invalid_argument& e) {
    fail("cudaEmulationSelfTest: ", e.what());
  }
  Napi::Env env = info.Env();
  Napi::Array values = Napi::Array::New(env, result.values.size());
  for (size_t i = 0; i < result.values.size(); ++i) values.Set(uint32_t(i), result.values[i]);
  Napi::Object out = Napi::Object::New(env);
  out.Set("values", values);
  out.Set("error", result.error);
  return out;
}
#else
[[noreturn]] void notEmulated(const char* what) {
  fail(what, ": this build of hb-ts does not emulate CUDA (build it with HB_CUDA_EMULATE=ON)");
}
Napi::Value cudaEmulation(const Napi::CallbackInfo&) { notEmulated("cudaEmulation"); }
Napi::Value setCudaEmulation(const Napi::CallbackInfo&) { notEmulated("setCudaEmulation"); }
Napi::Value cudaEmulationSelfTest(const Napi::CallbackInfo&) { notEmulated("cudaEmulationSelfTest"); }
#endif

}  // namespace

void exportCudaEmulation(Napi::Env env, Napi::Object exports) {
  exports.Set("cudaEmulation", Napi::Function::New(env, guarded<cudaEmulation>, "cudaEmulation"));
  exports.Set("setCudaEmulation", Napi::Function::New(env, guarded<setCudaEmulation>, "setCudaEmulation"));
  exports.Set("cudaEmulationSelfTest", Napi::Function::New(env, guarded<cudaEmulationSelfTest>, "cudaEmulationSelfTest"));
}

}  // namespace binding
}  // namespace hb
