// Lookups, their gradients and sparse updates with ids, splits, weights, combiners and
// upstream gradients that are wrong in every way, disturbed while queued.
'use strict';
module.exports = {
  name: 'embedding',
  async run(r, { hb, attempt }) {
    const rows = r.pick([0, 1, 3, 17, r.int(0, 64)]);
    const dim = r.chance(0.9) ? r.int(1, 16) : r.pick([0, -1, 2 ** 20]);
    const table = await attempt('variable', () => hb.variable(hb.initializers.randomUniform({ seed: r.int(0, 100) }), { shape: [rows, dim], name: `fuzz_${r.int(0, 1e9)}` }));
    if (!table) return;
    const batch = r.int(0, 12);
    // Now and then rows in more than 256 entries: their gradients are summed in blocks.
    const nIds = r.chance(0.9) ? r.int(0, 40) : r.int(257, 1500);
    const ids = r.typedArray(r.chance(0.9) ? r.pick(['i64', 'i32']) : 'f32', nIds, () => (r.chance(0.9) ? r.int(0, Math.max(rows - 1, 0)) : r.pick([r.int(-2, rows + 2), 2 ** 40, -(2 ** 40)])), 0.1);
    let splits = Array.from({ length: batch + 1 }, (_, i) => Math.round((i * nIds) / Math.max(batch, 1)));
    if (r.chance(0.3)) splits = splits.map((s) => (r.chance(0.2) ? r.pick([-1, nIds + 1, s + 1, NaN]) : s));
    const splitArray = r.chance(0.9) ? Int32Array.from(splits) : r.typedArray('any', batch + 1).array;
    const weights = r.chance(0.4) ? r.typedArray(r.chance(0.9) ? 'f32' : 'f64', r.chance(0.9) ? nIds : nIds + 1, () => (r.chance(0.9) ? r.next() : r.number()), 0.1).array : undefined;
    const ragged = await attempt('ragged', () => hb.ragged(ids.array, splitArray, weights));
    if (!ragged) return;
    const options = { combiner: r.chance(0.9) ? r.pick(['sum', 'mean', 'sqrtn', undefined]) : 'max', ...(r.chance(0.2) ? { maxNorm: r.chance(0.8) ? r.next() * 2 : r.number() } : {}) };
    const lookup = attempt('lookup', () => hb.nn.embeddingLookupSparse(table, ragged, options));
    if (r.chance(0.3)) r.disturb(ids);
    await lookup;
    const upstreamShape = r.chance(0.8) ? [Math.max(splitArray.length - 1, 0), dim] : r.shape(r.size());
    const upstreamSize = Array.isArray(upstreamShape) ? upstreamShape.reduce((a, b) => a * (Number(b) || 0), 1) : r.size();
    const upstreamValues = new Float32Array(Number.isSafeInteger(upstreamSize) && upstreamSize >= 0 && upstreamSize < 1e6 ? upstreamSize : 1);
    upstreamValues.forEach((_, i) => (upstreamValues[i] = r.chance(0.05) ? r.number() : r.next()));
    const upstream = await attempt('upstream', () => hb.tensor(upstreamValues, upstreamShape));
    if (!upstream) return;
    const grad = await attempt('grad', () => hb.nn.embeddingLookupSparseGrad(table, ragged, upstream, options));
    if (!grad) return;
    const optimizer = r.pick([
      () => new hb.train.AdagradOptimizer({ learningRate: 0.1 }),
      () => new hb.train.AdamOptimizer({ learningRate: 0.01, lazy: r.chance(0.5) }),
      () => new hb.train.FtrlOptimizer({ learningRate: 0.1 }),
      () => new hb.train.GradientDescentOptimizer({ learningRate: r.number() }),
    ]);
    const opt = await attempt('optimizer', () => optimizer());
    if (!opt) return;
    if (r.chance(0.1)) opt.learningRate = r.number();
    await Promise.all([attempt('apply', () => opt.applyGradients([[grad, table]])), attempt('apply again', () => opt.applyGradients([[grad, table]]))]);
    if (r.chance(0.2)) {
      table.dispose?.();
      await attempt('after dispose', () => hb.nn.embeddingLookupSparse(table, ragged));
    }
  },
};
