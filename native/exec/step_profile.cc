#include "native/exec/step_profile.h"

#include <atomic>
#include <map>
#include <mutex>
#include <utility>

namespace hb {

const char* const kStepPhaseNames[kStepPhaseCount] = {"forward", "backward", "update", "exchange"};

namespace {

struct Recorder {
  std::atomic<bool> on{false};
  std::mutex mutex;
  std::map<std::pair<std::string, int32_t>, KernelTime> kernels;
  int64_t planRuns = 0;
  double planMs = 0;
};

Recorder& recorder() {
  static auto* r = new Recorder();  // outlives the executor threads that record into it
  return *r;
}

}  // namespace

bool stepProfileOn() { return recorder().on.load(std::memory_order_relaxed); }

bool startStepProfile() {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.on.load()) return false;
  r.kernels.clear();
  r.planRuns = 0;
  r.planMs = 0;
  r.on.store(true);
  return true;
}

StepProfile stopStepProfile() {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  StepProfile profile;
  if (!r.on.load()) return profile;
  r.on.store(false);
  for (auto& [key, time] : r.kernels) profile.kernels.push_back(std::move(time));
  profile.planRuns = r.planRuns;
  profile.planMs = r.planMs;
  r.kernels.clear();
  return profile;
}

void recordKernelTime(const std::string& kernel, StepPhase phase, double ms, bool besideOthers) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.on.load()) return;
  KernelTime& time = r.kernels[{kernel, int32_t(phase)}];
  time.kernel = kernel;
  time.phase = phase;
  time.calls += 1;
  time.ms += ms;
  time.besideOthers += besideOthers;
}

void recordPlanRun(double ms) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.on.load()) return;
  r.planRuns += 1;
  r.planMs += ms;
}

}  // namespace hb
