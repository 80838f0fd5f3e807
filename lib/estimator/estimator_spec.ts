// tf.estimator.EstimatorSpec: what a modelFn returns for one mode.
import { SymbolicTensor } from '../graph/graph';
import { MetricOp } from '../metrics/metric_op';
import { TrainOp } from '../train/train_op';
import { Mode, ModeKeys } from './mode_keys';
import { shownValue } from '../shown_value';

export interface EstimatorSpecInit {
  mode: Mode;
  loss?: SymbolicTensor;
  /** One minimize() result, or several (e.g. one optimizer for tables, one for the MLPs). */
  trainOp?: TrainOp | TrainOp[];
  predictions?: SymbolicTensor | Record<string, SymbolicTensor>;
  evalMetricOps?: Record<string, MetricOp>;
}

export interface EstimatorSpec {
  readonly mode: Mode;
  readonly loss?: SymbolicTensor;
  readonly trainOps: readonly TrainOp[];
  readonly predictions?: SymbolicTensor | Record<string, SymbolicTensor>;
  readonly evalMetricOps: Readonly<Record<string, MetricOp>>;
}

/** Checks the spec for its mode, as TF does: TRAIN needs loss and trainOp, EVAL loss, PREDICT predictions. */
export function EstimatorSpec(init: EstimatorSpecInit): EstimatorSpec {
  if (init === null || typeof init !== 'object') throw new TypeError('EstimatorSpec: expected an object');
  const modes = Object.values(ModeKeys) as string[];
  if (!modes.includes(init.mode)) {
    const message = `EstimatorSpec: mode must be one of ${modes.join(', ')} (hb.estimator.ModeKeys), got ${shownValue(init.mode)}`;
    throw typeof init.mode === 'string' ? new Error(message) : new TypeError(message);
  }
  if (init.loss !== undefined && !(init.loss instanceof SymbolicTensor)) throw new TypeError('EstimatorSpec: loss must be a symbolic tensor');
  const trainOps = init.trainOp === undefined ? [] : Array.isArray(init.trainOp) ? init.trainOp : [init.trainOp];
  trainOps.forEach((t) => {
    if (!(t instanceof TrainOp)) throw new TypeError('EstimatorSpec: trainOp must be the result of optimizer.minimize(loss)');
  });
  if (init.mode === ModeKeys.TRAIN) {
    if (!init.loss) throw new Error('EstimatorSpec: a TRAIN spec needs a loss');
    if (trainOps.length === 0) throw new Error('EstimatorSpec: a TRAIN spec needs a trainOp (optimizer.minimize(loss))');
  }
  if (init.mode === ModeKeys.EVAL && !init.loss) throw new Error('EstimatorSpec: an EVAL spec needs a loss');
  if (init.mode === ModeKeys.PREDICT && !init.predictions) throw new Error('EstimatorSpec: a PREDICT spec needs predictions');
  const metrics = init.evalMetricOps ?? {};
  for (const [k, m] of Object.entries(metrics)) {
    if (!(m instanceof MetricOp)) throw new TypeError(`EstimatorSpec: evalMetricOps.${k} must be a metric (hb.metrics.auc(...) inside the modelFn)`);
    if (k === 'loss' || k === 'globalStep') throw new Error(`EstimatorSpec: evalMetricOps.${k} would hide the evaluation's own ${k}`);
  }
  return Object.freeze({ mode: init.mode, loss: init.loss, trainOps, predictions: init.predictions, evalMetricOps: metrics });
}
