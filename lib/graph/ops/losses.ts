// tf.losses (TF1): sigmoid cross entropy and mean squared error, reduced as
// SUM_BY_NONZERO_WEIGHTS (a mean over the batch when no weights are given).
import { BATCH, shapeString, SymbolicTensor } from '../graph';
import { labelsMissing } from '../symbolic_features';
import { applyOp, defineOp } from '../op_registry';
import { meanOfAll, reshape } from './array';
import { squaredDifference } from './elementwise';
import { constant } from './sources';
import { fixedSize, sameShape } from './shapes';
import { checkOptionKeys } from '../../option_keys';

export interface LossOptions {
  /** A number, or per-example / per-element weights broadcastable to the losses (TF's rule). */
  weights?: SymbolicTensor | number;
  /** 'sumByNonzeroWeights' (default, TF1's) or 'none' for the unreduced values. */
  reduction?: 'sumByNonzeroWeights' | 'none';
  name?: string;
}

const LOSS_OPTION_KEYS = ['weights', 'reduction', 'name'] as const;

/** labels shaped like `like` when they hold the same values per example ([batch] vs [batch, 1]). */
function alignLabels(labels: SymbolicTensor, like: SymbolicTensor, name: string): SymbolicTensor {
  if (labels === undefined) throw labelsMissing(name);
  if (!(labels instanceof SymbolicTensor)) throw new TypeError(`${name}: labels must be a symbolic tensor (the modelFn's labels)`);
  if (sameShape(labels.shape, like.shape)) return labels;
  const bothBatched = labels.shape.includes(BATCH) && like.shape.includes(BATCH);
  if (bothBatched && fixedSize(labels.shape) === fixedSize(like.shape)) return reshape(labels, like.shape.map((d) => (d === BATCH ? -1 : d)));
  throw new Error(`${name}: labels ${shapeString(labels.shape)} and ${shapeString(like.shape)} do not match`);
}

const sigmoidXentDef = defineOp({
  name: 'sigmoid_cross_entropy',
  kernel: 'sigmoid_xent',
  shape: ([, logits]) => logits.shape,
  grad: (node, dy) => [null, applyOp(sigmoidXentGradDef, [dy, node.inputs[0], node.inputs[1]], {})],
});

const sigmoidXentGradDef = defineOp({
  name: 'sigmoid_cross_entropy_grad',
  kernel: 'sigmoid_xent_grad',
  shape: (inputs) => inputs[2].shape,
});

function reduceLoss(values: SymbolicTensor, options: LossOptions, name: string): SymbolicTensor {
  const reduction = options.reduction ?? 'sumByNonzeroWeights';
  if (reduction === 'none') return values;
  if (reduction !== 'sumByNonzeroWeights') {
    const message = `${name}: reduction must be 'sumByNonzeroWeights' or 'none'`;
    throw typeof reduction === 'string' ? new Error(message) : new TypeError(message);
  }
  const w = options.weights;
  if (w === undefined) return meanOfAll(values, name);
  if (typeof w === 'number') {
    if (!Number.isFinite(w)) throw new RangeError(`${name}: weights must be a finite number or a symbolic tensor`);
    return meanOfAll(values, name, constant(values.graph, [w], [], `${name}/weights`));
  }
  if (!(w instanceof SymbolicTensor)) throw new TypeError(`${name}: weights must be a finite number or a symbolic tensor`);
  // [batch] weights against [batch, 1] losses hold one value per example: line them up;
  // anything else must broadcast to the losses (meanOfAll broadcasts it).
  const perExample = w.shape.includes(BATCH) && fixedSize(w.shape) === fixedSize(values.shape);
  return meanOfAll(values, name, perExample ? alignLabels(w, values, `${name}: weights`) : w);
}

export function sigmoidCrossEntropy(labels: SymbolicTensor, logits: SymbolicTensor, options: LossOptions = {}): SymbolicTensor {
  checkOptionKeys(options, LOSS_OPTION_KEYS, 'losses.sigmoidCrossEntropy');
  const name = options.name ?? 'sigmoid_cross_entropy_loss';
  const z = alignLabels(labels, logits, name);
  const values = applyOp(sigmoidXentDef, [z, logits], {});
  return reduceLoss(values, options, name);
}

export function meanSquaredError(labels: SymbolicTensor, predictions: SymbolicTensor, options: LossOptions = {}): SymbolicTensor {
  checkOptionKeys(options, LOSS_OPTION_KEYS, 'losses.meanSquaredError');
  const name = options.name ?? 'mean_squared_error';
  const y = alignLabels(labels, predictions, name);
  return reduceLoss(squaredDifference(predictions, y), options, name);
}
