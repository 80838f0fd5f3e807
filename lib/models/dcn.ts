// DCN-v2 (Wang et al. 2021) as a modelFn, the stacked structure: the numeric inputs and
// the embeddings side by side (x0), through full-rank cross layers, then an MLP, then
// one logit.
import { ModelFn } from '../estimator/estimator';
import { glorotUniform } from '../initializers/initializers';
import { crossNetworkV2 } from '../layers';
import { AdagradOptimizer } from '../train/optimizers';
import {
  binaryClassifierSpec,
  checkConfig,
  checkInputs,
  checkPositiveInteger,
  checkTraining,
  checkUnits,
  dcnEmbeddingInitializer,
  embeddingColumns,
  joined,
  logitLayer,
  lookups,
  mlp,
  ModelInputs,
  ModelTraining,
  numericBlock,
  refuseWideOptimizer,
  singleTrainOps,
  TRAINING_KEYS,
} from './model_inputs';

export interface DcnConfig extends ModelTraining {
  inputs: ModelInputs;
  /** Cross layers (hb.layers.crossNetworkV2), >= 1. */
  crossLayers: number;
  /** The relu layers after the cross network (may be []); a 1-unit logit layer follows. */
  hiddenUnits: number[];
}

/**
 * DCN-v2, stacked: x0 = concat(numeric, embeddings) -> crossNetworkV2(x0, crossLayers)
 * (`cross/kernel_<l>`, `cross/bias_<l>`) -> MLP (`dnn/hiddenlayer_<i>`) -> `logits`.
 * Adagrad (0.05) by default; embeddings without an initializer start uniform in +-0.05,
 * as Keras' Embedding does.
 */
export function dcnModelFn(config: DcnConfig): ModelFn {
  const where = 'dcnModelFn';
  const given = checkConfig(config, ['inputs', 'crossLayers', 'hiddenUnits', ...TRAINING_KEYS], where);
  const inputs = checkInputs(given.inputs, where);
  const crossLayers = checkPositiveInteger(given.crossLayers, where, 'crossLayers');
  const hiddenUnits = checkUnits(given.hiddenUnits, where, 'hiddenUnits');
  const training = checkTraining(given, where);
  refuseWideOptimizer(where, training);
  const embeddings = embeddingColumns(inputs, where, dcnEmbeddingInitializer);
  return (features, labels, mode) => {
    const x0 = joined([numericBlock(inputs, features), ...lookups(embeddings, features)]);
    const crossed = crossNetworkV2(x0, crossLayers, { name: 'cross', kernelInitializer: (l) => glorotUniform({ seed: training.seed + 300 + l }) });
    const logits = logitLayer(mlp(crossed, hiddenUnits, 'dnn', training.seed + 100), 'logits', training.seed + 200);
    return binaryClassifierSpec(where, mode, labels, logits, (loss) => singleTrainOps(where, training, loss, () => new AdagradOptimizer({ learningRate: 0.05 })));
  };
}
