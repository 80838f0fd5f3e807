// The training loop: one native call per step, the next batch read and transformed while
// it runs, hooks after each step, checkpoints as the RunConfig says (and at the end),
// progress shown. A step that fails with HB_ERR_NAN (the loss check) stopped before any
// update was applied, and the error says so.
import type { PreparedBatch, StepResult } from '../graph/compiled_step';
import type { Batch } from './input';
import type { BuiltModel } from './model_builder';
import { TrainingProgress } from './progress';
import { RunConfig } from './run_config';
import { TrainHook } from './specs';

/** Why a training run ended; `leftover` is a batch read but not trained on. */
export interface TrainStop {
  reason: 'inputEnd' | 'stopAt' | 'hook';
  leftover?: Batch;
}

/** What the loop needs of its Estimator. */
export interface TrainLoopHost {
  readonly config: RunConfig;
  /** Whether checkpoints are saved at all (a modelDir). */
  readonly savesCheckpoints: boolean;
  globalStep(): number;
  /** Called after each successful step. */
  advance(): void;
  saveCheckpoint(): Promise<string | undefined>;
}

export async function runTrainLoop(
  host: TrainLoopHost,
  model: BuiltModel,
  first: Batch,
  batches: AsyncIterator<Batch>,
  stopAt: number,
  hooks: readonly TrainHook[],
): Promise<TrainStop> {
  const { config } = host;
  if (host.globalStep() >= stopAt) return { reason: 'stopAt', leftover: first };
  const progress = new TrainingProgress(config.log, config.logStepCountSteps, config.progressBar, host.globalStep(), Number.isFinite(stopAt) ? stopAt : undefined);
  let lastSave = Date.now();
  let lastSavedStep = host.globalStep();
  let stop: TrainStop = { reason: 'stopAt' };
  try {
    let current: { raw: Batch; prepared: PreparedBatch } | undefined = { raw: first, prepared: await model.step.prepare(first) };
    while (current && host.globalStep() < stopAt) {
      const step = host.globalStep() + 1;
      const running: Promise<StepResult> = model.step.run(current.prepared).catch((error: Error & { code?: string }) => {
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
      if (result.status === 'rejected') throw result.reason;
      if (next.status === 'rejected') throw next.reason;
      host.advance();
      const loss = (result.value.outputs[0] as Float32Array)[0];
      progress.step(step, loss, result.value.batchSize);
      let hookStop = false;
      for (const hook of hooks) {
        if ((await hook.afterRun?.({ globalStep: step, loss, batchSize: result.value.batchSize, nativeMs: result.value.nativeMs })) === false) hookStop = true;
      }
      const byStep = config.saveCheckpointsSteps;
      const due = byStep !== undefined
        ? byStep > 0 && step % byStep === 0
        : (config.saveCheckpointsSecs ?? 0) > 0 && Date.now() - lastSave >= (config.saveCheckpointsSecs as number) * 1000;
      if (due && host.savesCheckpoints) {
        progress.line(`saved ${await host.saveCheckpoint()}`);
        lastSave = Date.now();
        lastSavedStep = step;
      }
      if (hookStop) {
        stop = { reason: 'hook', leftover: next.value?.raw };
        break;
      }
      if (!next.value && host.globalStep() < stopAt) stop = { reason: 'inputEnd' };
      current = next.value;
    }
  } finally {
    progress.stop();
    for (const hook of hooks) await hook.end?.({ globalStep: host.globalStep() });
    if (host.savesCheckpoints && host.globalStep() !== lastSavedStep) config.log(`saved ${await host.saveCheckpoint()}`);
  }
  return stop;
}
