#!/usr/bin/env node
// Embedding lookup throughput on the current device, next to a plain copy of the same
// number of bytes measured in the same run, through the same async native path.
//
//   node bench/embedding.bench.js [--rows 1000000] [--dim 64] [--batch 4096] [--hotness 20] [--iters 30]
//
// Lookup bytes = ids x dim x 4 (the rows gathered). Copy = Variable.assign of a tensor of
// that many bytes into an existing one (reads and writes them), timed interleaved with
// the lookups, and again back to back (warm cache; printed in parentheses). Ids are uniform over
// the table, the hardest case for caches. On the CPU, PyTorch's embedding_bag runs on
// the same shapes as a peer when /usr/bin/python3 has torch (bench/torch_peer.js: the
// BLAS it loaded is printed; no ratio against a reference-BLAS torch).
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { timeInterleaved } = require('./timing');
const { runTorchPeer, blasLine, ratioText } = require('./torch_peer');
const { record } = require('./report');

const rows = option('rows', 1_000_000);
const dim = option('dim', 64);
const batch = option('batch', 4096);
const hotness = option('hotness', 20);
const iters = option('iters', 30);

function uniformIds(n, seed) {
  const ids = new BigInt64Array(n);
  let x = BigInt(seed);
  for (let i = 0; i < n; i++) {
    x = (x * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    ids[i] = (x >> 20n) % BigInt(rows);
  }
  return ids;
}

async function main() {
  console.log(describeMachine(hb));
  const device = hb.currentDevice();
  const table = hb.variable(hb.initializers.randomUniform({ seed: 1 }), { shape: [rows, dim], name: 'bench_table' });
  await table.read().then((t) => t.dispose());
  const numIds = batch * hotness;
  const batches = [1, 2, 3, 4].map((seed) =>
    hb.ragged(uniformIds(numIds, seed), Int32Array.from({ length: batch + 1 }, (_, i) => i * hotness)),
  );
  const bytes = numIds * dim * 4;
  // PyTorch's embedding_bag on the same shapes (bench/peers/torch_embedding_bag.py), on the CPU.
  const threads = hb.backend().threads;
  const torch = device === 'cpu' ? runTorchPeer('torch_embedding_bag.py', [rows, dim, batch, hotness, iters, threads], { threads }) : null;
  if (torch) console.log(torch.error ? `PyTorch peer not run (${torch.error})` : blasLine(torch));

  const copyFrom = hb.variable(hb.initializers.ones(), { shape: [numIds * dim] });
  const copyTo = hb.variable(hb.initializers.zeros(), { shape: [numIds * dim] });
  for (const combiner of ['sum', 'mean']) {
    const [lookup, copy] = await timeInterleaved([
      async (i) => {
        const out = await hb.nn.embeddingLookupSparse(table, batches[i % batches.length], { combiner });
        out.dispose();
      },
      () => copyTo.assign(copyFrom),
    ], iters);
    // The same copy repeated back to back: its 2 x 21 MB then partly stay in the last-level
    // cache, so this is the kinder baseline for the copy; both are printed.
    const [warmCopy] = await timeInterleaved([() => copyTo.assign(copyFrom)], iters);
    const lookupGBs = bytes / lookup / 1e9;
    const copyGBs = bytes / copy / 1e9;
    console.log(
      `embedding lookup on ${device}: table ${rows}x${dim}, batch ${batch}, ${hotness} ids/row, ${combiner}: ` +
        `${(numIds / lookup / 1e6).toFixed(1)} M rows/s, ${lookupGBs.toFixed(2)} GB/s (${(lookup * 1e3).toFixed(2)} ms/batch) | ` +
        `copy of the same ${(bytes / 1e6).toFixed(1)} MB: ${copyGBs.toFixed(2)} GB/s (${(copy * 1e3).toFixed(2)} ms) | ` +
        `ratio lookup/copy = ${(lookupGBs / copyGBs).toFixed(2)} ` +
        `(copy back to back: ${(bytes / warmCopy / 1e9).toFixed(2)} GB/s, ratio ${(copy > 0 ? warmCopy / lookup : 0).toFixed(2)})`,
    );
    const shape = `${rows}x${dim}, batch ${batch}, ${hotness} ids/row`;
    record({ workload: `lookup (${combiner}, ${shape}) vs a copy of its bytes`, value: lookupGBs, baseline: copyGBs, unit: 'GB/s', baselineName: 'copy, interleaved', target: 0.8 });
    record({ workload: `lookup (${combiner}, ${shape}) vs the copy back to back`, value: lookupGBs, baseline: bytes / warmCopy / 1e9, unit: 'GB/s', baselineName: 'copy, back to back' });
    if (torch && !torch.error) {
      const t = torch.result.seconds[combiner];
      console.log(
        `  PyTorch ${torch.result.torch} embedding_bag(${combiner}), ${torch.result.threads} threads, same shapes: ${(t * 1e3).toFixed(2)} ms/batch; ` +
          ratioText(torch, `hb-ts is ${(t / lookup).toFixed(2)}x its speed`),
      );
      if (!torch.reference) {
        record({
          workload: `lookup (${combiner}, ${shape}) vs PyTorch embedding_bag`,
          value: lookup * 1e3, baseline: t * 1e3, unit: 'ms/batch', higherIsBetter: false,
          baselineName: `PyTorch ${torch.result.torch} embedding_bag, ${torch.result.threads} threads`, target: 1.5,
        });
      }
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
