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

module.exports = { seededUint32, seededUniform, sparseAdagradStep };
