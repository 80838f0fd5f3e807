// Wide & Deep (Cheng et al. 2016) with TF feature columns on generated data with a
// planted signal: a linear "wide" part over crossed and bucketized features plus a
// "deep" MLP over embeddings; train, evaluate, print AUC.
//   npm run example:wide_and_deep
import * as hb from '../lib';

const fc = hb.featureColumn;
const m = hb.math;

async function main(): Promise<void> {
  const tables = [
    { name: 'user', vocabularySize: 50_000, hotness: 1, alpha: 1.05 },
    { name: 'item', vocabularySize: 20_000, hotness: 1, alpha: 1.1 },
    { name: 'tags', vocabularySize: 2_000, hotness: [1, 4] as [number, number], alpha: 1.2 },
  ];
  // One planted model (seed 1) for both; its rows split in two partitions so that
  // evaluation is on held-out rows.
  const input = (partitionIndex: number) => () =>
    hb.data.Dataset.synthetic({ partitionCount: 2, partitionIndex, seed: 1, numSamples: 400_000, numDense: 4, tables }).batch(1024).prefetch(2);

  const user = fc.categoricalColumnWithIdentity('user', 50_000);
  const item = fc.categoricalColumnWithIdentity('item', 20_000);
  const tags = fc.categoricalColumnWithIdentity('tags', 2_000);
  const i1 = fc.bucketizedColumn(fc.numericColumn('I1'), [1, 3, 10, 30, 100]);
  // Wide: one weight per id (a 1-wide embedding summed is a linear model), and a cross.
  const wide = [
    fc.embeddingColumn(user, 1, { combiner: 'sum' }),
    fc.embeddingColumn(item, 1, { combiner: 'sum' }),
    fc.embeddingColumn(fc.crossedColumn([i1, 'tags'], 10_000), 1, { combiner: 'sum' }),
  ];
  const deep = [
    fc.embeddingColumn(user, 16),
    fc.embeddingColumn(item, 16),
    fc.embeddingColumn(tags, 8, { combiner: 'mean' }),
    fc.indicatorColumn(i1),
  ];

  const modelFn: hb.estimator.ModelFn = (features, labels, mode) => {
    const wideLogit = m.reduceSum(fc.DenseFeatures(wide)(features), 1, true);
    let h = fc.DenseFeatures(deep)(features);
    for (const units of [64, 32]) h = hb.layers.dense(h, units, { activation: 'relu' });
    const logits = m.add(wideLogit, hb.layers.dense(h, 1));
    const probs = hb.nn.sigmoid(logits);
    if (mode === hb.estimator.ModeKeys.PREDICT) return hb.estimator.EstimatorSpec({ mode, predictions: { probs } });
    const y = labels as hb.SymbolicTensor;
    const loss = hb.losses.sigmoidCrossEntropy(y, logits);
    if (mode === hb.estimator.ModeKeys.EVAL) return hb.estimator.EstimatorSpec({ mode, loss, evalMetricOps: { auc: hb.metrics.auc(y, probs) } });
    // FTRL for the wide tables, Adagrad for the rest, as TF's DNNLinearCombinedClassifier.
    const wideVars = wide.map((c) => c.variable);
    const deepVars = hb.train.trainableVariables().filter((v) => !wideVars.includes(v));
    return hb.estimator.EstimatorSpec({
      mode,
      loss,
      trainOp: [
        new hb.train.FtrlOptimizer({ learningRate: 0.1 }).minimize(loss, { varList: wideVars }),
        new hb.train.AdagradOptimizer({ learningRate: 0.05 }).minimize(loss, { varList: deepVars }),
      ],
    });
  };

  const estimator = new hb.estimator.Estimator({ modelFn, config: new hb.estimator.RunConfig({ logStepCountSteps: 50 }) });
  const result = await hb.estimator.trainAndEvaluate(
    estimator,
    new hb.estimator.TrainSpec({ inputFn: input(0), maxSteps: 195 }),
    new hb.estimator.EvalSpec({ inputFn: input(1), steps: 20 }),
    { evalEveryNIter: 100 },
  );
  console.log(`Wide & Deep eval AUC ${result.auc.toFixed(4)}, loss ${result.loss.toFixed(5)} at step ${result.globalStep}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
