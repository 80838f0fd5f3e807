// tf.estimator.train_and_evaluate (local): train, and evaluate every evalEveryNIter
// steps (HybridBackend's option) or once throttleSecs have passed since the last
// evaluation, and once more at the end. Training reads one pass of the train input,
// as TF does when its input_fn ends, unless maxSteps comes first.
import { Estimator, EvaluateResult } from './estimator';
import { batchesOf } from './input';
import { EvalSpec, TrainSpec } from './specs';

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
  if (every !== undefined && (!Number.isSafeInteger(every) || every < 1)) throw new RangeError(`trainAndEvaluate: evalEveryNIter must be an integer >= 1, got ${String(every)}`);
  const evaluate = () => estimator.evaluate(evalSpec.inputFn, { steps: evalSpec.steps, name: evalSpec.name });
  const batches = batchesOf(trainSpec.inputFn, 'trainAndEvaluate');
  const started = Date.now();
  let lastEval = Date.now();
  let result: EvaluateResult | undefined;
  let inputLeft = true;
  try {
  while (inputLeft && (trainSpec.maxSteps === undefined || estimator.globalStep < trainSpec.maxSteps)) {
    if (every !== undefined) {
      inputLeft = await estimator.trainOn(batches, { maxSteps: trainSpec.maxSteps, steps: every, hooks: [...trainSpec.hooks] });
      if (inputLeft && (trainSpec.maxSteps === undefined || estimator.globalStep < trainSpec.maxSteps)) result = await evaluate();
      continue;
    }
    // Time-driven: train until throttleSecs have passed, then evaluate.
    let due = false;
    const timer = {
      afterRun: () => {
        const now = Date.now();
        due = now - lastEval >= evalSpec.throttleSecs * 1000 && now - started >= evalSpec.startDelaySecs * 1000;
        return due ? false : undefined;
      },
    };
    inputLeft = await estimator.trainOn(batches, { maxSteps: trainSpec.maxSteps, hooks: [...trainSpec.hooks, timer] });
    if (due && inputLeft) {
      result = await evaluate();
      lastEval = Date.now();
    }
  }
  } finally {
    await batches.return(undefined);
  }
  result = await evaluate();
  return result;
}
