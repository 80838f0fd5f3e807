// Where a compiled step's time goes: while a profile is on, every plan run records the
// time of each of its kernel steps, by kernel and by phase of the step (the part of the
// training step the graph node belongs to). hb.profile (lib/profile.ts) turns it on
// around the user's function and reads it back. Off, it costs one relaxed atomic load
// per plan run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hb {

enum class StepPhase : int32_t { Forward = 0, Backward = 1, Update = 2, Exchange = 3 };
constexpr int32_t kStepPhaseCount = 4;
extern const char* const kStepPhaseNames[kStepPhaseCount];  // "forward", ...

struct KernelTime {
  std::string kernel;
  StepPhase phase = StepPhase::Forward;
  int64_t calls = 0;
  double ms = 0;
  int64_t besideOthers = 0;  // calls that ran beside other steps of their plan (their times overlap)
};

struct StepProfile {
  std::vector<KernelTime> kernels;  // one entry per (kernel, phase) seen
  int64_t planRuns = 0;
  double planMs = 0;  // the runs' whole native time (kernels, copies, fetches)
};

bool stepProfileOn();
// Starts a profile; false when one is already on (profiles do not nest).
bool startStepProfile();
// Ends the profile on and returns what it recorded (empty when none was on).
StepProfile stopStepProfile();

void recordKernelTime(const std::string& kernel, StepPhase phase, double ms, bool besideOthers = false);
void recordPlanRun(double ms);

}  // namespace hb
