#!/usr/bin/env node
// DLRM training steps through the Estimator on the current device: 13 dense features,
// 26 tables of 100k rows x 64, MLPs 512-256-64 / 512-256-1, batch 4096, Adagrad.
// Prints steps/s, the share of step time spent outside native code (the Estimator loop,
// feed building, hooks: should be near zero), and the ratio to PyTorch's CPU step on
// the same shapes and thread count when /usr/bin/python3 has torch.
//
//   node bench/dlrm_step.bench.js [--rows 100000] [--dim 64] [--batch 4096] [--steps 20]
'use strict';
const path = require('path');
const { spawnSync } = require('child_process');
const hb = require(path.resolve(__dirname, '..'));
const { dlrmModelFn } = require(path.resolve(__dirname, '..', 'dist', 'models', 'dlrm'));
const { describeMachine } = require('./machine');
const { option } = require('./options');

const rows = option('rows', 100_000);
const dim = option('dim', 64);
const batch = option('batch', 4096);
const steps = option('steps', 20);
const numDense = 13;
const numTables = 26;
const bottom = [512, 256, dim];
const top = [512, 256];

async function main() {
  console.log(describeMachine(hb));
  const tables = Array.from({ length: numTables }, (_, i) => ({ name: `C${i + 1}`, vocabularySize: rows, hotness: 1, alpha: 1.1 }));
  // Batches made up front: this measures the training step, not the reader (bench/data).
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
      bottomMlp: bottom,
      topMlp: top,
      makeOptimizer: () => new hb.train.AdagradOptimizer({ learningRate: 0.05 }),
    }),
    config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, logStepCountSteps: 0 }),
  });
  // Warm-up: graph build, compile, first allocation of the plan's storage.
  await estimator.train(input, { steps: 2 });
  let nativeMs = 0;
  const hook = { afterRun: (info) => void (nativeMs += info.nativeMs) };
  const start = process.hrtime.bigint();
  await estimator.train(input, { steps, hooks: [hook] });
  const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
  const stepMs = wallMs / steps;
  console.log(`hb-ts DLRM step: ${rows} rows x ${dim} x ${numTables} tables, MLPs ${bottom.join('-')} / ${top.join('-')}-1, batch ${batch}, Adagrad`);
  console.log(`  ${(1000 / stepMs).toFixed(2)} steps/s (${stepMs.toFixed(1)} ms/step, ${Math.round((batch * 1000) / stepMs)} samples/s)`);
  console.log(`  share of step time outside native code: ${(Math.max(0, 1 - nativeMs / wallMs) * 100).toFixed(1)}%`);

  const peer = spawnSync('/usr/bin/python3', [
    path.join(__dirname, 'peers', 'torch_dlrm.py'),
    String(numDense), String(numTables), String(rows), String(dim), String(batch), String(Math.max(5, Math.min(steps, 10))), String(hb.backend().threads),
    bottom.join(','), [...top, 1].join(','),
  ], { encoding: 'utf8' });
  if (peer.status === 0) {
    const r = JSON.parse(peer.stdout.trim().split('\n').pop());
    const torchMs = r.seconds_per_step * 1000;
    console.log(`  PyTorch ${r.torch} (${r.threads} threads): ${torchMs.toFixed(1)} ms/step -> hb-ts runs at ${(torchMs / stepMs).toFixed(2)}x PyTorch's speed`);
  } else {
    console.log(`  PyTorch peer not run (${(peer.stderr || peer.error || 'no /usr/bin/python3 with torch').toString().trim().split('\n').pop()})`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
