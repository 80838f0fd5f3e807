#!/usr/bin/env node
// A dynamic table's training step (lookup, backward, Adagrad on the rows seen, rows made
// for new ids) against a fixed table holding the same distinct ids, in the same run:
// the price of the hash index. Ids are raw 64-bit values drawn from a power law (alpha
// 1.1) over `--distinct` keys; the fixed table gets each key's rank as its row (the
// mapping a vocabulary would do ahead of time), so both see the same rows.
//
//   node bench/dynamic_table.bench.js [--distinct 1000000] [--dim 64] [--batch 16384] [--steps 40]
//
// Prints steps/s and ids/s of each, their ratio, the dynamic table's rows and the
// process's RSS (the rows made, not the id range), and where a dynamic step's time goes
// (the host index is the dynamic_rows kernel).
//
// On a GPU (HB_DEVICE=cuda) a third contender: the dynamic table with its rows in host
// memory (embDevice 'cpu', the rows crossing to the device and the update on the host)
// against the default, rows on the device with the index on the host.
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { timeInterleaved } = require('./timing');
const { record } = require('./report');
const { printStepBreakdown } = require('./breakdown');

const distinct = option('distinct', 1_000_000);
const dim = option('dim', 64);
const batch = option('batch', 16384);
const hotness = 1; // one id per example (a dense feature)
const steps = option('steps', 40);

// Power-law ranks (inverse CDF of a Zipf-like law), fixed seed.
function powerLawRanks(n, seed) {
  const out = new Int32Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    const u = (x + 0.5) / 2 ** 32;
    out[i] = Math.min(distinct - 1, Math.floor(Math.pow(distinct, u) - 1) % distinct);
  }
  return out;
}
// A raw 64-bit key per rank: a bijection on the low 62 bits, so keys spread over the id range.
const keyOf = (r) => (BigInt(r) * 0x9e3779b97f4a7c15n) & ((1n << 62n) - 1n);

// Warm-up and timed steps, then 5 profiled ones.
const batches = Array.from({ length: steps + 3 + 5 }, (_, s) => {
  const ranks = powerLawRanks(batch * hotness, 17 + s);
  const keys = new BigInt64Array(ranks.length);
  for (let i = 0; i < ranks.length; i++) keys[i] = keyOf(ranks[i]);
  const labels = Float32Array.from({ length: batch }, (_, b) => ranks[b * hotness] % 2);
  return {
    dynamic: { features: { id: keys }, labels },
    fixed: { features: { id: BigInt64Array.from(ranks, (r) => BigInt(r)) }, labels },
  };
});

async function stepper(kind) {
  const fc = hb.featureColumn;
  const dynamic = kind !== 'fixed';
  const categorical = dynamic ? fc.categoricalColumnWithIdentity('id') : fc.categoricalColumnWithIdentity('id', distinct);
  const column = fc.embeddingColumn(categorical, dim, {
    combiner: 'sum',
    initializer: hb.initializers.truncatedNormal({ stddev: 0.05, seed: 1 }),
    ...(kind === 'dynamic-host' ? { embDevice: 'cpu' } : {}),
  });
  const { features, labels } = await hb.train.inputs(batches.map((b) => b[dynamic ? 'dynamic' : 'fixed']));
  const logits = hb.math.reduceSum(fc.DenseFeatures([column])(features), 1, true);
  const loss = hb.losses.sigmoidCrossEntropy(labels, logits);
  const trainOp = new hb.train.AdagradOptimizer({ learningRate: 0.05 }).minimize(loss);
  const sess = new hb.train.MonitoredTrainingSession({ log: () => undefined });
  return { run: () => sess.run(trainOp), column, sess };
}

(async () => {
  console.log(describeMachine(hb));
  const onGpu = hb.currentDevice() !== 'cpu';
  console.log(`dynamic vs fixed table on ${hb.currentDevice()}: ${distinct} keys (power law), dim ${dim}, batch ${batch} x ${hotness} ids, Adagrad, ${steps} steps each`);
  const dynamic = await stepper('dynamic');
  const fixed = await stepper('fixed');
  const hostRows = onGpu ? await stepper('dynamic-host') : undefined;
  const runs = [() => dynamic.run(), () => fixed.run(), ...(hostRows ? [() => hostRows.run()] : [])];
  const [tDynamic, tFixed, tHost] = await timeInterleaved(runs, steps);
  const ids = batch * hotness;
  const stats = dynamic.column.embeddingTable.stats();
  const where = onGpu ? ` (rows on ${dynamic.column.embeddingTable.variable.device}, index in host memory)` : '';
  console.log(`dynamic${where}: ${(1 / tDynamic).toFixed(1)} steps/s, ${(ids / tDynamic / 1e6).toFixed(2)} M ids/s; rows ${stats.rows}, made ${stats.admitted}`);
  console.log(`fixed:   ${(1 / tFixed).toFixed(1)} steps/s, ${(ids / tFixed / 1e6).toFixed(2)} M ids/s`);
  console.log(`ratio dynamic / fixed: ${(tFixed / tDynamic).toFixed(2)}x`);
  record({
    workload: `dynamic table step (${distinct} power-law keys, dim ${dim}, batch ${batch}) vs a fixed table`,
    value: 1 / tDynamic, baseline: 1 / tFixed, unit: 'steps/s', baselineName: 'fixed table, same keys',
  });
  if (hostRows) {
    console.log(`dynamic, rows in host memory (embDevice 'cpu'): ${(1 / tHost).toFixed(1)} steps/s; rows on the device are ${(tHost / tDynamic).toFixed(2)}x its speed`);
    record({
      workload: `dynamic table step, rows on the GPU vs rows in host memory (${distinct} keys, dim ${dim}, batch ${batch})`,
      value: 1 / tDynamic, baseline: 1 / tHost, unit: 'steps/s', baselineName: "dynamic table, rows in host memory (embDevice 'cpu')",
    });
  }
  await printStepBreakdown(hb, async () => {
    for (let s = 0; s < 5; s++) await dynamic.run();
  }, 5, { top: 6 });
  console.log(`RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB (fixed table ${((distinct * dim * 8) / 2 ** 20).toFixed(0)} MiB with its Adagrad slot)`);
  await dynamic.sess.close();
  await fixed.sess.close();
  if (hostRows) await hostRows.sess.close();
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
