// Wide & Deep (Cheng et al. 2016) as a modelFn, TF's DNNLinearCombinedClassifier: a linear
// model over the categorical ids and the numeric inputs plus an MLP over the embeddings
// and the numeric inputs, their logits summed.
import { add } from '../graph/ops/elementwise';
import { ModelFn } from '../estimator/estimator';
import { AdagradOptimizer, FtrlOptimizer } from '../train/optimizers';
import {
  binaryClassifierSpec,
  checkConfig,
  checkInputs,
  checkTraining,
  checkUnits,
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

export interface WideAndDeepConfig extends ModelTraining {
  inputs: ModelInputs;
  /** The deep part's relu layers; a 1-unit logit layer follows. */
  hiddenUnits: number[];
}

/**
 * Wide & Deep: logit = linear (one weight per id of each categorical input, numeric x w,
 * bias; variables under `linear/linear_model/`) + MLP(concat(numeric, embeddings))
 * (`dnn/hiddenlayer_<i>`, `dnn/logits`). Optimizers as TF's DNNLinearCombinedClassifier:
 * by default FTRL (learning rate 0.1) for the linear part and Adagrad (0.05) for the deep
 * part; makeOptimizer alone trains both parts, makeWideOptimizer the linear part.
 */
export function wideAndDeepModelFn(config: WideAndDeepConfig): ModelFn {
  const where = 'wideAndDeepModelFn';
  const given = checkConfig(config, ['inputs', 'hiddenUnits', ...TRAINING_KEYS], where);
  const inputs = checkInputs(given.inputs, where);
  const hiddenUnits = checkUnits(given.hiddenUnits, where, 'hiddenUnits');
  const training = checkTraining(given, where);
  const embeddings = embeddingColumns(inputs, where);
  const linear = linearColumns(inputs, where);
  return (features, labels, mode) => {
    const numeric = numericBlock(inputs, features);
    const wide = linearLogit(linear, numeric, features);
    const h = mlp(joined([numeric, ...lookups(embeddings, features)]), hiddenUnits, 'dnn', training.seed + 100);
    const logits = add(wide, logitLayer(h, 'dnn/logits', training.seed + 200), 'logits');
    return binaryClassifierSpec(where, mode, labels, logits, (loss) =>
      wideAndDeepTrainOps(where, training, loss, {
        wide: () => new FtrlOptimizer({ learningRate: 0.1 }),
        deep: () => new AdagradOptimizer({ learningRate: 0.05 }),
      }),
    );
  };
}
