// The training loop: one native call per step, the next batch read and transformed while
// it runs, hooks after each step, checkpoints as the RunConfig says (and at the end),
// progress shown. A step that fails with HB_ERR_NAN (the loss check) stopped before any
// update was applied, and the error says so.
import { PreparedBatch, settleDecisions, StepResult } from '../graph/compiled_step';
import type { Batch } from './input';
import type { BuiltModel } from './model_builder';
import { TrainingProgress } from './progress';
import { RunConfig } from './run_config';
import { TrainHook } from './specs';

/**
 * Why a training run ended; `leftover` is a batch read but not trained on. 'evaluate':
 * paused for an evaluation (evaluateWhen said so, on this rank or, under a job, another).
 */
export interface TrainStop {
  reason: 'inputEnd' | 'stopAt' | 'hook' | 'evaluate';
  leftover?: Batch;
}

/** What the loop needs of its Estimator. */
export interface TrainLoopHost {
  readonly config: RunConfig;
  /** Where progress and log lines go (rank 0's config.log under a job, else nothing). */
  readonly log: (line: string) => void;
  /** Whether this rank shows progress (rank 0 under a job). */
  readonly chief: boolean;
  /**
   * The run's progress (one bar over every training segment of a train or
   * trainAndEvaluate call); the loop begins and pauses it, its owner stops it.
   */
  readonly progress: TrainingProgress;
  /** Whether checkpoints are saved at all (a modelDir). */
  readonly savesCheckpoints: boolean;
  globalStep(): number;
  /** Called after each successful step. */
  advance(): void;
  /** `delta`: a delta checkpoint (RunConfig.saveDeltaSteps) rather than a full one. */
  saveCheckpoint(delta?: boolean): Promise<string | undefined>;
}

/**
 * After a step: pause for an evaluation (trainAndEvaluate's throttle). Under a job the
 * ranks agree on it in the next step's first exchange and all pause after that step.
 */
export type EvaluateWhen = () => boolean;

export async function runTrainLoop(
  host: TrainLoopHost,
  model: BuiltModel,
  first: Batch,
  batches: AsyncIterator<Batch>,
  stopAt: number,
  hooks: readonly TrainHook[],
  evaluateWhen?: EvaluateWhen,
): Promise<TrainStop> {
  const { config } = host;
  if (host.globalStep() >= stopAt) return { reason: 'stopAt', leftover: first };
  const inJob = model.step.inJob;
  const { progress } = host;
  progress.begin(host.globalStep(), stopAt);
  let lastSave = Date.now();
  let lastSavedStep = host.globalStep();
  let lastSaveWasDelta = false;
  let stop: TrainStop = { reason: 'stopAt' };
  // Under a job, what this rank asks of all in the next step's first exchange.
  const requests = { evaluate: false, stop: false, save: false };
  let failed = false;
  try {
    let current: { raw: Batch; prepared: PreparedBatch } | undefined = { raw: first, prepared: await model.step.prepare(first) };
    while (current && host.globalStep() < stopAt) {
      const step = host.globalStep() + 1;
      const running: Promise<StepResult> = model.step.run(current.prepared, { ...requests, globalStep: step - 1 }).catch((error: Error & { code?: string }) => {
        if (error.code === 'HB_ERR_PEER_STOPPED') throw error;
        // HB_ERR_NAN: the loss check (before any update) or an update's gradient check
        // (before that variable changed); the message says which.
        error.message = error.code === 'HB_ERR_NAN' ? `training stopped at step ${step}: ${error.message}` : `training step ${step}: ${error.message}`;
        throw error;
      });
      // Read and transform the next batch while the native step runs.
      const upcoming = (async (): Promise<{ raw: Batch; prepared: PreparedBatch } | undefined> => {
        if (step >= stopAt) return undefined;
        const n = await batches.next();
        if (n.done) return undefined;
        return { raw: n.value, prepared: await model.step.prepare(n.value) };
      })();
      const [result, next] = await Promise.allSettled([running, upcoming]);
      if (result.status === 'rejected') {
        // Another rank's input ended: every rank stops here, this step untrained.
        if ((result.reason as { code?: string }).code === 'HB_ERR_PEER_STOPPED') {
          stop = { reason: 'inputEnd' };
          break;
        }
        throw result.reason;
      }
      // The step ran: it counts, whatever happens to the next batch.
      host.advance();
      if (next.status === 'rejected') {
        // The other ranks will wait in the next step: they fail with this rank's reason,
        // heard before this error goes up (the process may end with it). Unless they
        // agreed to stop after this step: then no exchange of theirs may come for a while,
        // and the announcement waits for one on its own.
        const told = model.step.tellPeersOfFailure(`the next batch of rank ${model.graph.world.rank} failed: ${(next.reason as Error)?.message}`);
        if (!result.value.agreed?.stop) await told;
        throw next.reason;
      }
      const loss = (result.value.outputs[0] as Float32Array)[0];
      progress.step(step, loss, result.value.batchSize);
      let hookStop = false;
      for (const hook of hooks) {
        if ((await hook.afterRun?.({ globalStep: step, loss, batchSize: result.value.batchSize, nativeMs: result.value.nativeMs })) === false) hookStop = true;
      }
      const byStep = config.saveCheckpointsSteps;
      const timed = byStep === undefined && (config.saveCheckpointsSecs ?? 0) > 0 && Date.now() - lastSave >= (config.saveCheckpointsSecs as number) * 1000;
      // Step-counted saves are the same on every rank; a clock, a hook or the throttle is
      // one rank's alone, and under a job takes effect once the ranks agreed on it.
      const now = settleDecisions({ evaluate: evaluateWhen?.() ?? false, stop: hookStop, save: timed }, result.value.agreed, requests);
      const due = byStep !== undefined ? byStep > 0 && step % byStep === 0 : now.save;
      const pause: TrainStop['reason'] | undefined = now.stop ? 'hook' : now.evaluate ? 'evaluate' : undefined;
      // Deltas are counted in steps too, so every rank of a job saves the same ones.
      const deltaDue = !due && config.saveDeltaSteps !== undefined && step % config.saveDeltaSteps === 0;
      if ((due || deltaDue) && host.savesCheckpoints) {
        progress.line(`saved ${await host.saveCheckpoint(deltaDue)}`);
        if (due) lastSave = Date.now();
        lastSavedStep = step;
        lastSaveWasDelta = deltaDue;
      }
      if (pause) {
        stop = { reason: pause, leftover: next.value?.raw };
        break;
      }
      if (!next.value && host.globalStep() < stopAt) {
        stop = { reason: 'inputEnd' };
        // The other ranks are about to run the next step: it stops them too.
        await model.step.announceStop();
      }
      current = next.value;
    }
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    progress.pause();
    for (const hook of hooks) await hook.end?.({ globalStep: host.globalStep() });
    // Under a job a save is collective: after a failure on this rank the others are not
    // saving with it (each rank saved what the last agreed save wrote).
    // The end of training saves a full checkpoint (in place of a delta saved at its last step).
    const save = host.savesCheckpoints && (host.globalStep() !== lastSavedStep || lastSaveWasDelta) && !(failed && inJob);
    if (save) host.log(`saved ${await host.saveCheckpoint()}`);
  }
  return stop;
}
