#!/usr/bin/env node
// Checkpoint save and restore of an embedding table with its Adagrad slot, as the
// Estimator does it (rows streamed by the addon, SHA-256 of the whole file, fsync,
// rename), next to the disk baseline measured in the same run, interleaved: the same
// number of bytes written from one JS buffer and fsynced, and read back into one.
//
//   node bench/checkpoint.bench.js [--rows 2000000] [--dim 64] [--iters 5]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { saveCheckpoint, verifyCheckpoint } = require('../dist/io/checkpoint_file');
const { localPlacement } = require('../dist/embedding/placement');
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { timeInterleaved } = require('./timing');
const { record } = require('./report');

const rows = option('rows', 2_000_000);
const dim = option('dim', 64);
const iters = option('iters', 5);

async function main() {
  console.log(describeMachine(hb));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-bench-ckpt-'));
  try {
    const table = new hb.EmbeddingTable(
      { name: 'bench_table', rows, dim, dtype: 'float32', initializer: hb.initializers.randomUniform({ seed: 1 }), trainable: true },
      localPlacement('cpu'),
    );
    // One update makes the Adagrad slot, so the checkpoint holds rows and slot.
    await table.applyGradients(new hb.train.AdagradOptimizer({ learningRate: 0.1 }), [
      new hb.IndexedSlices(hb.tensor(new Float32Array(dim).fill(1), [1, dim]), BigInt64Array.from([0n])),
    ]);
    const bytes = 2 * rows * dim * 4;
    const plainFile = path.join(dir, 'plain.bin');
    const plain = Buffer.alloc(bytes, 7);
    const back = Buffer.alloc(bytes);
    let step = 0;
    let saved;

    const [save, verifyAndLoad, plainWrite, plainRead] = await timeInterleaved([
      async () => {
        saved = (await saveCheckpoint(dir, ++step, table.save(), { keepMax: 1 })).path;
      },
      async () => {
        const header = await verifyCheckpoint(saved);
        await table.load(saved, header);
      },
      async () => {
        const fh = await fs.promises.open(plainFile, 'w');
        for (let done = 0; done < bytes; ) done += (await fh.write(plain, done, Math.min(bytes - done, 1 << 30), done)).bytesWritten;
        await fh.sync();
        await fh.close();
      },
      async () => {
        const fh = await fs.promises.open(plainFile, 'r');
        for (let done = 0; done < bytes; ) done += (await fh.read(back, done, Math.min(bytes - done, 1 << 30), done)).bytesRead;
        await fh.close();
      },
    ], iters, 1);
    const gbs = (t) => `${(bytes / t / 1e9).toFixed(2)} GB/s`;
    console.log(`checkpoint of a ${rows}x${dim} float32 table and its Adagrad slot: ${(bytes / 1e6).toFixed(0)} MB`);
    console.log(`  save (stream rows, SHA-256, fsync, rename): ${(save * 1e3).toFixed(0)} ms, ${gbs(save)}`);
    console.log(`  plain write + fsync of the same bytes: ${(plainWrite * 1e3).toFixed(0)} ms, ${gbs(plainWrite)} | save / plain = ${(save / plainWrite).toFixed(2)}`);
    console.log(`  verify (SHA-256) + load rows: ${(verifyAndLoad * 1e3).toFixed(0)} ms, ${gbs(verifyAndLoad)}`);
    console.log(`  plain read of the same bytes: ${(plainRead * 1e3).toFixed(0)} ms, ${gbs(plainRead)} | restore / plain = ${(verifyAndLoad / plainRead).toFixed(2)}`);
    // As throughputs, which is how the targets (>= half the plain figures) are put.
    const rate = (t) => bytes / t / 1e9;
    const what = `${rows}x${dim} table + Adagrad slot, ${(bytes / 1e6).toFixed(0)} MB`;
    record({ workload: `save (${what}) vs a plain write + fsync`, value: rate(save), baseline: rate(plainWrite), unit: 'GB/s', baselineName: 'plain fs write + fsync', target: 0.5 });
    record({ workload: `restore: verify + load (${what}) vs a plain read`, value: rate(verifyAndLoad), baseline: rate(plainRead), unit: 'GB/s', baselineName: 'plain fs read', target: 0.5 });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
