// hb.metrics: tf.metrics' streaming metrics. Inside a modelFn (symbolic arguments) each
// returns a MetricOp for EstimatorSpec's evalMetricOps, accumulated natively batch after
// batch; with concrete values it computes at once and resolves to a number.
import { Graph, shapeString, SymbolicTensor } from '../graph/graph';
import { reshape } from '../graph/ops/array';
import { equal } from '../graph/ops/elementwise';
import { fixedSize, sameShape } from '../graph/ops/shapes';
import { labelsMissing } from '../graph/symbolic_features';
import { metricAccumulate } from '../graph/ops/metric_accumulate';
import { constant } from '../graph/ops/sources';
import { zeros } from '../initializers/initializers';
import { isTypedArray } from '../tensor/dtype';
import { runKernel } from '../tensor/run_kernel';
import { Tensor, tensor } from '../tensor/tensor';
import { Variable, variable } from '../tensor/variable';
import { aucFromCounts, AucCurve, AucSummation, aucThresholds } from './auc_formula';
import { MetricOp } from './metric_op';
import { shownValue } from '../shown_value';
import { checkOptionKeys } from '../option_keys';

export { MetricOp } from './metric_op';
export { aucThresholds } from './auc_formula';

type MetricInput = SymbolicTensor | Tensor | Float32Array | Float64Array | Int32Array | number[];

/** A metric's state, beside the graph's other values (its plan runs on graph.device). */
function accumulator(graph: Graph, name: string, shape: number[]): Variable {
  return variable(zeros(), { name, shape, trainable: false, device: graph.device });
}

/** Labels shaped like predictions when both hold the same values per example. */
function aligned(labels: SymbolicTensor, like: SymbolicTensor, what: string): SymbolicTensor {
  if (sameShape(labels.shape, like.shape)) return labels;
  if (fixedSize(labels.shape) === fixedSize(like.shape) && labels.shape[0] === like.shape[0]) {
    return reshape(labels, like.shape.map((d) => (d < 0 ? -1 : d)));
  }
  throw new Error(`${what}: shapes ${shapeString(labels.shape)} and ${shapeString(like.shape)} do not match`);
}

async function concreteFloat32(value: MetricInput, what: string): Promise<Float32Array> {
  if (value instanceof Tensor) {
    const data = await value.data();
    if (!(data instanceof Float32Array) && value.dtype !== 'float32') return Float32Array.from(data as ArrayLike<number>);
    return data as Float32Array;
  }
  if (isTypedArray(value)) return value instanceof Float32Array ? value : Float32Array.from(value as ArrayLike<number>);
  if (Array.isArray(value)) return Float32Array.from(value as number[]);
  throw new TypeError(`${what} must be a tensor, a typed array or an array of numbers`);
}

async function accumulateNow(kernel: string, name: string, inputs: Float32Array[], outputShapes: number[][]): Promise<Float32Array[]> {
  // Concrete metrics are small host work: their tensors stay on the host.
  const out = await runKernel(kernel, inputs.map((x) => tensor(x, [x.length], undefined, { device: 'cpu' })), outputShapes, {}, name);
  return Promise.all(out.map(async (t) => (await t.data()) as Float32Array));
}

export interface AucOptions {
  weights?: MetricInput;
  numThresholds?: number;
  curve?: AucCurve;
  summationMethod?: AucSummation;
  name?: string;
}

/** tf.metrics.auc: TF's thresholds and confusion counts, trapezoidal area (ROC or PR). */
export function auc(labels: SymbolicTensor, predictions: SymbolicTensor, options?: AucOptions): MetricOp;
export function auc(labels: MetricInput, predictions: MetricInput, options?: AucOptions): Promise<number>;
export function auc(labels: MetricInput, predictions: MetricInput, options: AucOptions = {}): MetricOp | Promise<number> {
  checkOptionKeys(options, ['weights', 'numThresholds', 'curve', 'summationMethod', 'name'], 'metrics.auc');
  const name = options.name ?? 'auc';
  const numThresholds = options.numThresholds ?? 200;
  if (!Number.isSafeInteger(numThresholds) || numThresholds < 2) {
    const message = `${name}: numThresholds must be an integer >= 2, got ${shownValue(numThresholds)}`;
    throw typeof numThresholds === 'number' ? new RangeError(message) : new TypeError(message);
  }
  const curve = options.curve ?? 'ROC';
  if (curve !== 'ROC' && curve !== 'PR') {
    const message = `${name}: curve must be 'ROC' or 'PR', got ${shownValue(curve)}`;
    throw typeof curve === 'string' ? new Error(message) : new TypeError(message);
  }
  const summation = options.summationMethod ?? 'trapezoidal';
  if (!['trapezoidal', 'minoring', 'majoring', 'careful_interpolation'].includes(summation)) {
    const message = `${name}: summationMethod must be 'trapezoidal', 'minoring', 'majoring' or 'careful_interpolation', got ${shownValue(summation)}`;
    throw typeof summation === 'string' ? new Error(message) : new TypeError(message);
  }
  const thresholds = aucThresholds(numThresholds);
  const formula = ([tp, fn, tn, fp]: Float32Array[]) => aucFromCounts(tp, fn, tn, fp, curve, summation);
  if (predictions instanceof SymbolicTensor) {
    if (labels === undefined) throw labelsMissing(name);
    if (!(labels instanceof SymbolicTensor)) throw new TypeError(`${name}: labels must be symbolic like the predictions`);
    const graph: Graph = predictions.graph;
    const accumulators = ['true_positives', 'false_negatives', 'true_negatives', 'false_positives'].map((a) => accumulator(graph, `${name}/${a}`, [numThresholds]));
    const inputs = [aligned(labels, predictions, name), predictions, constant(graph, thresholds, [numThresholds], `${name}/thresholds`)];
    if (options.weights !== undefined) inputs.push(symbolicWeights(options.weights, name));
    const node = metricAccumulate('auc_accumulate', inputs, accumulators, graph.uniqueName(name));
    return new MetricOp(name, [node], accumulators, formula, graph.world.size);
  }
  return (async () => {
    const l = await concreteFloat32(labels, `${name}: labels`);
    const p = await concreteFloat32(predictions, `${name}: predictions`);
    if (l.length !== p.length) throw new RangeError(`${name}: labels has ${l.length} values but predictions has ${p.length}`);
    const inputs = [l, p, thresholds];
    if (options.weights !== undefined) inputs.push(await concreteFloat32(options.weights, `${name}: weights`));
    return formula(await accumulateNow('auc_accumulate', name, inputs, [[numThresholds], [numThresholds], [numThresholds], [numThresholds]]));
  })();
}

function symbolicWeights(weights: MetricInput, name: string): SymbolicTensor {
  if (!(weights instanceof SymbolicTensor)) throw new TypeError(`${name}: inside a modelFn, weights must be a symbolic tensor`);
  return weights;
}

const meanFormula = ([total, count]: Float32Array[]) => (count[0] === 0 ? 0 : Math.fround(total[0] / count[0]));

/** tf.metrics.mean: the (weighted) mean of every value seen. */
export function mean(values: SymbolicTensor, options?: { weights?: MetricInput; name?: string }): MetricOp;
export function mean(values: MetricInput, options?: { weights?: MetricInput; name?: string }): Promise<number>;
export function mean(values: MetricInput, options: { weights?: MetricInput; name?: string } = {}): MetricOp | Promise<number> {
  checkOptionKeys(options, ['weights', 'name'], 'metrics.mean');
  const name = options.name ?? 'mean';
  if (values instanceof SymbolicTensor) {
    const accumulators = [accumulator(values.graph, `${name}/total`, [1]), accumulator(values.graph, `${name}/count`, [1])];
    const inputs = [values];
    if (options.weights !== undefined) inputs.push(aligned(symbolicWeights(options.weights, name), values, name));
    const node = metricAccumulate('mean_accumulate', inputs, accumulators, values.graph.uniqueName(name));
    return new MetricOp(name, [node], accumulators, meanFormula, values.graph.world.size);
  }
  return (async () => {
    const inputs = [await concreteFloat32(values, `${name}: values`)];
    if (options.weights !== undefined) inputs.push(await concreteFloat32(options.weights, `${name}: weights`));
    return meanFormula(await accumulateNow('mean_accumulate', name, inputs, [[1], [1]]));
  })();
}

/** tf.metrics.accuracy: how often predictions equal labels (pass predicted classes, e.g. greater(p, 0.5)). */
export function accuracy(labels: SymbolicTensor, predictions: SymbolicTensor, options?: { weights?: MetricInput; name?: string }): MetricOp;
export function accuracy(labels: MetricInput, predictions: MetricInput, options?: { weights?: MetricInput; name?: string }): Promise<number>;
export function accuracy(labels: MetricInput, predictions: MetricInput, options: { weights?: MetricInput; name?: string } = {}): MetricOp | Promise<number> {
  checkOptionKeys(options, ['weights', 'name'], 'metrics.accuracy');
  const name = options.name ?? 'accuracy';
  if (predictions instanceof SymbolicTensor) {
    if (labels === undefined) throw labelsMissing(name);
    if (!(labels instanceof SymbolicTensor)) throw new TypeError(`${name}: labels must be symbolic like the predictions`);
    return mean(equal(aligned(labels, predictions, name), predictions), { weights: options.weights, name });
  }
  return (async () => {
    const l = await concreteFloat32(labels, `${name}: labels`);
    const p = await concreteFloat32(predictions, `${name}: predictions`);
    if (l.length !== p.length) throw new RangeError(`${name}: labels has ${l.length} values but predictions has ${p.length}`);
    // The same equal kernel the graph runs, then the mean.
    const [equal] = await runKernel('binary', [tensor(l, [l.length], undefined, { device: 'cpu' }), tensor(p, [p.length], undefined, { device: 'cpu' })], [[l.length]], { op: 'equal' }, name);
    const correct = (await equal.data()) as Float32Array;
    return mean(correct, { weights: options.weights, name });
  })();
}
