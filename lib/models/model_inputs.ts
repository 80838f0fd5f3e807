// What the ready-made models (hb.models) take and share: their inputs as feature
// columns, their training settings, and the pieces every one of them is built from
// (the embeddings, the linear part, an MLP, the binary-classifier head).
import * as fc from '../feature_column';
import { isCategoricalColumn, isDenseColumn } from '../feature_column/column';
import { SymbolicTensor } from '../graph/graph';
import { concat, reduceSum } from '../graph/ops/array';
import { add, addConstant, log, relu, sigmoid } from '../graph/ops/elementwise';
import { sigmoidCrossEntropy } from '../graph/ops/losses';
import { EstimatorSpec } from '../estimator/estimator_spec';
import { Mode, ModeKeys } from '../estimator/mode_keys';
import { glorotUniform, Initializer, randomUniform, truncatedNormal, zeros } from '../initializers/initializers';
import { dense } from '../layers';
import { auc, mean } from '../metrics';
import { checkOptionKeys } from '../option_keys';
import { shownValue } from '../shown_value';
import { Optimizer } from '../train/optimizer';
import { TrainOp, trainableVariables } from '../train/train_op';

/** One categorical feature of a model: embedded (and, in models with a linear part, weighted). */
export interface CategoricalInput {
  column: fc.CategoricalColumn;
  /**
   * The embedding column's options (combiner, initializer, maxNorm, trainable, emb*), as
   * hb.featureColumn.embeddingColumn takes them. The emb* options apply to the column's
   * linear weights too (Wide & Deep, DeepFM).
   */
  embedding?: fc.EmbeddingColumnOptions;
  /** This feature's embedding dimension (default: the model's embeddingDim). */
  dimension?: number;
}

export interface ModelInputs {
  /** Numeric (or bucketized / indicator / any dense) columns, used as given: normalize them with numericColumn's normalizerFn. */
  numeric: fc.DenseColumn[];
  categorical: CategoricalInput[];
  /** The embedding dimension of every categorical input that does not set its own. */
  embeddingDim: number;
  /**
   * A transform of the whole numeric block, in the graph: 'log1p' is log(1 + max(x, 0))
   * (DLRM's for Criteo's counts); default 'none' (the values as the columns give them).
   */
  numericTransform?: 'log1p' | 'none';
}

export interface ModelTraining {
  /** The optimizer of the model (of its deep part where it has a linear one); default: the model's. */
  makeOptimizer?: () => Optimizer;
  /** The linear part's optimizer (Wide & Deep, DeepFM's first-order term); default: makeOptimizer. */
  makeWideOptimizer?: () => Optimizer;
  /** Seeds the dense layers' kernels (glorotUniform({ seed: seed + k })); default 1. */
  seed?: number;
}

export const TRAINING_KEYS = ['makeOptimizer', 'makeWideOptimizer', 'seed'] as const;

/** Keys of `config` whose value is not undefined (a config spread from optional settings may carry undefined ones). */
function givenKeys(config: object): string[] {
  return Object.entries(config)
    .filter(([, v]) => v !== undefined)
    .map(([k]) => k);
}

export function checkConfig(config: unknown, known: readonly string[], where: string): Record<string, unknown> {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) throw new TypeError(`${where}: the config must be an object, got ${shownValue(config)}`);
  const given: Record<string, unknown> = {};
  for (const k of givenKeys(config)) given[k] = (config as Record<string, unknown>)[k];
  checkOptionKeys(given, known, where);
  return given;
}

export function checkUnits(value: unknown, where: string, argument: string, options: { nonEmpty?: boolean } = {}): number[] {
  if (!Array.isArray(value) || value.some((u) => typeof u !== 'number')) {
    throw new TypeError(`${where}: ${argument} must be an array of integers >= 1, got ${shownValue(value)}`);
  }
  if (value.some((u) => !Number.isSafeInteger(u) || u < 1)) throw new RangeError(`${where}: ${argument} must be an array of integers >= 1, got ${shownValue(value)}`);
  if (options.nonEmpty && value.length === 0) throw new Error(`${where}: ${argument} must have at least one layer, got []`);
  return value as number[];
}

export function checkPositiveInteger(value: unknown, where: string, argument: string, min = 1): number {
  if (typeof value !== 'number') throw new TypeError(`${where}: ${argument} must be an integer >= ${min}, got ${shownValue(value)}`);
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${where}: ${argument} must be an integer >= ${min}, got ${shownValue(value)}`);
  return value;
}

export interface CheckedTraining {
  makeOptimizer?: () => Optimizer;
  makeWideOptimizer?: () => Optimizer;
  seed: number;
}

export function checkTraining(config: Record<string, unknown>, where: string): CheckedTraining {
  for (const key of ['makeOptimizer', 'makeWideOptimizer']) {
    if (config[key] !== undefined && typeof config[key] !== 'function') {
      throw new TypeError(`${where}: ${key} must be a function returning an optimizer (() => new hb.train.AdagradOptimizer(...)), got ${shownValue(config[key])}`);
    }
  }
  const seed = config.seed === undefined ? 1 : checkPositiveInteger(config.seed, where, 'seed', 0);
  return { makeOptimizer: config.makeOptimizer as CheckedTraining['makeOptimizer'], makeWideOptimizer: config.makeWideOptimizer as CheckedTraining['makeWideOptimizer'], seed };
}

/** An optimizer from a factory, checked. */
export function made(factory: () => Optimizer, where: string, argument: string): Optimizer {
  const optimizer = factory();
  if (!(optimizer instanceof Optimizer)) throw new TypeError(`${where}: ${argument}() must return an hb.train optimizer, got ${shownValue(optimizer)}`);
  return optimizer;
}

export interface CheckedCategorical {
  column: fc.CategoricalColumn;
  embedding: fc.EmbeddingColumnOptions;
  dimension: number;
}

export interface CheckedInputs {
  numeric: fc.DenseColumn[];
  categorical: CheckedCategorical[];
  embeddingDim: number;
  numericTransform: 'log1p' | 'none';
}

export function checkInputs(inputs: unknown, where: string): CheckedInputs {
  if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) {
    throw new TypeError(`${where}: inputs must be an object { numeric, categorical, embeddingDim }, got ${shownValue(inputs)}`);
  }
  checkOptionKeys(inputs, ['numeric', 'categorical', 'embeddingDim', 'numericTransform'], `${where}: inputs`);
  const { numeric, categorical, embeddingDim, numericTransform } = inputs as Record<string, unknown>;
  const dim = checkPositiveInteger(embeddingDim, where, 'inputs.embeddingDim');
  if (numericTransform !== undefined && numericTransform !== 'log1p' && numericTransform !== 'none') {
    const message = `${where}: inputs.numericTransform must be 'log1p' or 'none', got ${shownValue(numericTransform)}`;
    throw typeof numericTransform === 'string' ? new Error(message) : new TypeError(message);
  }
  const numericColumns = numeric === undefined ? [] : numeric;
  if (!Array.isArray(numericColumns)) throw new TypeError(`${where}: inputs.numeric must be an array of dense feature columns, got ${shownValue(numeric)}`);
  numericColumns.forEach((c, i) => {
    if (!isDenseColumn(c)) {
      const what = isCategoricalColumn(c) ? `categorical column '${c.name}'` : shownValue(c);
      throw new TypeError(`${where}: inputs.numeric[${i}] must be a dense feature column (numericColumn, bucketized through indicatorColumn, ...), got ${what}; categorical columns go in inputs.categorical`);
    }
  });
  const categoricalInputs = categorical === undefined ? [] : categorical;
  if (!Array.isArray(categoricalInputs)) throw new TypeError(`${where}: inputs.categorical must be an array of { column, embedding?, dimension? }, got ${shownValue(categorical)}`);
  const checked = categoricalInputs.map((input, i): CheckedCategorical => {
    const at = `inputs.categorical[${i}]`;
    if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new TypeError(`${where}: ${at} must be an object { column, embedding?, dimension? }, got ${shownValue(input)}`);
    checkOptionKeys(input, ['column', 'embedding', 'dimension'], `${where}: ${at}`);
    const { column, embedding, dimension } = input as Record<string, unknown>;
    if (!isCategoricalColumn(column)) {
      throw new TypeError(`${where}: ${at}.column must be a categorical column (categoricalColumnWith*, bucketizedColumn, crossedColumn, weightedCategoricalColumn), got ${shownValue(column)}`);
    }
    if (embedding !== undefined && (embedding === null || typeof embedding !== 'object' || Array.isArray(embedding))) {
      throw new TypeError(`${where}: ${at}.embedding must be an object of embeddingColumn options, got ${shownValue(embedding)}`);
    }
    return {
      column,
      embedding: (embedding ?? {}) as fc.EmbeddingColumnOptions,
      dimension: dimension === undefined ? dim : checkPositiveInteger(dimension, where, `${at}.dimension`),
    };
  });
  const names = checked.map((c) => c.column.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate !== undefined) throw new Error(`${where}: categorical column '${duplicate}' is given twice in inputs.categorical`);
  if (numericColumns.length === 0 && checked.length === 0) throw new Error(`${where}: inputs has no feature: give inputs.numeric or inputs.categorical columns`);
  return { numeric: numericColumns as fc.DenseColumn[], categorical: checked, embeddingDim: dim, numericTransform: (numericTransform ?? 'none') as 'log1p' | 'none' };
}

/** Runs `make`, prefixing its errors' messages with where they came from (type and stack kept). */
function naming<T>(prefix: string, make: () => T): T {
  try {
    return make();
  } catch (error) {
    if (error instanceof Error) error.message = `${prefix}: ${error.message}`;
    throw error;
  }
}

/** One embedding column per categorical input, in input order. */
export function embeddingColumns(
  inputs: CheckedInputs,
  where: string,
  defaultInitializer?: (column: fc.CategoricalColumn) => Initializer | undefined,
): fc.EmbeddingColumn[] {
  return inputs.categorical.map((c, i) =>
    naming(`${where}: inputs.categorical[${i}] ('${c.column.name}')`, () => {
      const initializer = c.embedding.initializer === undefined ? defaultInitializer?.(c.column) : undefined;
      return fc.embeddingColumn(c.column, c.dimension, initializer ? { ...c.embedding, initializer } : c.embedding);
    }),
  );
}

// The interaction models' embeddings meet in products (DLRM's dot interaction, DeepFM's
// factorization machine, DCN's cross layers), where TF's embedding_column default
// (truncated normal, stddev 1 / sqrt(dimension): 0.25 at 16) makes the first logits large
// and the training slow to recover: on `hb-ts train`'s generated data (1M examples,
// dimension 16) eval AUC 0.65 (DLRM), 0.62 (DeepFM) and 0.69 (DCN) against 0.75-0.77
// with each model's reference initializer below. Wide & Deep keeps TF's canned
// estimator's default. An embedding option `initializer` wins over these.

/**
 * DLRM's reference (facebookresearch/dlrm, and TorchRec's default): uniform in
 * +-sqrt(1 / rows) per table, rows the column's bucket count (a dynamic table's too). A
 * column without one (an identity column with no numBuckets) keeps the embedding column's
 * default.
 */
export function dlrmEmbeddingInitializer(column: fc.CategoricalColumn): Initializer | undefined {
  if (!Number.isFinite(column.numBuckets) || column.numBuckets < 1) return undefined;
  const bound = Math.sqrt(1 / column.numBuckets);
  return randomUniform({ minval: -bound, maxval: bound });
}

/** The DeepFM paper's code: normal, stddev 0.01 (here truncated at 2 stddev, as every normal of hb.initializers). */
export function deepFMEmbeddingInitializer(): Initializer {
  return truncatedNormal({ stddev: 0.01 });
}

/** Keras' Embedding default, which TF Recommenders' DCN builds on: uniform in +-0.05. */
export function dcnEmbeddingInitializer(): Initializer {
  return randomUniform({ minval: -0.05, maxval: 0.05 });
}

/** The variables of the linear part are named under this scope, as TF's linear model names them. */
export const LINEAR_SCOPE = 'linear/linear_model';

const embeddingOwnOptions = ['combiner', 'initializer', 'maxNorm', 'trainable'];

/**
 * One weight per id for each categorical input, as TF's linear model: a 1-wide table
 * `linear/linear_model/<column>/weights` (zeros, ids summed), with the input's emb* options.
 */
export function linearColumns(inputs: CheckedInputs, where: string): fc.SharedEmbeddingColumn[] {
  return inputs.categorical.map((c, i) =>
    naming(`${where}: inputs.categorical[${i}] ('${c.column.name}')`, () => {
      const options: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(c.embedding)) if (!embeddingOwnOptions.includes(k)) options[k] = v;
      // A table of its own name: an embedding column of the same categorical column names its table after the column.
      return fc.sharedEmbeddingColumns([c.column], 1, { ...options, combiner: 'sum', initializer: zeros(), sharedEmbeddingCollectionName: `${LINEAR_SCOPE}/${c.column.name}/weights` })[0];
    }),
  );
}

/** The numeric inputs side by side [batch, n] (numericTransform applied), or undefined without any. */
export function numericBlock(inputs: CheckedInputs, features: Record<string, unknown>): SymbolicTensor | undefined {
  if (inputs.numeric.length === 0) return undefined;
  const x = fc.DenseFeatures(inputs.numeric)(features) as SymbolicTensor;
  return inputs.numericTransform === 'log1p' ? log(addConstant(relu(x), 1), 'numeric/log1p') : x;
}

/** Each column's [batch, dimension] lookup, sorted by column name as TF's input layer (DenseFeatures) orders them. */
export function lookups(columns: readonly fc.DenseColumn[], features: Record<string, unknown>): SymbolicTensor[] {
  if (columns.length === 0) return [];
  return fc.DenseFeatures(columns, { enableConcat: false })(features) as unknown as SymbolicTensor[];
}

/**
 * The linear part's logit [batch, 1]: the summed weights of each categorical input's ids,
 * plus numeric x w, plus a bias (variables under linear/linear_model/).
 */
export function linearLogit(linear: readonly fc.DenseColumn[], numeric: SymbolicTensor | undefined, features: Record<string, unknown>): SymbolicTensor {
  const parts: SymbolicTensor[] = [];
  if (linear.length > 0) parts.push(reduceSum(fc.DenseFeatures(linear)(features) as SymbolicTensor, 1, true, `${LINEAR_SCOPE}/weighted_sum`));
  if (numeric) parts.push(dense(numeric, 1, { useBias: false, kernelInitializer: zeros(), name: `${LINEAR_SCOPE}/numeric` }));
  if (parts.length === 0) throw new Error('linear model: no input');
  const graph = parts[0].graph;
  const bias = graph.store.getOrCreate(`${LINEAR_SCOPE}/bias_weights`, [1], zeros(), true, graph.device);
  return add(parts.reduce((a, b) => add(a, b)), graph.variableTensor(bias), `${LINEAR_SCOPE}/bias_add`);
}

/** Side-by-side [batch, sum of widths] of the parts that exist. */
export function joined(parts: Array<SymbolicTensor | undefined>): SymbolicTensor {
  const present = parts.filter((p): p is SymbolicTensor => p !== undefined);
  return concat(present, 1);
}

/** relu layers `<prefix>/hiddenlayer_<i>`, kernels glorotUniform({ seed: seed + i }). */
export function mlp(x: SymbolicTensor, units: readonly number[], prefix: string, seed: number): SymbolicTensor {
  let h = x;
  units.forEach((u, i) => {
    h = dense(h, u, { activation: relu, name: `${prefix}/hiddenlayer_${i}`, kernelInitializer: glorotUniform({ seed: seed + i }) });
  });
  return h;
}

/** A 1-unit linear layer. */
export function logitLayer(x: SymbolicTensor, name: string, seed: number, kernelInitializer?: Initializer): SymbolicTensor {
  return dense(x, 1, { name, kernelInitializer: kernelInitializer ?? glorotUniform({ seed }) });
}

/**
 * The binary classifier's spec for `mode`: PREDICT { probs }; EVAL the sigmoid
 * cross-entropy loss and { auc, meanProbability }; TRAIN the loss and the train ops
 * `trainOps(loss)` makes.
 */
export function binaryClassifierSpec(where: string, mode: Mode, labels: unknown, logits: SymbolicTensor, trainOps: (loss: SymbolicTensor) => TrainOp[]): EstimatorSpec {
  const probs = sigmoid(logits);
  if (mode === ModeKeys.PREDICT) return EstimatorSpec({ mode, predictions: { probs } });
  if (!(labels instanceof SymbolicTensor)) {
    throw new TypeError(`${where}: labels must be one [batch, 1] tensor of 0/1 labels (one labelField), got ${labels === undefined ? 'none' : 'a record of labels'}`);
  }
  const loss = sigmoidCrossEntropy(labels, logits);
  if (mode === ModeKeys.EVAL) return EstimatorSpec({ mode, loss, evalMetricOps: { auc: auc(labels, probs), meanProbability: mean(probs) } });
  return EstimatorSpec({ mode, loss, trainOp: trainOps(loss) });
}

/**
 * Train ops for a model with a linear part (variables under linear/): the linear part
 * with makeWideOptimizer (default: makeOptimizer, else `defaultWide`), the rest with
 * makeOptimizer (else `defaultDeep`); one optimizer for all when both are the same choice.
 */
export function wideAndDeepTrainOps(
  where: string,
  training: CheckedTraining,
  loss: SymbolicTensor,
  defaults: { wide?: () => Optimizer; deep: () => Optimizer },
): TrainOp[] {
  const deepFactory = training.makeOptimizer ?? defaults.deep;
  const wideFactory = training.makeWideOptimizer ?? training.makeOptimizer ?? defaults.wide;
  const deepOptimizer = made(deepFactory, where, training.makeOptimizer ? 'makeOptimizer' : 'the default optimizer');
  if (!wideFactory || wideFactory === deepFactory) return [deepOptimizer.minimize(loss)];
  const all = trainableVariables();
  const isLinear = (name: string) => name.startsWith(`${LINEAR_SCOPE}/`);
  const wideVars = all.filter((v) => isLinear(v.name));
  const deepVars = all.filter((v) => !isLinear(v.name));
  const wideOptimizer = made(wideFactory, where, training.makeWideOptimizer ? 'makeWideOptimizer' : 'the default linear optimizer');
  const ops: TrainOp[] = [];
  if (wideVars.length > 0) ops.push(wideOptimizer.minimize(loss, { varList: wideVars }));
  if (deepVars.length > 0) ops.push(deepOptimizer.minimize(loss, { varList: deepVars }));
  return ops;
}

/** Refuses makeWideOptimizer for a model without a linear part (it would be ignored). */
export function refuseWideOptimizer(where: string, training: CheckedTraining): void {
  if (training.makeWideOptimizer) throw new Error(`${where}: makeWideOptimizer is for models with a linear part (wideAndDeepModelFn, deepFMModelFn); this model has none: use makeOptimizer`);
}

/** Train ops for a model without a linear part: makeOptimizer (else `defaultOptimizer`) over every variable. */
export function singleTrainOps(where: string, training: CheckedTraining, loss: SymbolicTensor, defaultOptimizer: () => Optimizer): TrainOp[] {
  return [made(training.makeOptimizer ?? defaultOptimizer, where, training.makeOptimizer ? 'makeOptimizer' : 'the default optimizer').minimize(loss)];
}
