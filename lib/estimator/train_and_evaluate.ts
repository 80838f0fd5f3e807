// tf.estimator.train_and_evaluate (local): train, and evaluate every evalEveryNIter
// steps (HybridBackend's option) or once throttleSecs have passed since the last
// evaluation, and once more at the end. Training reads one pass of the train input,
// as TF does when its input_fn ends, unless maxSteps comes first.
import { Estimator, EvaluateResult } from './estimator';
import { Batch, batchesOf } from './input';
import { EvalSpec, TrainSpec } from './specs';
import { shownValue } from '../shown_value';

export async function trainAndEvaluate(
  estimator: Estimator,
  trainSpec: TrainSpec,
  evalSpec: EvalSpec,
  options: { evalEveryNIter?: number } = {},
): Promise<EvaluateResult> {
  if (!(estimator instanceof Estimator)) throw new TypeError('trainAndEvaluate: estimator must be an hb.estimator.Estimator');
  if (!(trainSpec instanceof TrainSpec)) throw new TypeError('trainAndEvaluate: trainSpec must be an hb.estimator.TrainSpec');
  if (!(evalSpec instanceof EvalSpec)) throw new TypeError('trainAndEvaluate: evalSpec must be an hb.estimator.EvalSpec');
  const every = options.evalEveryNIter;
  if (every !== undefined && (!Number.isSafeInteger(every) || every < 1)) {
    const message = `trainAndEvaluate: evalEveryNIter must be an integer >= 1, got ${shownValue(every)}`;
    throw typeof every === 'number' ? new RangeError(message) : new TypeError(message);
  }
  // An evaluation at the step the last one was at would only repeat it (training paused
  // for it, then found its input ended): the final evaluation reuses it.
  let last: EvaluateResult | undefined;
  const evaluate = async () => {
    if (last !== undefined && last.globalStep === estimator.globalStep) return last;
    last = await estimator.evaluate(evalSpec.inputFn, { steps: evalSpec.steps, name: evalSpec.name });
    return last;
  };
  const input = batchesOf(trainSpec.inputFn, 'trainAndEvaluate');
  // A batch read but not trained on (training paused for an evaluation) goes first next time.
  let leftover: Batch | undefined;
  const batches: AsyncIterator<Batch> = {
    next: () => {
      if (leftover === undefined) return input.next();
      const value = leftover;
      leftover = undefined;
      return Promise.resolve({ done: false, value });
    },
  };
  // maxSteps counts from the restored global step: a finished job rerun trains nothing.
  await estimator.restoreGlobalStep();
  const started = Date.now();
  let lastEval = Date.now();
  const reachedMax = () => trainSpec.maxSteps !== undefined && estimator.globalStep >= trainSpec.maxSteps;
  // One progress bar for the whole run, counting to maxSteps; evaluations print above it.
  return estimator.withProgress(trainSpec.maxSteps, async () => {
    try {
      for (;;) {
        // The throttle, checked after each step (under a job the ranks agree on it first).
        const evaluateWhen = every !== undefined ? undefined : () => {
          const now = Date.now();
          return now - lastEval >= evalSpec.throttleSecs * 1000 && now - started >= evalSpec.startDelaySecs * 1000;
        };
        const stop = await estimator.trainOn(batches, {
          // `every` more steps, up to maxSteps, counted once the restore has settled the
          // step (none when a restored step is already past maxSteps: a finished job rerun).
          maxSteps: trainSpec.maxSteps,
          steps: every,
          hooks: trainSpec.hooks,
          evaluateWhen,
        });
        leftover = stop.leftover;
        // The input ended, maxSteps was reached, or a user hook asked to stop: the final
        // evaluation below closes the run.
        if (stop.reason === 'inputEnd' || reachedMax() || stop.reason === 'hook') break;
        await evaluate();
        lastEval = Date.now();
      }
    } finally {
      await input.return(undefined);
    }
    return evaluate();
  });
}
