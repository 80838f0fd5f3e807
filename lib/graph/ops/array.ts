// Ops that move or reduce values: concat, reshape, reduceSum, reduceMean.
import { BATCH, DYNAMIC, shapeString, SymbolicTensor } from '../graph';
import { applyOp, applyOpOutputs, defineOp } from '../op_registry';
import { broadcastTo, divide, reduceToShape } from './elementwise';
import { constant } from './sources';
import { fixedSize, normalizeAxis } from './shapes';

// concat's gradient: dy cut back into the inputs' widths along the axis, in one pass.
const splitAxisDef = defineOp({
  name: 'split_axis',
  kernel: 'split_axis',
  outputs: ([x], attrs) =>
    (attrs.sizes as number[]).map((size) => ({ shape: x.shape.map((d, i) => (i === attrs.axis ? size : d)), dtype: 'float32' as const })),
});

const concatDef = defineOp({
  name: 'concat',
  kernel: 'concat',
  shape: (inputs, attrs, name) => {
    const axis = attrs.axis as number;
    const first = inputs[0].shape;
    let total = 0;
    inputs.forEach((x, i) => {
      const ok = x.rank === first.length && x.shape.every((d, j) => j === axis || d === first[j]);
      if (!ok) throw new Error(`${name}: input ${i} has shape ${shapeString(x.shape)}, which does not fit ${shapeString(first)} outside axis ${axis}`);
      if (x.shape[axis] === BATCH) throw new Error(`${name}: cannot concatenate along the batch dimension`);
      total += x.shape[axis];
    });
    return first.map((d, j) => (j === axis ? total : d));
  },
  grad: (node, dy) => {
    const axis = node.attrs.axis as number;
    return [...applyOpOutputs(splitAxisDef, [dy], { axis, sizes: node.inputs.map((x) => x.shape[axis]) }, `${node.name}/grad`)];
  },
});

export function concat(values: SymbolicTensor[], axis = -1, name?: string): SymbolicTensor {
  if (!Array.isArray(values)) throw new TypeError(`${name ?? 'concat'}: values must be a non-empty array of tensors`);
  if (values.length === 0) throw new Error(`${name ?? 'concat'}: values must be a non-empty array of tensors`);
  if (values.length === 1) return values[0];
  const rank = values[0]?.rank ?? 0;
  return applyOp(concatDef, values, { axis: normalizeAxis(axis, rank, name ?? 'concat') }, name);
}

const reshapeDef = defineOp({
  name: 'reshape',
  shape: (_inputs, attrs) => attrs.shape as number[],
  grad: (node, dy) => [reshape(dy, [...node.inputs[0].shape])],
  lower: (node, ctx) => ctx.alias(node.output!, ctx.value(node.inputs[0])),
});

/**
 * tf.reshape. One dimension may be -1: it takes what is left, and on a batched tensor
 * it must come out as the batch dimension (the examples stay apart).
 */
export function reshape(x: SymbolicTensor, shape: number[], name?: string): SymbolicTensor {
  const what = name ?? 'reshape';
  if (!Array.isArray(shape) || shape.some((d) => typeof d !== 'number')) throw new TypeError(`${what}: shape must be an array of integers >= -1`);
  if (shape.some((d) => !Number.isInteger(d) || d < -1)) throw new RangeError(`${what}: shape must be an array of integers >= -1`);
  const inferred = shape.filter((d) => d === -1).length;
  if (inferred > 1) throw new Error(`${what}: at most one dimension may be -1`);
  const batched = x.shape.includes(BATCH);
  const known = shape.reduce((n, d) => (d === -1 ? n : n * d), 1);
  const have = fixedSize(x.shape);
  if (batched) {
    if (inferred !== 1 || known !== have) {
      throw new Error(`${what}: cannot reshape ${shapeString(x.shape)} to [${shape}]: keep the batch dimension as -1 and ${have} values per example`);
    }
  } else if (inferred === 1 ? known === 0 || have % known !== 0 : known !== have) {
    throw new Error(`${what}: cannot reshape ${shapeString(x.shape)} (${have} values) to [${shape}]`);
  }
  const out = shape.map((d) => (d !== -1 ? d : batched ? BATCH : have / known));
  return applyOp(reshapeDef, [x], { shape: out }, name);
}

function reduceShape(x: SymbolicTensor, axis: number | number[] | undefined, name: string): { kept: number[]; out: number[]; count: number } {
  const axes = axis === undefined ? x.shape.map((_, i) => i) : (Array.isArray(axis) ? axis : [axis]).map((a) => normalizeAxis(a, x.rank, name));
  const kept = x.shape.map((d, i) => (axes.includes(i) ? 1 : d));
  const out = x.shape.filter((_, i) => !axes.includes(i));
  if (axes.some((a) => x.shape[a] === BATCH) && out.includes(BATCH)) throw new Error(`${name}: cannot reduce the batch dimension and keep it`);
  const count = axes.reduce((n, a) => n * x.shape[a], 1);
  return { kept, out, count };
}

function reduce(x: SymbolicTensor, axis: number | number[] | undefined, keepDims: boolean, mean: boolean, name?: string): SymbolicTensor {
  const what = name ?? (mean ? 'reduceMean' : 'reduceSum');
  const { kept, out, count } = reduceShape(x, axis, what);
  if (mean && count < 0) {
    // The batch dimension is among the reduced ones, and its size is known only when the
    // step runs: the same sum over ones counts the values each result is the mean of.
    const ones = broadcastTo(constant(x.graph, [1], [], `${what}/one`), x.shape, 1, x);
    return divide(reduce(x, axis, keepDims, false, `${what}/sum`), reduce(ones, axis, keepDims, false, `${what}/count`), what);
  }
  const summed = reduceToShape(x, kept, mean ? 1 / count : 1);
  return keepDims ? summed : reshapeExact(summed, out, what);
}

// A reshape that keeps a known shape (no -1 inference), for internal use.
function reshapeExact(x: SymbolicTensor, shape: number[], name: string): SymbolicTensor {
  if (shape.join() === x.shape.join()) return x;
  return applyOp(reshapeDef, [x], { shape }, `${name}/reshape`);
}

export function reduceSum(x: SymbolicTensor, axis?: number | number[], keepDims = false, name?: string): SymbolicTensor {
  return reduce(x, axis, keepDims, false, name);
}

/**
 * The mean over `axis` (default all): through weighted_mean when every axis goes, batch
 * included; over the batch axis and some others, a sum divided by the count of its values.
 */
export function reduceMean(x: SymbolicTensor, axis?: number | number[], keepDims = false, name?: string): SymbolicTensor {
  const what = name ?? 'reduceMean';
  const all = axis === undefined || (Array.isArray(axis) ? axis.length === x.rank : x.rank === 1);
  if (all && x.shape.includes(BATCH) && !keepDims) return meanOfAll(x, what);
  return reduce(x, axis, keepDims, true, name);
}

const meanDef = defineOp({
  name: 'mean',
  shape: (inputs, _attrs, name) => {
    if (inputs.length === 2 && fixedSize(inputs[1].shape) !== 1 && fixedSize(inputs[1].shape) !== fixedSize(inputs[0].shape)) {
      throw new Error(`${name}: weights ${shapeString(inputs[1].shape)} must be a scalar or match values ${shapeString(inputs[0].shape)}`);
    }
    return [];
  },
  grad: (node, dy) => [applyOp(meanGradDef, node.inputs.length === 2 ? [dy, node.inputs[1], node.inputs[0]] : [dy, node.inputs[0]], {}), null],
  kernels: ['weighted_mean'],
  lower: (node, ctx) => ctx.kernel('weighted_mean', [ctx.value(node.inputs[0]), node.inputs[1] ? ctx.value(node.inputs[1]) : -1], [ctx.value(node.output!)]),
});

// dy * w / count(w != 0) spread over the values (last input: the values, for the shape).
const meanGradDef = defineOp({
  name: 'mean_grad',
  kernels: ['weighted_mean_grad'],
  shape: (inputs) => inputs[inputs.length - 1].shape,
  lower: (node, ctx) => {
    // The values (the last input) are read for their shape only: the output has it.
    const values = node.inputs[node.inputs.length - 1];
    if (values.shape.includes(DYNAMIC)) ctx.sizeLike(node.output!, ctx.value(values));
    ctx.kernel('weighted_mean_grad', [ctx.value(node.inputs[0]), node.inputs.length === 3 ? ctx.value(node.inputs[1]) : -1], [ctx.value(node.output!)]);
  },
});

/** Mean of every element (TF1 tf.losses' reduction, SUM_BY_NONZERO_WEIGHTS with weights). */
export function meanOfAll(x: SymbolicTensor, name?: string, weights?: SymbolicTensor): SymbolicTensor {
  if (!weights) return applyOp(meanDef, [x], {}, name);
  // The kernel pairs values and weights element by element (or one weight for all);
  // other shapes are broadcast to the values' first, as TF's losses do.
  const fits = fixedSize(weights.shape) === 1 && !weights.shape.includes(BATCH) ? true : fixedSize(weights.shape) === fixedSize(x.shape) && weights.shape.includes(BATCH) === x.shape.includes(BATCH);
  return applyOp(meanDef, [x, fits ? weights : broadcastTo(weights, x.shape, 1, x)], {}, name);
}

