#!/usr/bin/env node
// DLRM training steps through the Estimator on the current device: 13 dense features,
// 26 tables of 100k rows x 64, MLPs 512-256-64 / 512-256-1, batch 4096, Adagrad; on the
// CPU then the same with rows of 16 floats (MLPs 512-256-16 / 512-256-1: the Criteo
// Kaggle DLRM's embedding width, where the dot interaction's share of the step is larger).
// Prints steps/s, the share of step time spent outside native code (the Estimator loop,
// feed building, hooks: should be near zero), where the step's time goes (a profiled run:
// phases and kernels; on the CPU the GEMMs' share of the FMA peak), and the ratio to PyTorch's step on
// the same device, shapes and thread count when the peer's Python has torch (bench/torch_peer.js:
// the BLAS it loaded is printed; no ratio against a reference-BLAS torch).
//
//   [HB_DEVICE=cpu|cuda|cuda:N] node bench/dlrm_step.bench.js [--rows 100000] [--dim 64] [--batch 4096] [--steps 20]
//   (--dim N: that width only; without it, 64 then 16 on the CPU, 64 on a GPU)
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { dlrmTrainer } = require('./workloads');
const { runTorchPeer, blasLine, ratioText } = require('./torch_peer');
const { record } = require('./report');
const { printStepBreakdown, printGemmShare } = require('./breakdown');
const { native } = require(path.resolve(__dirname, '..', 'dist', 'native'));

const rows = option('rows', 100_000);
const dimGiven = process.argv.includes('--dim');
const batch = option('batch', 4096);
const steps = option('steps', 20);
const numDense = 13;
const numTables = 26;
const top = [512, 256];

async function main() {
  console.log(describeMachine(hb));
  const peak = hb.currentDevice() === 'cpu' ? native.measureFmaPeak(0.5) : undefined;
  const dims = dimGiven ? [option('dim', 64)] : hb.currentDevice() === 'cpu' ? [64, 16] : [64];
  for (const dim of dims) await measure(dim, peak);
}

async function measure(dim, peak) {
  const bottom = [512, 256, dim];
  const trainer = await dlrmTrainer(hb, { rows, dim, batch });
  const { msPerStep: stepMs, outsideNative } = await trainer.time(steps);
  console.log(`hb-ts DLRM step: ${rows} rows x ${dim} x ${numTables} tables, MLPs ${bottom.join('-')} / ${top.join('-')}-1, batch ${batch}, Adagrad`);
  console.log(`  ${(1000 / stepMs).toFixed(2)} steps/s (${stepMs.toFixed(1)} ms/step, ${Math.round((batch * 1000) / stepMs)} samples/s)`);
  console.log(`  share of step time outside native code: ${(outsideNative * 100).toFixed(1)}%`);
  const profiled = await printStepBreakdown(hb, () => trainer.time(steps), steps);
  if (hb.currentDevice() === 'cpu') {
    // Forward multiply-adds per example: the MLP layers (the top one takes the bottom
    // MLP's output beside the (F choose 2) pair dots); the backward does dX and dW of
    // each layer but the first's dX.
    const features = numTables + 1;
    const widths = [[numDense, ...bottom], [(features * (features - 1)) / 2 + dim, ...top, 1]];
    const layers = widths.flatMap((w) => w.slice(1).map((out, i) => [w[i], out]));
    const forward = layers.reduce((sum, [inputs, out]) => sum + inputs * out, 0);
    const flops = 2 * batch * (3 * forward - layers[0][0] * layers[0][1]);
    printGemmShare(peak, profiled, flops, steps, `DLRM step's GEMMs (dim ${dim}, batch ${batch}) vs the FMA peak`);
  }

  // The peer's ids follow the same power law as Dataset.synthetic's (alpha 1.1, as workloads.js's dlrmTrainer).
  const threads = hb.backend().threads;
  const peer = runTorchPeer('torch_dlrm.py', [
    numDense, numTables, rows, dim, batch, Math.max(5, Math.min(steps, 10)), threads, bottom.join(','), [...top, 1].join(','), 1.1,
  ], { threads, device: hb.currentDevice() });
  if (peer.error) {
    console.log(`  PyTorch peer not run (${peer.error})`);
  } else {
    const r = peer.result;
    const torchMs = r.seconds_per_step * 1000;
    console.log(`  ${blasLine(peer)}`);
    console.log(`  PyTorch ${r.torch} (${r.threads} threads): ${torchMs.toFixed(1)} ms/step -> ${ratioText(peer, `hb-ts runs at ${(torchMs / stepMs).toFixed(2)}x PyTorch's speed`)}`);
    if (!peer.reference) {
      record({
        workload: `DLRM step on ${hb.currentDevice()} (${numTables} tables ${rows}x${dim}, batch ${batch}) vs PyTorch`,
        value: stepMs, baseline: torchMs, unit: 'ms/step', higherIsBetter: false,
        // The 3x target is the CPU's (issue 18); on a GPU the figure is reported against the peer.
        baselineName: `PyTorch ${r.torch}, ${r.threads} threads`, target: hb.currentDevice() === 'cpu' ? 3 : undefined,
      });
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
