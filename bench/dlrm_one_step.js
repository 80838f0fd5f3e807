#!/usr/bin/env node
// The DLRM bench's model (bench/workloads.js dlrmTrainer: 26 tables of 100k x 64, Adagrad)
// trained for 2 + 1 steps at the given batch, for a profiler to watch (scripts/gpu-check.sh
// profile runs it under Nsight Compute). Not a bench: it prints the last step's time only.
//
//   [HB_DEVICE=cuda] node bench/dlrm_one_step.js [batch=65536]
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { dlrmTrainer } = require('./workloads');

async function main() {
  const batch = Number(process.argv[2] || 65536);
  if (!Number.isInteger(batch) || batch < 1) throw new RangeError(`batch must be a positive integer, got ${process.argv[2]}`);
  const trainer = await dlrmTrainer(hb, { rows: 100_000, dim: 64, batch });
  const { msPerStep } = await trainer.time(1);
  console.log(`DLRM step on ${hb.currentDevice()}, batch ${batch}: ${msPerStep.toFixed(1)} ms`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
