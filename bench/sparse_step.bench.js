#!/usr/bin/env node
// One full sparse training step on the current device: lookup forward, backward to
// IndexedSlices, Adagrad update. Next to a copy of the same number of bytes on that
// device (host memcpy on the CPU, device-to-device on a GPU), timed interleaved with the
// steps through the same async path.
//
//   [HB_DEVICE=cpu|cuda|cuda:N] node bench/sparse_step.bench.js [--rows 1000000] [--dim 64] [--batch 8192] [--features 26] [--alpha 1.1] [--iters 20]
//
// The current device is HB_DEVICE's, else CUDA when usable, else the CPU. On a GPU the
// table, its accumulator, the upstream gradient and both copy buffers live there; only
// the ids go over from the host, as in training.
//
// Ids: `features` per example, drawn from a power law over the rows (inverse CDF of a
// continuous power law with exponent alpha), then scattered by a fixed permutation so
// hot ids are not the low ones. Bytes per step: the gathered rows (ids x dim x 4) plus
// the touched rows' read and write of weights and accumulators (4 x unique x dim x 4).
// Today a step is three native calls (lookup, backward, update); the compiled plan of
// the training issue will make it one.
//
// The PyTorch peer (bench/peers/torch_sparse_step.py: nn.EmbeddingBag with sparse=True and
// torch.optim.Adagrad, the same ids, shapes, learning rate and initial accumulator) runs
// after ours on the same device when its Python has torch (bench/torch_peer.js).
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { seededUniform, sparseAdagradStep } = require('./workloads');
const { runTorchPeer, blasLine, ratioText } = require('./torch_peer');
const { record } = require('./report');

const rows = option('rows', 1_000_000);
const dim = option('dim', 64);
const batch = option('batch', 8192);
const features = option('features', 26);
const alpha = option('alpha', 1.1);
const iters = option('iters', 20);

function powerLawIds(n, seed) {
  const random = seededUniform(seed);
  const ids = new BigInt64Array(n);
  const top = Math.pow(rows, 1 - alpha);
  for (let i = 0; i < n; i++) {
    // rank in [1, rows] with P(rank) ~ rank^-alpha
    const rank = Math.min(rows, Math.floor(Math.pow(1 + (top - 1) * random(), 1 / (1 - alpha))));
    // a fixed multiplicative permutation of 0..rows-1 (rows and the odd multiplier are coprime when rows is not a multiple of it)
    ids[i] = BigInt((((rank - 1) * 2654435761) % rows + rows) % rows);
  }
  return ids;
}

async function main() {
  console.log(describeMachine(hb));
  const device = hb.currentDevice();
  const splits = Int32Array.from({ length: batch + 1 }, (_, i) => i * features);
  const batches = [1, 2, 3].map((seed) => hb.ragged(powerLawIds(batch * features, seed), splits));
  const uniqueCounts = await Promise.all(batches.map(async (b) => (await hb.unique(b.values)).uniqueIds.length));
  const meanUnique = uniqueCounts.reduce((a, b) => a + b, 0) / uniqueCounts.length;
  const bytes = batch * features * dim * 4 + 4 * meanUnique * dim * 4;

  const sparseStep = sparseAdagradStep(hb, { rows, dim, batch, name: 'sparse_step_table' });
  const step = (i) => sparseStep(batches[i % batches.length]);
  const copyElements = Math.round(bytes / 4);
  const copyFrom = hb.variable(hb.initializers.ones(), { shape: [copyElements] });
  const copyTo = hb.variable(hb.initializers.zeros(), { shape: [copyElements] });
  const copy = () => copyTo.assign(copyFrom);

  for (let i = 0; i < 2; i++) (await step(i), await copy());
  const stepTimes = [];
  const copyTimes = [];
  for (let i = 0; i < iters; i++) {
    let start = process.hrtime.bigint();
    await step(i);
    stepTimes.push(Number(process.hrtime.bigint() - start) / 1e9);
    start = process.hrtime.bigint();
    await copy();
    copyTimes.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  const median = (t) => t.sort((a, b) => a - b)[Math.floor(t.length / 2)];
  const stepSeconds = median(stepTimes);
  const copySeconds = median(copyTimes);
  console.log(
    `sparse step on ${device} (lookup + backward + Adagrad): table ${rows}x${dim}, batch ${batch}, ${features} ids/example, ` +
      `power law alpha ${alpha} (${Math.round(meanUnique)} unique rows/step): ${(1 / stepSeconds).toFixed(1)} steps/s ` +
      `(${(stepSeconds * 1e3).toFixed(1)} ms), ${(bytes / stepSeconds / 1e9).toFixed(2)} GB/s effective | ` +
      `copy of the same ${(bytes / 1e6).toFixed(1)} MB: ${(bytes / copySeconds / 1e9).toFixed(2)} GB/s | ` +
      `ratio step/copy = ${(copySeconds / stepSeconds).toFixed(2)}`,
  );
  const workload = `step on ${device} (${rows}x${dim}, batch ${batch}, ${features} ids/example)`;
  record({ workload: `${workload} vs a copy of its bytes`, value: bytes / stepSeconds / 1e9, baseline: bytes / copySeconds / 1e9, unit: 'GB/s', baselineName: 'copy' });

  // 0.01: the learning rate of workloads.js's sparseAdagradStep (it does not change the work).
  const threads = hb.backend().threads;
  const torch = runTorchPeer('torch_sparse_step.py', [rows, dim, batch, features, alpha, iters, threads, 0.01], { threads, device });
  if (torch.error) {
    console.log(`  PyTorch peer not run (${torch.error})`);
    return;
  }
  console.log(`  ${blasLine(torch)}`);
  const torchSeconds = torch.result.seconds_per_step;
  console.log(
    `  PyTorch ${torch.result.torch} EmbeddingBag(sum, sparse=True) + optim.Adagrad, ${torch.result.threads} threads, same ids ` +
      `(${Math.round(torch.result.unique_rows)} unique rows/step): ${(1 / torchSeconds).toFixed(1)} steps/s (${(torchSeconds * 1e3).toFixed(1)} ms); ` +
      ratioText(torch, `hb-ts is ${(torchSeconds / stepSeconds).toFixed(2)}x its speed`),
  );
  if (!torch.reference) {
    record({
      workload: `${workload} vs PyTorch`,
      value: stepSeconds * 1e3, baseline: torchSeconds * 1e3, unit: 'ms/step', higherIsBetter: false,
      baselineName: `PyTorch ${torch.result.torch} EmbeddingBag(sparse) + Adagrad, ${torch.result.threads} threads`, target: 2,
    });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
