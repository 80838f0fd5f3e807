#!/usr/bin/env node
// What a delta checkpoint (RunConfig.saveDeltaSteps) saves against a full one, in the
// same run: a dynamic table grown to `--rows` rows, saved whole (the baseline), then
// `--steps` training steps of power-law ids over those rows, saved as a delta (the rows
// changed since the full save, and the ids removed). Prints bytes and seconds of each
// and their ratios.
//
//   node bench/delta_checkpoint.bench.js [--rows 1000000] [--dim 32] [--batch 16384] [--steps 1]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { powerLawIds } = require('./workloads');
const { record } = require('./report');

const rows = option('rows', 1_000_000);
const dim = option('dim', 32);
const batch = option('batch', 16384);
const steps = option('steps', 1);
const growBatch = 65536;

function* growInput() {
  for (let first = 0; first < rows; first += growBatch) {
    const n = Math.min(growBatch, rows - first);
    yield { features: { id: BigInt64Array.from({ length: n }, (_, i) => BigInt(first + i)) }, labels: new Float32Array(n) };
  }
}

function* stepInput() {
  for (let s = 0; s < steps; s++) {
    const ids = powerLawIds(batch, rows, 7 + s);
    yield { features: { id: ids }, labels: Float32Array.from(ids, (x) => Number(x % 2n)) };
  }
}

(async () => {
  console.log(describeMachine(hb));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-delta-bench-'));
  try {
    const fc = hb.featureColumn;
    const makeColumn = () => fc.embeddingColumn(fc.categoricalColumnWithIdentity('id'), dim, { combiner: 'sum', initializer: hb.initializers.truncatedNormal({ stddev: 0.05, seed: 1 }) });
    const estimatorOf = (column, config) =>
      new hb.estimator.Estimator({
        modelFn: (features, labels, mode) => {
          const logits = hb.math.reduceSum(fc.DenseFeatures([column])(features), 1, true);
          const loss = hb.losses.sigmoidCrossEntropy(labels, logits);
          return hb.estimator.EstimatorSpec({ mode, loss, trainOp: new hb.train.AdagradOptimizer({ learningRate: 0.05 }).minimize(loss) });
        },
        modelDir: dir,
        config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, keepCheckpointMax: 0, ...config }),
      });
    const timed = async (save) => {
      const t0 = process.hrtime.bigint();
      const file = await save();
      return { seconds: Number(process.hrtime.bigint() - t0) / 1e9, bytes: fs.statSync(file).size, file };
    };
    // The table grown (its end-of-training save is a full checkpoint), then the same full
    // save again, timed: the baseline.
    const grown = estimatorOf(makeColumn(), { saveCheckpointsSteps: 0 });
    await grown.train(growInput, { steps: Math.ceil(rows / growBatch) });
    const full = { ...(await timed(() => grown.saveCheckpoint(false))), step: grown.globalStep };
    // Restored from it, `steps` steps, and at the last (from a hook, before the end of
    // training saves a full checkpoint again) a delta against the full one, timed.
    const column = makeColumn();
    const trained = estimatorOf(column, { saveCheckpointsSteps: 0 });
    let delta;
    let changed = 0;
    const timeDelta = {
      afterRun: async ({ globalStep }) => {
        if (globalStep !== full.step + steps) return;
        delta = await timed(() => trained.saveCheckpoint(true));
        const loaded = await hb.estimator.loadCheckpoint(delta.file);
        if (loaded.metadata.hb_delta_base === undefined) throw new Error('the timed save was not a delta');
        changed = loaded.tensors.get(`${column.embeddingTable.name}/ids`).shape[0];
      },
    };
    await trained.train(stepInput, { steps, hooks: [timeDelta] });
    console.log(`dynamic table: ${column.embeddingTable.stats().rows} rows x ${dim} (Adagrad slot beside), then ${steps} step(s) of ${batch} power-law ids`);
    console.log(`full save:  ${(full.bytes / 2 ** 20).toFixed(1)} MiB in ${full.seconds.toFixed(3)} s`);
    console.log(`delta save: ${(delta.bytes / 2 ** 20).toFixed(2)} MiB in ${delta.seconds.toFixed(3)} s (${changed} rows changed)`);
    console.log(`ratio delta / full: ${(delta.bytes / full.bytes).toFixed(4)} of the bytes, ${(delta.seconds / full.seconds).toFixed(3)} of the time`);
    const what = `delta save after ${steps} step(s) of ${batch} ids (${rows} rows x ${dim})`;
    record({ workload: `${what} vs a full save: bytes`, value: delta.bytes / 2 ** 20, baseline: full.bytes / 2 ** 20, unit: 'MiB', higherIsBetter: false, baselineName: 'full save' });
    record({ workload: `${what} vs a full save: time`, value: delta.seconds, baseline: full.seconds, unit: 's', higherIsBetter: false, baselineName: 'full save' });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
