// DLRM (Naumov et al. 2019) as a modelFn: dense features through a bottom MLP, one
// embedding per categorical feature, pairwise dot interactions, a top MLP to one logit.
// Used by `hb-ts train`, examples/dlrm.ts and bench/dlrm_step.bench.js.
import * as fc from '../feature_column';
import { SymbolicTensor } from '../graph/graph';
import { addConstant, log, relu } from '../graph/ops/elementwise';
import { ModelFn } from '../estimator/estimator';
import { glorotUniform } from '../initializers/initializers';
import { dense, dotInteraction } from '../layers';
import { AdagradOptimizer } from '../train/optimizers';
import { Optimizer } from '../train/optimizer';
import {
  binaryClassifierSpec,
  checkConfig,
  checkInputs,
  checkTraining,
  checkUnits,
  CheckedTraining,
  dlrmEmbeddingInitializer,
  embeddingColumns,
  lookups,
  ModelInputs,
  ModelTraining,
  numericBlock,
  refuseWideOptimizer,
  singleTrainOps,
  TRAINING_KEYS,
} from './model_inputs';

/** DLRM over named raw features (the CLI's synthetic data, Criteo's I1..I13 / C1..C26). */
export interface DlrmConfig {
  /** Dense feature names (e.g. I1..I13): counts, fed through log(1 + max(x, 0)). */
  denseFeatures: string[];
  /** Categorical features: name and bucket count (ids are taken modulo nothing: identity). */
  tables: Array<{ name: string; numBuckets: number }>;
  embeddingDim: number;
  /** Hidden sizes of the bottom MLP; its last size must equal embeddingDim. */
  bottomMlp: number[];
  /** Hidden sizes of the top MLP; a final layer of 1 unit is added. */
  topMlp: number[];
  makeOptimizer?: () => Optimizer;
  seed?: number;
}

/**
 * DLRM over feature columns, as the other hb.models take them. Embeddings without an
 * initializer start uniform in +-sqrt(1 / rows) (the DLRM reference's), as do the
 * tables of DlrmConfig.
 */
export interface DlrmInputsConfig extends ModelTraining {
  /**
   * inputs.numeric go through the bottom MLP as given (normalize them with numericColumn's
   * normalizerFn, or inputs.numericTransform: 'log1p'); every categorical input is embedded in
   * inputs.embeddingDim dimensions (no per-input dimension other than that).
   */
  inputs: ModelInputs;
  /** Hidden sizes of the bottom MLP; its last size must equal inputs.embeddingDim. */
  bottomMlp: number[];
  /** Hidden sizes of the top MLP; a final layer of 1 unit is added. */
  topMlp: number[];
}

const WHERE = 'dlrmModelFn';
const LEGACY_KEYS = ['denseFeatures', 'tables', 'embeddingDim', 'bottomMlp', 'topMlp', 'makeOptimizer', 'seed'];
const INPUTS_KEYS = ['inputs', 'bottomMlp', 'topMlp', ...TRAINING_KEYS];

export function dlrmModelFn(config: DlrmConfig | DlrmInputsConfig): ModelFn {
  if (config !== null && typeof config === 'object' && 'inputs' in config && (config as { inputs?: unknown }).inputs !== undefined) {
    const legacy = LEGACY_KEYS.filter((k) => !INPUTS_KEYS.includes(k) && (config as unknown as Record<string, unknown>)[k] !== undefined);
    if (legacy.length > 0) {
      throw new Error(`${WHERE}: give either inputs (feature columns) or denseFeatures / tables / embeddingDim, not both; got inputs and ${legacy.join(', ')}`);
    }
    return dlrmFromInputs(config as DlrmInputsConfig);
  }
  return dlrmFromNames(config as DlrmConfig);
}

function bottomAndTop(config: DlrmConfig | DlrmInputsConfig, embeddingDim: number): { seed: number } {
  const last = config.bottomMlp[config.bottomMlp.length - 1];
  if (last !== embeddingDim) throw new Error(`dlrm: the bottom MLP must end at embeddingDim (${embeddingDim}), got ${last}`);
  return { seed: config.seed ?? 1 };
}

/** The bottom MLP, the interaction, the top MLP and the head, as both configs build them. */
function dlrmTower(x: SymbolicTensor, embeddings: () => SymbolicTensor[], bottomMlp: readonly number[], topMlp: readonly number[], seed: number): SymbolicTensor {
  bottomMlp.forEach((units, i) => {
    x = dense(x, units, { activation: relu, name: `bottom_mlp_${i}`, kernelInitializer: glorotUniform({ seed: seed + i }) });
  });
  // The lookups after the bottom MLP, as the graph has always been built.
  let z = dotInteraction(x, embeddings());
  topMlp.forEach((units, i) => {
    z = dense(z, units, { activation: relu, name: `top_mlp_${i}`, kernelInitializer: glorotUniform({ seed: seed + 100 + i }) });
  });
  return dense(z, 1, { name: 'logits', kernelInitializer: glorotUniform({ seed: seed + 200 }) });
}

function dlrmFromNames(config: DlrmConfig): ModelFn {
  checkConfig(config, LEGACY_KEYS, WHERE);
  const { seed } = bottomAndTop(config, config.embeddingDim);
  const training: CheckedTraining = { makeOptimizer: config.makeOptimizer, seed };
  const denseColumns = config.denseFeatures.map((k) => fc.numericColumn(k));
  const embeddingColumns = config.tables.map((t) => {
    const ids = fc.categoricalColumnWithIdentity(t.name, t.numBuckets);
    return fc.embeddingColumn(ids, config.embeddingDim, { combiner: 'sum', initializer: dlrmEmbeddingInitializer(ids) });
  });
  return (features, labels, mode) => {
    const counts = fc.DenseFeatures(denseColumns)(features);
    const x = log(addConstant(relu(counts), 1));
    const embeddings = () => fc.DenseFeatures(embeddingColumns, { enableConcat: false })(features) as unknown as SymbolicTensor[];
    const logits = dlrmTower(x, embeddings, config.bottomMlp, config.topMlp, seed);
    return binaryClassifierSpec('dlrm', mode, labels, logits, (loss) => singleTrainOps('dlrm', training, loss, () => new AdagradOptimizer({ learningRate: 0.05 })));
  };
}

function dlrmFromInputs(config: DlrmInputsConfig): ModelFn {
  const given = checkConfig(config, INPUTS_KEYS, WHERE);
  const inputs = checkInputs(given.inputs, WHERE);
  const bottomMlp = checkUnits(given.bottomMlp, WHERE, 'bottomMlp', { nonEmpty: true });
  const topMlp = checkUnits(given.topMlp, WHERE, 'topMlp');
  const training = checkTraining(given, WHERE);
  refuseWideOptimizer(WHERE, training);
  bottomAndTop({ ...config, bottomMlp }, inputs.embeddingDim);
  if (inputs.numeric.length === 0) throw new Error(`${WHERE}: inputs.numeric must name at least one dense column (the bottom MLP's input)`);
  if (inputs.categorical.length === 0) throw new Error(`${WHERE}: inputs.categorical must have at least one column (the interaction's embeddings)`);
  const odd = inputs.categorical.find((c) => c.dimension !== inputs.embeddingDim);
  if (odd) throw new Error(`${WHERE}: every embedding must have inputs.embeddingDim (${inputs.embeddingDim}) dimensions for the dot interaction; '${odd.column.name}' has ${odd.dimension}`);
  const embeddings = embeddingColumns(inputs, WHERE, dlrmEmbeddingInitializer);
  return (features, labels, mode) => {
    const x = numericBlock(inputs, features) as SymbolicTensor;
    const logits = dlrmTower(x, () => lookups(embeddings, features), bottomMlp, topMlp, training.seed);
    return binaryClassifierSpec(WHERE, mode, labels, logits, (loss) => singleTrainOps(WHERE, training, loss, () => new AdagradOptimizer({ learningRate: 0.05 })));
  };
}
