// DeepFM (Guo et al. 2017) as a modelFn: a first-order linear term, the factorization
// machine's pairwise term over the categorical embeddings, and an MLP over the same
// embeddings (and the numeric inputs), their logits summed.
import { add } from '../graph/ops/elementwise';
import { ModelFn } from '../estimator/estimator';
import { fmInteraction } from '../layers';
import { AdagradOptimizer } from '../train/optimizers';
import {
  binaryClassifierSpec,
  checkConfig,
  checkInputs,
  checkTraining,
  checkUnits,
  deepFMEmbeddingInitializer,
  embeddingColumns,
  joined,
  linearColumns,
  linearLogit,
  logitLayer,
  lookups,
  mlp,
  ModelInputs,
  ModelTraining,
  numericBlock,
  TRAINING_KEYS,
  wideAndDeepTrainOps,
} from './model_inputs';

export interface DeepFMConfig extends ModelTraining {
  /** At least two categorical inputs (the FM's fields), all of one embedding dimension. */
  inputs: ModelInputs;
  /** The deep part's relu layers; a 1-unit logit layer follows. */
  hiddenUnits: number[];
}

/**
 * DeepFM: logit = first-order term (one weight per id, numeric x w, bias; variables under
 * `linear/linear_model/`) + hb.layers.fmInteraction(embeddings) + MLP(concat(numeric,
 * embeddings)) (`dnn/hiddenlayer_<i>`, `dnn/logits`). The FM and the MLP share the
 * embeddings. Adagrad (0.05) for all by default; makeWideOptimizer trains the first-order
 * term apart. Embeddings without an initializer start as a normal of stddev 0.01
 * (the DeepFM paper's code).
 */
export function deepFMModelFn(config: DeepFMConfig): ModelFn {
  const where = 'deepFMModelFn';
  const given = checkConfig(config, ['inputs', 'hiddenUnits', ...TRAINING_KEYS], where);
  const inputs = checkInputs(given.inputs, where);
  const hiddenUnits = checkUnits(given.hiddenUnits, where, 'hiddenUnits');
  const training = checkTraining(given, where);
  if (inputs.categorical.length < 2) {
    throw new Error(`${where}: the factorization machine needs at least two categorical inputs (fields), got ${inputs.categorical.length}`);
  }
  const odd = inputs.categorical.find((c) => c.dimension !== inputs.categorical[0].dimension);
  if (odd) {
    throw new Error(
      `${where}: every categorical input must have the same embedding dimension for the factorization machine; ` +
        `'${inputs.categorical[0].column.name}' has ${inputs.categorical[0].dimension} but '${odd.column.name}' has ${odd.dimension}`,
    );
  }
  const embeddings = embeddingColumns(inputs, where, deepFMEmbeddingInitializer);
  const linear = linearColumns(inputs, where);
  return (features, labels, mode) => {
    const numeric = numericBlock(inputs, features);
    const embedded = lookups(embeddings, features);
    const firstOrder = linearLogit(linear, numeric, features);
    const fm = fmInteraction(embedded, { name: 'fm' });
    const h = mlp(joined([numeric, ...embedded]), hiddenUnits, 'dnn', training.seed + 100);
    const logits = add(add(firstOrder, fm, 'linear_plus_fm'), logitLayer(h, 'dnn/logits', training.seed + 200), 'logits');
    return binaryClassifierSpec(where, mode, labels, logits, (loss) => wideAndDeepTrainOps(where, training, loss, { deep: () => new AdagradOptimizer({ learningRate: 0.05 }) }));
  };
}
