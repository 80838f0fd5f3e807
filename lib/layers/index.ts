// hb.layers: tf.layers-style building blocks over symbolic tensors.
import { glorotUniform, Initializer, zeros } from '../initializers/initializers';
import { shapeString, SymbolicTensor } from '../graph/graph';
import { concat, reduceSum, reshape } from '../graph/ops/array';
import { add, multiply, relu, scale, sigmoid, square, subtract, tanh } from '../graph/ops/elementwise';
import { matmul } from '../graph/ops/linalg';
import { shownValue } from '../shown_value';
import { checkOptionKeys } from '../option_keys';
export { dotInteraction } from '../graph/ops/interaction';

export type Activation = ((x: SymbolicTensor) => SymbolicTensor) | 'relu' | 'sigmoid' | 'tanh' | 'linear' | null;

function activationFn(activation: Activation | undefined, name: string): (x: SymbolicTensor) => SymbolicTensor {
  if (activation === undefined || activation === null || activation === 'linear') return (x) => x;
  if (typeof activation === 'function') return activation;
  const named = { relu, sigmoid, tanh } as Record<string, (x: SymbolicTensor) => SymbolicTensor>;
  const fn = named[activation as string];
  if (!fn) {
    const message = `${name}: activation must be a function or one of 'relu', 'sigmoid', 'tanh', 'linear', got ${shownValue(activation)}`;
    throw typeof activation === 'string' ? new Error(message) : new TypeError(message);
  }
  return fn;
}

function checkInput(x: unknown, name: string): SymbolicTensor {
  if (!(x instanceof SymbolicTensor)) throw new TypeError(`${name}: the input must be a symbolic tensor (inside a modelFn)`);
  if (x.rank !== 2) throw new Error(`${name}: the input must be [batch, features], got ${shapeString(x.shape)}`);
  return x;
}

export interface DenseOptions {
  activation?: Activation;
  useBias?: boolean;
  /** Default glorotUniform(), as tf.layers.dense. */
  kernelInitializer?: Initializer;
  /** Default zeros(). */
  biasInitializer?: Initializer;
  trainable?: boolean;
  /** Default 'dense', then 'dense_1', ...; variables are `<name>/kernel` and `<name>/bias`. */
  name?: string;
}

/** tf.layers.dense: activation(x W + b), W [in, units]. */
export function dense(x: SymbolicTensor, units: number, options: DenseOptions = {}): SymbolicTensor {
  checkOptionKeys(options, ['activation', 'useBias', 'kernelInitializer', 'biasInitializer', 'trainable', 'name'], 'layers.dense');
  const input = checkInput(x, options.name ?? 'dense');
  const graph = input.graph;
  const name = options.name ?? graph.uniqueName('dense');
  if (!Number.isSafeInteger(units) || units < 1) {
    const message = `${name}: units must be an integer >= 1, got ${shownValue(units)}`;
    throw typeof units === 'number' ? new RangeError(message) : new TypeError(message);
  }
  const act = activationFn(options.activation, name);
  const trainable = options.trainable ?? true;
  const kernel = graph.store.getOrCreate(`${name}/kernel`, [input.shape[1], units], options.kernelInitializer ?? glorotUniform(), trainable, graph.device);
  let y = matmul(input, graph.variableTensor(kernel), { name: `${name}/MatMul` });
  if (options.useBias ?? true) {
    const bias = graph.store.getOrCreate(`${name}/bias`, [units], options.biasInitializer ?? zeros(), trainable, graph.device);
    y = add(y, graph.variableTensor(bias), `${name}/BiasAdd`);
  }
  return act(y);
}

/**
 * DCN's cross network: x_{l+1} = x0 * (x_l w_l) + b_l + x_l, numLayers times, with
 * w_l [d, 1] and b_l [d] (variables `<name>/kernel_l`, `<name>/bias_l`).
 */
export function crossNetwork(x: SymbolicTensor, numLayers: number, options: { kernelInitializer?: Initializer; name?: string } = {}): SymbolicTensor {
  checkOptionKeys(options, ['kernelInitializer', 'name'], 'layers.crossNetwork');
  const x0 = checkInput(x, options.name ?? 'cross_network');
  const graph = x0.graph;
  const name = options.name ?? graph.uniqueName('cross_network');
  if (!Number.isSafeInteger(numLayers) || numLayers < 1) {
    const message = `${name}: numLayers must be an integer >= 1, got ${shownValue(numLayers)}`;
    throw typeof numLayers === 'number' ? new RangeError(message) : new TypeError(message);
  }
  const d = x0.shape[1];
  let xl = x0;
  for (let l = 0; l < numLayers; l++) {
    const w = graph.store.getOrCreate(`${name}/kernel_${l}`, [d, 1], options.kernelInitializer ?? glorotUniform(), true, graph.device);
    const b = graph.store.getOrCreate(`${name}/bias_${l}`, [d], zeros(), true, graph.device);
    const projected = matmul(xl, graph.variableTensor(w));  // [batch, 1]
    xl = add(add(multiply(x0, projected), graph.variableTensor(b)), xl, `${name}/layer_${l}`);
  }
  return xl;
}

export interface FmInteractionOptions {
  /** Default 'fm_interaction', then 'fm_interaction_1', ...: names the layer's ops (it has no variables). */
  name?: string;
}

/**
 * DeepFM's (Guo et al. 2017) factorization-machine term over F fields, each embeddings[i]
 * [batch, k] (the same k): 0.5 * sum_k ((sum_i v_ik)^2 - sum_i v_ik^2), the sum of the
 * dot products of all distinct pairs of fields, as [batch, 1]. Built from concat,
 * reshape, square and reduceSum, so its gradient is theirs.
 */
export function fmInteraction(embeddings: SymbolicTensor[], options: FmInteractionOptions = {}): SymbolicTensor {
  checkOptionKeys(options, ['name'], 'layers.fmInteraction');
  if (options.name !== undefined && (typeof options.name !== 'string' || options.name === '')) {
    throw new TypeError(`layers.fmInteraction: name must be a non-empty string, got ${shownValue(options.name)}`);
  }
  const what = options.name ?? 'fm_interaction';
  if (!Array.isArray(embeddings)) throw new TypeError(`${what}: embeddings must be a non-empty array of [batch, k] symbolic tensors, got ${shownValue(embeddings)}`);
  if (embeddings.length === 0) throw new Error(`${what}: embeddings must be a non-empty array of [batch, k] symbolic tensors, got []`);
  embeddings.forEach((e, i) => {
    if (!(e instanceof SymbolicTensor)) throw new TypeError(`${what}: embeddings[${i}] must be a symbolic tensor (inside a modelFn), got ${shownValue(e)}`);
  });
  const first = embeddings[0];
  if (first.rank !== 2) throw new Error(`${what}: embeddings[0] must be [batch, k], got ${shapeString(first.shape)}`);
  embeddings.forEach((e, i) => {
    if (e.graph !== first.graph) throw new Error(`${what}: embeddings[${i}] belongs to another graph than embeddings[0]`);
    if (e.rank !== 2 || e.shape[0] !== first.shape[0] || e.shape[1] !== first.shape[1]) {
      throw new Error(`${what}: every embedding must have the same shape [batch, k]; embeddings[${i}] is ${shapeString(e.shape)} but embeddings[0] is ${shapeString(first.shape)}`);
    }
  });
  const name = options.name ?? first.graph.uniqueName('fm_interaction');
  const fields = embeddings.length;
  const k = first.shape[1];
  // [batch, F k]: every v_ik of an example side by side.
  const stacked = concat(embeddings, 1, `${name}/concat`);
  // sum_i sum_k v_ik^2, [batch, 1].
  const sumOfSquares = reduceSum(square(stacked, `${name}/square`), 1, true, `${name}/sum_of_squares`);
  // (sum_i v_ik) per k, then sum_k of its square, [batch, 1].
  const fieldSum = fields === 1 ? stacked : reduceSum(reshape(stacked, [-1, fields, k], `${name}/fields`), 1, false, `${name}/field_sum`);
  const squareOfSum = reduceSum(square(fieldSum, `${name}/square_of_sum`), 1, true, `${name}/sum_of_square_of_sum`);
  return scale(subtract(squareOfSum, sumOfSquares, `${name}/difference`), 0.5, name);
}

export interface CrossNetworkV2Options {
  /**
   * Initializer of each layer's [d, d] kernel, or a function of the layer index giving
   * one (to seed the layers apart). Default glorotUniform(), as Keras-RS's FeatureCross.
   */
  kernelInitializer?: Initializer | ((layer: number) => Initializer);
  /** Default zeros(). */
  biasInitializer?: Initializer;
  /** Default 'cross_network_v2', then 'cross_network_v2_1', ...; variables are `<name>/kernel_<l>` and `<name>/bias_<l>`. */
  name?: string;
}

/**
 * DCN-v2's (Wang et al. 2021) full-rank cross network, Keras-RS / TF-Recommenders'
 * `Cross` layer stacked numLayers times: x_{l+1} = x0 * (x_l W_l + b_l) + x_l, with
 * W_l [d, d] (applied as tf.layers.dense applies its kernel) and b_l [d]; x [batch, d].
 */
export function crossNetworkV2(x: SymbolicTensor, numLayers: number, options: CrossNetworkV2Options = {}): SymbolicTensor {
  checkOptionKeys(options, ['kernelInitializer', 'biasInitializer', 'name'], 'layers.crossNetworkV2');
  if (options.name !== undefined && (typeof options.name !== 'string' || options.name === '')) {
    throw new TypeError(`layers.crossNetworkV2: name must be a non-empty string, got ${shownValue(options.name)}`);
  }
  const what = options.name ?? 'cross_network_v2';
  const x0 = checkInput(x, what);
  if (!Number.isSafeInteger(numLayers) || numLayers < 1) {
    const message = `${what}: numLayers must be an integer >= 1, got ${shownValue(numLayers)}`;
    throw typeof numLayers === 'number' ? new RangeError(message) : new TypeError(message);
  }
  const kernelInitializer = options.kernelInitializer;
  if (kernelInitializer !== undefined && !(kernelInitializer instanceof Initializer) && typeof kernelInitializer !== 'function') {
    throw new TypeError(`${what}: kernelInitializer must be an hb.initializers initializer or a function of the layer index giving one, got ${shownValue(kernelInitializer)}`);
  }
  if (options.biasInitializer !== undefined && !(options.biasInitializer instanceof Initializer)) {
    throw new TypeError(`${what}: biasInitializer must be an hb.initializers initializer, got ${shownValue(options.biasInitializer)}`);
  }
  const d = x0.shape[1];
  if (!(d >= 1)) throw new Error(`${what}: the input's feature dimension must be known and >= 1, got ${shapeString(x0.shape)}`);
  const graph = x0.graph;
  const name = options.name ?? graph.uniqueName('cross_network_v2');
  const kernelFor = (l: number): Initializer => {
    if (kernelInitializer === undefined) return glorotUniform();
    if (kernelInitializer instanceof Initializer) return kernelInitializer;
    const made = kernelInitializer(l);
    if (!(made instanceof Initializer)) throw new TypeError(`${name}: kernelInitializer(${l}) must return an hb.initializers initializer, got ${shownValue(made)}`);
    return made;
  };
  let xl = x0;
  for (let l = 0; l < numLayers; l++) {
    const w = graph.store.getOrCreate(`${name}/kernel_${l}`, [d, d], kernelFor(l), true, graph.device);
    const b = graph.store.getOrCreate(`${name}/bias_${l}`, [d], options.biasInitializer ?? zeros(), true, graph.device);
    const projected = add(matmul(xl, graph.variableTensor(w), { name: `${name}/MatMul_${l}` }), graph.variableTensor(b), `${name}/BiasAdd_${l}`);  // [batch, d]
    xl = add(multiply(x0, projected, `${name}/mul_${l}`), xl, `${name}/layer_${l}`);
  }
  return xl;
}
