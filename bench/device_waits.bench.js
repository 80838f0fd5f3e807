#!/usr/bin/env node
// How often a compiled GPU training step makes the host wait for the device, counted on
// the emulated CUDA device (which counts every stream, event and device synchronisation
// and every copy that waits for its stream): the DLRM of bench/dlrm_step.bench.js (26
// tables, MLPs 512-256-dim / 512-256-1, Adagrad) at a small size, next to the updates
// the step makes (before, each update and each copy into the device waited: 401 waits a
// step). Each wait leaves a GPU idle until the host queues more work; the count does not
// depend on the emulation, its speed does, so only the count is printed.
//
//   HB_ADDON=build-emu/Release/hb.node HB_DEVICE=cuda-emulated node bench/device_waits.bench.js [--rows 1000] [--dim 16] [--batch 256] [--steps 4]
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { native } = require(path.resolve(__dirname, '..', 'dist', 'native'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { dlrmTrainer } = require('./workloads');
const { record } = require('./report');

const rows = option('rows', 1000);
const dim = option('dim', 16);
const batch = option('batch', 256);
const steps = option('steps', 4);

async function main() {
  if (!hb.backend().cuda.emulated || !hb.currentDevice().startsWith('cuda')) {
    console.log('device_waits.bench.js: skipped, it counts on the emulated CUDA device (HB_CUDA_EMULATE=ON build, HB_DEVICE=cuda-emulated)');
    return;
  }
  console.log(describeMachine(hb));
  const trainer = await dlrmTrainer(hb, { rows, dim, batch });
  const updates = trainer.tables().length + 12; // each table, and the 6 dense layers' kernels and biases
  const before = native.cudaEmulation();
  await trainer.time(steps);
  const after = native.cudaEmulation();
  const waits = (after.hostWaits - before.hostWaits) / steps;
  const launches = (after.launches - before.launches) / steps;
  console.log(`DLRM step on the emulated device (26 tables ${rows} x ${dim}, batch ${batch}): ${waits.toFixed(1)} host waits per step, ${updates} updates, ${launches.toFixed(0)} kernel launches`);
  record({
    workload: `DLRM step (26 tables), host waits for the device per step vs the updates it makes`,
    value: waits, baseline: updates, unit: 'per step', higherIsBetter: false, baselineName: 'updates per step (each waited before)',
  });
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
