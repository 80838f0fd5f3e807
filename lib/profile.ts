// hb.profile: where the compiled steps' time goes, by phase and by kernel, as
// tfjs's tf.profile reports a function's kernels. The native side times each kernel step
// of every plan run while a profile is on (native/exec/step_profile.h); time outside the
// plans (feature transforms, batching, JS, eager ops) is the wall time left over.
import { native } from './native';
import type { StepPhase } from './graph/plan_spec';

/** A step's phase in a profile: its graph node's, or 'exchange' for a step that talks to other ranks. */
export type ProfilePhase = StepPhase | 'exchange';

export interface KernelProfile {
  kernel: string;
  phase: ProfilePhase;
  calls: number;
  ms: number;
  /**
   * Calls that ran side by side with other steps of their plan, each on a thread of its
   * own (on the CPU, consecutive lookups of different tables, and their backward and
   * update): their times overlap, so the kernels' times (and the phases') can add up to
   * more than the wall time they took.
   */
  besideOthers: number;
}

export interface ProfileReport {
  /** The function's wall time. */
  wallMs: number;
  /** Compiled steps (plan runs) that ran while it did, and their native time. */
  planRuns: number;
  planMs: number;
  /** Kernel time by phase (sums of `kernels`; steps run side by side count each their own time). */
  phases: Record<ProfilePhase, number>;
  /**
   * Wall time not spent in the plans' native runs: JS, feature transforms, input, eager
   * ops, waiting (work that overlapped a run, such as the next batch's transforms, is not in it).
   */
  outsidePlansMs: number;
  /** One entry per kernel and phase, the most time first. */
  kernels: KernelProfile[];
}

/**
 * Runs `fn` (e.g. `() => estimator.train(input, { steps: 20 })`) and reports the time of
 * each kernel of the compiled steps that ran meanwhile. The profile is the process's: it
 * counts every plan run while it is on (worker threads' too), and profiles do not nest,
 * not even from two threads. A step still running when `fn` resolves is counted in part.
 * On a GPU each profiled kernel is waited for, so a profiled GPU step is slower.
 */
export async function profile<T>(fn: () => T | Promise<T>): Promise<ProfileReport & { result: T }> {
  if (typeof fn !== 'function') throw new TypeError('profile: expected a function to run');
  if (!native.profileStart()) throw new Error('profile: a profile is already running (profiles do not nest)');
  const started = process.hrtime.bigint();
  let result: T;
  let recorded: ReturnType<typeof native.profileStop>;
  try {
    result = await fn();
  } finally {
    // Stopped on failure too, so the next profile can start.
    recorded = native.profileStop();
  }
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  const phases: Record<ProfilePhase, number> = { forward: 0, backward: 0, update: 0, exchange: 0 };
  for (const k of recorded.kernels) phases[k.phase] += k.ms;
  return {
    result,
    wallMs,
    planRuns: recorded.planRuns,
    planMs: recorded.planMs,
    phases,
    outsidePlansMs: Math.max(0, wallMs - recorded.planMs),
    kernels: [...recorded.kernels].sort((a, b) => b.ms - a.ms),
  };
}
