// Pieces the benchmarks share: a seeded generator and the sparse training step
// (lookup forward, backward, Adagrad) that reader and transform rates are set against.
'use strict';

/** mulberry32: a seeded stream of uint32 values, so every run draws the same data. */
function seededUint32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** Uniform floats in [0, 1) from seededUint32. */
function seededUniform(seed) {
  const next = seededUint32(seed);
  return () => next() / 4294967296;
}

/**
 * One sparse training step on a [rows, dim] table for `batch` examples: returns
 * step(ids), which looks the ids up (sum), takes the gradient of a fixed upstream and
 * applies Adagrad.
 */
function sparseAdagradStep(hb, { rows, dim, batch, name }) {
  const table = hb.variable(hb.initializers.truncatedNormal({ stddev: 0.01, seed: 1 }), { shape: [rows, dim], name });
  const optimizer = new hb.train.AdagradOptimizer({ learningRate: 0.01 });
  const upstream = hb.variable(hb.initializers.randomUniform({ minval: -1, maxval: 1, seed: 2 }), { shape: [batch, dim] });
  return async (ids) => {
    const out = await hb.nn.embeddingLookupSparse(table, ids, { combiner: 'sum' });
    const grad = await hb.nn.embeddingLookupSparseGrad(table, ids, upstream, { combiner: 'sum' });
    await optimizer.applyGradients([[grad, table]]);
    out.dispose();
    grad.values.dispose();
  };
}

/**
 * The DLRM of bench/dlrm_step.bench.js (13 dense features, 26 tables of `rows` x `dim`,
 * MLPs 512-256-dim / 512-256-1, Adagrad) in an Estimator, and an input that cycles over
 * four batches made in advance. `time(steps)` trains that many steps after two of warm-up
 * and gives ms per step and the native calls' share of it.
 */
async function dlrmTrainer(hb, { rows, dim, batch }) {
  const path = require('path');
  const { dlrmModelFn } = require(path.resolve(__dirname, '..', 'dist', 'models', 'dlrm'));
  const numDense = 13;
  const tables = Array.from({ length: 26 }, (_, i) => ({ name: `C${i + 1}`, vocabularySize: rows, hotness: 1, alpha: 1.1 }));
  const batches = [];
  for await (const b of hb.data.Dataset.synthetic({ numDense, tables, numSamples: batch * 4, seed: 1 }).batch(batch)) batches.push(b);
  const input = () => ({
    *[Symbol.iterator]() {
      for (let i = 0; ; i++) yield batches[i % batches.length];
    },
  });
  const estimator = new hb.estimator.Estimator({
    modelFn: dlrmModelFn({
      denseFeatures: Array.from({ length: numDense }, (_, i) => `I${i + 1}`),
      tables: tables.map((t) => ({ name: t.name, numBuckets: rows })),
      embeddingDim: dim,
      bottomMlp: [512, 256, dim],
      topMlp: [512, 256],
      makeOptimizer: () => new hb.train.AdagradOptimizer({ learningRate: 0.05 }),
    }),
    config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, logStepCountSteps: 0 }),
  });
  await estimator.train(input, { steps: 2 });
  return {
    numDense,
    numTables: tables.length,
    /** The model's embedding tables (shards of them, under a job). */
    tables() {
      return [...estimator.variables.values()].map((v) => v.slotOwner).filter((t) => t instanceof hb.EmbeddingTable);
    },
    async time(steps) {
      let nativeMs = 0;
      const hook = { afterRun: (info) => void (nativeMs += info.nativeMs) };
      const start = process.hrtime.bigint();
      await estimator.train(input, { steps, hooks: [hook] });
      const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
      return { msPerStep: wallMs / steps, outsideNative: Math.max(0, 1 - nativeMs / wallMs) };
    },
  };
}

/** `n` power-law ids over [0, rows): x = rows^u - 1, u uniform from an LCG seeded by `seed`. */
function powerLawIds(n, rows, seed) {
  const out = new BigInt64Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[i] = BigInt(Math.min(rows - 1, Math.floor(Math.pow(rows, (x + 0.5) / 2 ** 32) - 1)));
  }
  return out;
}

module.exports = { seededUint32, seededUniform, sparseAdagradStep, dlrmTrainer, powerLawIds };
