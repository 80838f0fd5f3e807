#!/usr/bin/env node
// The embedding lookup forward on every cell of the performance issue's grid, against
// PyTorch's embedding_bag on the same cell: combiner sum and mean, dims 16 / 64 / 128,
// batch 4096 and 16384, 1 and 20 ids per bag, uniform and power-law ids, a 1M-row table.
// Our time counts what a user waits for: the promise resolving and the result read into
// JS, three ways: into a new array (out.data()), into one array the loop reuses
// (out.data(into)), whose pages are mapped already where a new array's are new to the
// process until V8 collects the old ones, and handed over (out.data({ dispose: true })):
// the result's own memory becomes the array, with no copy. Both sides take the median of
// --iters calls per cell, after --warmup calls (a user looks up in a loop: the first calls of a cell also pay for allocator and
// heap growth, on both sides, which a handful of calls does not amortise); the two sides
// alternate over --rounds rounds (these VMs vary several-fold from run to run), and each
// cell's ratio is the median over the rounds, printed with its range.
//
//   node bench/lookup_grid.bench.js [--rows 1000000] [--iters 10] [--warmup 10] [--rounds 3] [--quick 1]
//   (--quick 1: the dim-64 cells only)
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { runTorchPeer, blasLine } = require('./torch_peer');
const { record } = require('./report');
const { seededUint32 } = require('./workloads');

const rows = option('rows', 1_000_000);
const iters = option('iters', 10);
const warmup = option('warmup', 10);
const rounds = option('rounds', 3);
const quick = option('quick', 0) === 1;

const cells = [];
for (const dim of quick ? [64] : [16, 64, 128]) {
  for (const batch of [4096, 16384]) {
    for (const hotness of [1, 20]) {
      for (const ids of ['uniform', 'powerlaw']) cells.push([dim, batch, hotness, ids]);
    }
  }
}

/** `n` ids over [0, rows): uniform, or x = rows^u - 1 (the peer draws the same way). */
function idsOf(kind, n, seed) {
  const next = seededUint32(seed);
  const out = new BigInt64Array(n);
  for (let i = 0; i < n; i++) {
    const u = (next() + 0.5) / 2 ** 32;
    out[i] = BigInt(kind === 'uniform' ? Math.floor(u * rows) : Math.min(rows - 1, Math.floor(Math.pow(rows, u) - 1)));
  }
  return out;
}

function median(xs) {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Median seconds per call; `read`: 'new' (out.data()), 'handover' (out.data({ dispose:
 * true })) or the array each result is read into.
 */
async function ourSeconds(table, batches, combiner, read) {
  const times = [];
  for (let i = 0; i < warmup + iters; i++) {
    const t0 = process.hrtime.bigint();
    const out = await hb.nn.embeddingLookupSparse(table, batches[i % batches.length], { combiner });
    if (read === 'handover') {
      await out.data({ dispose: true });
    } else {
      await (read === 'new' ? out.data() : out.data(read));
      out.dispose();
    }
    if (i >= warmup) times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return median(times);
}

async function main() {
  console.log(describeMachine(hb));
  if (hb.currentDevice() !== 'cpu') {
    console.log('lookup grid: the PyTorch peer is CPU-only; run with HB_DEVICE=cpu');
    return;
  }
  const threads = hb.backend().threads;
  const tables = new Map();
  for (const [dim] of cells) {
    if (!tables.has(dim)) {
      const table = hb.variable(hb.initializers.randomUniform({ seed: 1 }), { shape: [rows, dim], name: `grid_table_${dim}` });
      await table.read().then((t) => t.dispose());
      tables.set(dim, table);
    }
  }
  const batchesOf = cells.map(([, batch, hotness, kind], c) =>
    [1, 2, 3, 4].map((s) => hb.ragged(idsOf(kind, batch * hotness, 100 * c + s), Int32Array.from({ length: batch + 1 }, (_, i) => i * hotness))),
  );
  const ours = cells.map(() => ({ sum: [], mean: [] }));
  const oursInto = cells.map(() => ({ sum: [], mean: [] }));
  const oursHandover = cells.map(() => ({ sum: [], mean: [] }));
  const theirs = cells.map(() => ({ sum: [], mean: [] }));
  let peer;
  for (let round = 0; round < rounds; round++) {
    for (let c = 0; c < cells.length; c++) {
      const [dim, batch] = cells[c];
      for (const combiner of ['sum', 'mean']) {
        // The reads take turns going first, round by round.
        const reads = [
          async () => ours[c][combiner].push(await ourSeconds(tables.get(dim), batchesOf[c], combiner, 'new')),
          async () => oursInto[c][combiner].push(await ourSeconds(tables.get(dim), batchesOf[c], combiner, new Float32Array(batch * dim))),
          async () => oursHandover[c][combiner].push(await ourSeconds(tables.get(dim), batchesOf[c], combiner, 'handover')),
        ];
        for (let turn = 0; turn < round % reads.length; turn++) reads.push(reads.shift());
        for (const read of reads) await read();
      }
    }
    peer = runTorchPeer('torch_embedding_grid.py', [rows, iters, threads, JSON.stringify(cells), warmup], { threads });
    if (peer.error) break;
    peer.result.seconds.forEach(([sum, mean], c) => (theirs[c].sum.push(sum), theirs[c].mean.push(mean)));
  }
  if (peer.error) {
    console.log(`PyTorch peer not run (${peer.error}); hb-ts figures only`);
  } else {
    console.log(blasLine(peer));
  }
  const compared = !peer.error && !peer.reference;
  const ratios = { new: [], into: [], handover: [] };
  for (let c = 0; c < cells.length; c++) {
    const [dim, batch, hotness, kind] = cells[c];
    for (const combiner of ['sum', 'mean']) {
      const cell = `${combiner}, dim ${dim}, batch ${batch}, ${hotness} id${hotness > 1 ? 's' : ''}/bag, ${kind === 'uniform' ? 'uniform' : 'power-law'} ids`;
      let line = `lookup ${cell}:`;
      // The target stands on the read into a new array (data(), a copy); the reused
      // array's and the hand-over's figures are printed beside it, with no target of their own.
      const reads = [['new', ours, 'new array', 1.5], ['into', oursInto, 'reused array', undefined], ['handover', oursHandover, 'handed over', undefined]];
      for (const [read, times, label, target] of reads) {
        const mine = median(times[c][combiner]);
        line += ` hb-ts (${label}) ${(mine * 1e3).toFixed(3)} ms`;
        if (!compared) continue;
        const perRound = times[c][combiner].map((t, r) => theirs[c][combiner][r] / t);
        const ratio = median(perRound);
        ratios[read].push(ratio);
        line += ` ${ratio.toFixed(2)}x (rounds ${Math.min(...perRound).toFixed(2)}-${Math.max(...perRound).toFixed(2)}) |`;
        record({
          workload: `lookup ${cell}${{ new: '', into: ', read into a reused array,', handover: ', read with data({ dispose: true }),' }[read]} vs PyTorch embedding_bag`,
          value: mine * 1e3, baseline: median(theirs[c][combiner]) * 1e3, unit: 'ms', higherIsBetter: false,
          ratio, baselineName: `PyTorch ${peer.result.torch} embedding_bag, ${peer.result.threads} threads`, target,
        });
      }
      if (compared) line += ` PyTorch ${(median(theirs[c][combiner]) * 1e3).toFixed(3)} ms`;
      console.log(line);
    }
  }
  for (const [read, label] of [['new', 'read into a new array'], ['into', 'read into a reused array'], ['handover', 'read with data({ dispose: true })']]) {
    const rs = ratios[read];
    if (!rs.length) continue;
    const met = rs.filter((r) => r >= 1.5).length;
    console.log(`${rs.length} cells, ${label}: median ${median(rs).toFixed(2)}x PyTorch, range ${Math.min(...rs).toFixed(2)}-${Math.max(...rs).toFixed(2)}x; ${met} at or above 1.5x`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
