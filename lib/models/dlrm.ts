// DLRM (Naumov et al. 2019) as a modelFn: dense features through a bottom MLP, one
// embedding per categorical feature, pairwise dot interactions, a top MLP to one logit.
// Used by `hb-ts train`, examples/dlrm.ts and bench/dlrm_step.bench.js.
import * as fc from '../feature_column';
import { SymbolicTensor } from '../graph/graph';
import { addConstant, log, relu, sigmoid } from '../graph/ops/elementwise';
import { EstimatorSpec } from '../estimator/estimator_spec';
import { ModelFn } from '../estimator/estimator';
import { Mode, ModeKeys } from '../estimator/mode_keys';
import { glorotUniform } from '../initializers/initializers';
import { dense, dotInteraction } from '../layers';
import { sigmoidCrossEntropy } from '../graph/ops/losses';
import { auc, mean } from '../metrics';
import { AdagradOptimizer } from '../train/optimizers';
import { Optimizer } from '../train/optimizer';

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

export function dlrmModelFn(config: DlrmConfig): ModelFn {
  const last = config.bottomMlp[config.bottomMlp.length - 1];
  if (last !== config.embeddingDim) throw new Error(`dlrm: the bottom MLP must end at embeddingDim (${config.embeddingDim}), got ${last}`);
  const seed = config.seed ?? 1;
  const denseColumns = config.denseFeatures.map((k) => fc.numericColumn(k));
  const embeddingColumns = config.tables.map((t) =>
    fc.embeddingColumn(fc.categoricalColumnWithIdentity(t.name, t.numBuckets), config.embeddingDim, { combiner: 'sum' }),
  );
  return (features, labels, mode: Mode) => {
    const counts = fc.DenseFeatures(denseColumns)(features);
    let x = log(addConstant(relu(counts), 1));
    config.bottomMlp.forEach((units, i) => {
      x = dense(x, units, { activation: relu, name: `bottom_mlp_${i}`, kernelInitializer: glorotUniform({ seed: seed + i }) });
    });
    const embeddings = fc.DenseFeatures(embeddingColumns, { enableConcat: false })(features) as unknown as SymbolicTensor[];
    let z = dotInteraction(x, embeddings);
    config.topMlp.forEach((units, i) => {
      z = dense(z, units, { activation: relu, name: `top_mlp_${i}`, kernelInitializer: glorotUniform({ seed: seed + 100 + i }) });
    });
    const logits = dense(z, 1, { name: 'logits', kernelInitializer: glorotUniform({ seed: seed + 200 }) });
    const probs = sigmoid(logits);
    if (mode === ModeKeys.PREDICT) return EstimatorSpec({ mode, predictions: { probs } });
    const y = labels as SymbolicTensor;
    const loss = sigmoidCrossEntropy(y, logits);
    if (mode === ModeKeys.EVAL) return EstimatorSpec({ mode, loss, evalMetricOps: { auc: auc(y, probs), meanProbability: mean(probs) } });
    const optimizer = config.makeOptimizer ? config.makeOptimizer() : new AdagradOptimizer({ learningRate: 0.05 });
    return EstimatorSpec({ mode, loss, trainOp: optimizer.minimize(loss) });
  };
}
