#!/usr/bin/env node
// DLRM training steps through the Estimator on the current device: 13 dense features,
// 26 tables of 100k rows x 64, MLPs 512-256-64 / 512-256-1, batch 4096, Adagrad.
// Prints steps/s, the share of step time spent outside native code (the Estimator loop,
// feed building, hooks: should be near zero), and the ratio to PyTorch's CPU step on
// the same shapes and thread count when /usr/bin/python3 has torch.
//
//   [HB_DEVICE=cpu|cuda|cuda:N] node bench/dlrm_step.bench.js [--rows 100000] [--dim 64] [--batch 4096] [--steps 20]
'use strict';
const path = require('path');
const { spawnSync } = require('child_process');
const hb = require(path.resolve(__dirname, '..'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { dlrmTrainer } = require('./workloads');

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
  const trainer = await dlrmTrainer(hb, { rows, dim, batch });
  const { msPerStep: stepMs, outsideNative } = await trainer.time(steps);
  console.log(`hb-ts DLRM step: ${rows} rows x ${dim} x ${numTables} tables, MLPs ${bottom.join('-')} / ${top.join('-')}-1, batch ${batch}, Adagrad`);
  console.log(`  ${(1000 / stepMs).toFixed(2)} steps/s (${stepMs.toFixed(1)} ms/step, ${Math.round((batch * 1000) / stepMs)} samples/s)`);
  console.log(`  share of step time outside native code: ${(outsideNative * 100).toFixed(1)}%`);

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
