// Wide & Deep (Cheng et al. 2016) with TF feature columns on generated data with a
// planted signal: a linear "wide" part over crossed and bucketized features plus a
// "deep" MLP over embeddings; train, evaluate, print AUC.
//   npm run example:wide_and_deep
import * as hb from '../lib';

const fc = hb.featureColumn;

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
  // hb.models.wideAndDeepModelFn: a linear part with one weight per id of each
  // categorical input (and a cross of bucketized I1 with the tags), plus an MLP over
  // their embeddings and the one-hot buckets; FTRL for the linear part, Adagrad for the
  // rest, as TF's DNNLinearCombinedClassifier.
  const modelFn = hb.models.wideAndDeepModelFn({
    inputs: {
      numeric: [fc.indicatorColumn(i1)],
      categorical: [
        { column: user, dimension: 16 },
        { column: item, dimension: 16 },
        { column: tags, dimension: 8, embedding: { combiner: 'mean' } },
        { column: fc.crossedColumn([i1, 'tags'], 10_000), dimension: 8 },
      ],
      embeddingDim: 16,
    },
    hiddenUnits: [64, 32],
    makeOptimizer: () => new hb.train.AdagradOptimizer({ learningRate: 0.05 }),
    makeWideOptimizer: () => new hb.train.FtrlOptimizer({ learningRate: 0.1 }),
    seed: 1,
  });

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
