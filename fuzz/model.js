// A small DLRM on generated data, for the targets that need checkpoints on disk.
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..', 'dist', 'index.js'));
const { dlrmModelFn } = hb.models;

const tables = [{ name: 'C1', vocabularySize: 50, hotness: 2 }, { name: 'C2', vocabularySize: 30, hotness: 1 }];

function estimator(modelDir, saveEvery = 1) {
  const modelFn = dlrmModelFn({
    denseFeatures: ['I1', 'I2'],
    tables: tables.map((t) => ({ name: t.name, numBuckets: t.vocabularySize })),
    embeddingDim: 4,
    bottomMlp: [8, 4],
    topMlp: [8],
    makeOptimizer: () => new hb.train.AdamOptimizer({ learningRate: 0.01 }),
    seed: 3,
  });
  return new hb.estimator.Estimator({
    modelFn,
    modelDir,
    config: new hb.estimator.RunConfig({ saveCheckpointsSteps: saveEvery, keepCheckpointMax: 3, logStepCountSteps: 1e9 }),
  });
}

const input = (seed = 1) => () => hb.data.Dataset.synthetic({ numDense: 2, tables, numSamples: 4096, seed }).batch(64);

module.exports = { estimator, input };
