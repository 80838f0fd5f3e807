// DLRM on generated Criteo-like data with a planted signal: train, evaluate, print AUC.
//   npm run example:dlrm
import * as hb from '../lib';
import { dlrmModelFn } from '../lib/models/dlrm';

async function main(): Promise<void> {
  const numDense = 13;
  const tables = Array.from({ length: 8 }, (_, i) => ({ name: `C${i + 1}`, vocabularySize: 20_000, hotness: 1, alpha: 1.1 }));
  // One planted model (seed 1) for both; its rows split in two partitions so that
  // evaluation is on held-out rows.
  const input = (partitionIndex: number) => () =>
    hb.data.Dataset.synthetic({ partitionCount: 2, partitionIndex, seed: 1, numSamples: 400_000, numDense, tables }).batch(1024).prefetch(2);

  const estimator = new hb.estimator.Estimator({
    modelFn: dlrmModelFn({
      denseFeatures: Array.from({ length: numDense }, (_, i) => `I${i + 1}`),
      tables: tables.map((t) => ({ name: t.name, numBuckets: t.vocabularySize })),
      embeddingDim: 16,
      bottomMlp: [64, 16],
      topMlp: [64, 32],
      makeOptimizer: () => new hb.train.AdagradOptimizer({ learningRate: 0.05 }),
    }),
    // Seeded: the same run (and, within float rounding, on every device) each time.
    config: new hb.estimator.RunConfig({ logStepCountSteps: 50, tfRandomSeed: 1 }),
  });
  const result = await hb.estimator.trainAndEvaluate(
    estimator,
    new hb.estimator.TrainSpec({ inputFn: input(0), maxSteps: 195 }),
    new hb.estimator.EvalSpec({ inputFn: input(1), steps: 20 }),
    { evalEveryNIter: 100 },
  );
  console.log(`DLRM eval AUC ${result.auc.toFixed(4)}, loss ${result.loss.toFixed(5)} at step ${result.globalStep}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
