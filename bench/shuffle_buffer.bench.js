#!/usr/bin/env node
// The native shuffle buffer on Criteo-shaped rows (label, 13 float columns, 26 strings of
// 8 hex digits with ~4% missing): what a push of one block costs on the addon's data
// thread, and how much memory the buffer holds, against baselines measured here:
//   - the same buffer with its rows left in the blocks they came in (no compaction): a
//     block keeps a few rows long after most of it left, so the buffer moves its rows into
//     one block of their own when its blocks hold more than twice them;
//   - time: a plain copy of the block's bytes, the least a buffer that owns its rows does;
//   - memory: the bytes of the rows it buffers.
//
//   node bench/shuffle_buffer.bench.js [--blockRows 8192] [--pushes 300]
'use strict';
const { spawnSync } = require('child_process');
const path = require('path');
const v8 = require('v8');
const vm = require('vm');
const hb = require(path.resolve(__dirname, '..'));
const { native } = require(path.resolve(__dirname, '..', 'dist', 'native.js'));
const { describeColumns } = require(path.resolve(__dirname, '..', 'dist', 'data', 'row_gather.js'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { seededUniform } = require('./workloads');
const { record } = require('./report');

const blockRows = option('blockRows', 8192);
const pushes = option('pushes', 300);

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

function criteoBlock(seed) {
  const random = seededUniform(seed);
  const names = ['label'];
  const columns = [Float32Array.from({ length: blockRows }, () => (random() < 0.25 ? 1 : 0))];
  for (let j = 1; j <= 13; j++) {
    names.push(`I${j}`);
    columns.push(Float32Array.from({ length: blockRows }, () => Math.floor(Math.expm1(random() * 8))));
  }
  const hex = (x) => x.toString(16).padStart(8, '0');
  for (let c = 1; c <= 26; c++) {
    const values = Array.from({ length: blockRows }, () => (random() < 0.04 ? null : hex(Math.floor(random() * 2 ** 32))));
    const offsets = new Int32Array(blockRows + 1);
    values.forEach((v, i) => (offsets[i + 1] = offsets[i] + (v === null ? 0 : 8)));
    const bytes = new Uint8Array(offsets[blockRows]);
    values.forEach((v, i) => v !== null && bytes.set(Buffer.from(v, 'latin1'), offsets[i]));
    names.push(`C${c}`);
    columns.push(new hb.StringColumn(bytes, offsets, Uint8Array.from(values, (v) => (v === null ? 0 : 1))));
  }
  return { names, columns, specs: describeColumns(names, columns) };
}

function arraysOf(specs) {
  return specs.flatMap((s) => [s.rowSplits, ...s.itemArrays, s.itemOffsets, s.bytes].filter((a) => a !== null));
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// The child's side: one buffer through `pushes` blocks.
async function pass(bufferRows, compact) {
  const blocks = [criteoBlock(1), criteoBlock(2)];
  gc();
  const base = process.memoryUsage().rss;
  const buffer = native.shuffleBufferNew(bufferRows, 1, compact);
  const times = [];
  let peak = 0;
  for (let i = 0; i < pushes; i++) {
    const t0 = process.hrtime.bigint();
    await native.shuffleBufferPush(buffer, blocks[i % 2].specs);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (i % 10 === 9) gc();
    peak = Math.max(peak, process.memoryUsage.rss() - base);
  }
  const { compactions } = native.shuffleBufferStats(buffer);
  native.shuffleBufferRelease(buffer);
  // Once the buffer is full: the mean push (compactions included: they run inside some
  // pushes) and the median one.
  const full = times.slice(Math.ceil(bufferRows / blockRows) + 10);
  console.log(JSON.stringify({ pushMs: full.reduce((a, b) => a + b, 0) / full.length, medianMs: median(full), grewBytes: peak, compactions }));
}

async function main() {
  console.log(describeMachine(hb));
  const blocks = [criteoBlock(1), criteoBlock(2)];
  const blockBytes = arraysOf(blocks[0].specs).reduce((n, a) => n + a.byteLength, 0);
  const rowBytes = blockBytes / blockRows;
  // The baseline copy: every array of a block into memory of its own, as a push's copy does.
  const copies = [];
  for (let i = 0; i < 200; i++) {
    const t0 = process.hrtime.bigint();
    for (const a of arraysOf(blocks[i % 2].specs)) new Uint8Array(a.buffer, a.byteOffset, a.byteLength).slice();
    copies.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const copyMs = median(copies.slice(50));
  console.log(`block: ${blockRows} rows, 40 columns, ${(blockBytes / 1e6).toFixed(2)} MB; a copy of its arrays ${copyMs.toFixed(2)} ms`);

  // One pass, in a process of its own (memory a pass freed stays with the process, so a
  // second pass in the same one would grow less): a push's mean time once the buffer is
  // full, and how far the process grew at its peak.
  const run = (bufferRows, compact) => {
    const child = spawnSync(process.execPath, [__filename, '--pass', String(bufferRows), '--compact', compact ? '1' : '0', '--blockRows', String(blockRows), '--pushes', String(pushes)], { encoding: 'utf8' });
    if (child.status !== 0) throw new Error(`a pass failed: ${child.stderr}`);
    return JSON.parse(child.stdout.trim().split('\n').pop());
  };

  for (const bufferRows of [4 * blockRows, 16 * blockRows]) {
    // The buffer as it runs, and the same without moving its rows together (alternating).
    const compacted = [];
    const spread = [];
    for (let round = 0; round < 2; round++) {
      compacted.push(run(bufferRows, true));
      spread.push(run(bufferRows, false));
    }
    const best = (runs, key) => Math.min(...runs.map((r) => r[key]));
    const pushMs = best(compacted, 'pushMs');
    const spreadMs = best(spread, 'pushMs');
    const grew = best(compacted, 'grewBytes');
    const spreadGrew = best(spread, 'grewBytes');
    const bufferedBytes = bufferRows * rowBytes;
    console.log(
      `shuffle(${bufferRows}): a push ${pushMs.toFixed(2)} ms on average, ${compacted[0].compactions} compactions in ${pushes} pushes (rows left where they came: ${spreadMs.toFixed(2)} ms; a copy of the block ${copyMs.toFixed(2)} ms) | ` +
        `process grew ${(grew / 1e6).toFixed(0)} MB (left where they came: ${(spreadGrew / 1e6).toFixed(0)} MB) for ${(bufferedBytes / 1e6).toFixed(0)} MB of buffered rows | ` +
        `ratio memory / buffered rows = ${(grew / bufferedBytes).toFixed(2)} (left: ${(spreadGrew / bufferedBytes).toFixed(2)}), push time left / compacted = ${(spreadMs / pushMs).toFixed(2)}`,
    );
    record({ workload: `shuffle(${bufferRows}) push of ${blockRows} Criteo rows vs the same without compaction`, value: pushMs, baseline: spreadMs, unit: 'ms', higherIsBetter: false, baselineName: 'rows left in the blocks they came in' });
    record({ workload: `shuffle(${bufferRows}) push of ${blockRows} Criteo rows vs a copy of the block`, value: pushMs, baseline: copyMs, unit: 'ms', higherIsBetter: false, baselineName: "a copy of the block's arrays" });
    record({ workload: `shuffle(${bufferRows}) memory vs the same without compaction`, value: grew / 1e6, baseline: spreadGrew / 1e6, unit: 'MB', higherIsBetter: false, baselineName: 'rows left in the blocks they came in' });
    record({ workload: `shuffle(${bufferRows}) memory vs its buffered rows' bytes`, value: grew / 1e6, baseline: bufferedBytes / 1e6, unit: 'MB', higherIsBetter: false, baselineName: 'bytes of the buffered rows' });
  }
}

(option('pass', 0) > 0 ? pass(option('pass', 0), option('compact', 1) === 1) : main()).catch((error) => {
  console.error(error);
  process.exit(1);
});
