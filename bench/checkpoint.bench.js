#!/usr/bin/env node
// Checkpoint save and restore of an embedding table with its Adagrad slot, as the
// Estimator does it (rows streamed by the addon, SHA-256 of the whole file, fsync,
// rename), next to the disk baseline measured in the same run, interleaved: the same
// number of bytes written from one JS buffer and fsynced, and read back into one.
// A restore reads the rows as the Estimator does: each file hashed as it lands in the
// table (one pass), the digest checked at the end; --verify first times the two passes
// restores made before (the whole file hashed, then read). Restores are timed twice: from disk (both files dropped from the page cache before each
// read, with dd's nocache flag: the disk's sequential read is the baseline, and a
// restore after a restart reads from disk), and from the page cache (both files read once
// just before).
//
//   node bench/checkpoint.bench.js [--rows 2000000] [--dim 64] [--iters 5] [--verify while-reading|first]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { saveCheckpoint, verifyCheckpoint } = require('../dist/io/checkpoint_file');
const { openCheckpoint } = require('../dist/io/checkpoint_source');
const { localPlacement } = require('../dist/embedding/placement');
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { timeInterleaved } = require('./timing');
const { dropFromPageCache, readIntoPageCache } = require('./page_cache');
const { record } = require('./report');

const rows = option('rows', 2_000_000);
const dim = option('dim', 64);
const iters = option('iters', 5);
const verifyAt = process.argv.indexOf('--verify');
const verify = verifyAt >= 0 ? process.argv[verifyAt + 1] : 'while-reading';
if (verify !== 'while-reading' && verify !== 'first') throw new Error(`--verify must be while-reading or first, got ${verify}`);

function dropFromCache(file) {
  if (!dropFromPageCache(file)) throw new Error(`dd could not drop ${file} from the page cache`);
}

function readIntoCache(file) {
  if (!readIntoPageCache(file)) throw new Error(`could not read ${file}`);
}

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

    const restore = async () => {
      if (verify === 'first') {
        const header = await verifyCheckpoint(saved);
        await table.load(saved, header);
        return;
      }
      const source = await openCheckpoint(saved, { verifyWhileReading: true });
      await table.restoreFrom(source);
      await source.verified();
    };
    const restoreWhat = verify === 'first' ? 'verify (SHA-256), then load rows' : 'load rows, SHA-256 as they land';
    const readPlain = async () => {
      const fh = await fs.promises.open(plainFile, 'r');
      for (let done = 0; done < bytes; ) done += (await fh.read(back, done, Math.min(bytes - done, 1 << 30), done)).bytesRead;
      await fh.close();
    };
    const untimed = (work) => async () => work();
    // Untimed steps (the cache drops and fills) sit between the timed ones; their times are ignored.
    const times = await timeInterleaved([
      async () => {
        saved = (await saveCheckpoint(dir, ++step, table.save(), { keepMax: 1 })).path;
      },
      async () => {
        const fh = await fs.promises.open(plainFile, 'w');
        for (let done = 0; done < bytes; ) done += (await fh.write(plain, done, Math.min(bytes - done, 1 << 30), done)).bytesWritten;
        await fh.sync();
        await fh.close();
      },
      untimed(() => dropFromCache(saved)),
      restore,
      untimed(() => dropFromCache(plainFile)),
      readPlain,
      untimed(() => readIntoCache(saved)),
      restore,
      untimed(() => readIntoCache(plainFile)),
      readPlain,
    ], iters, 1);
    const [save, plainWrite, , restoreCold, , plainReadCold, , restoreWarm, , plainReadWarm] = times;
    const gbs = (t) => `${(bytes / t / 1e9).toFixed(2)} GB/s`;
    console.log(`checkpoint of a ${rows}x${dim} float32 table and its Adagrad slot: ${(bytes / 1e6).toFixed(0)} MB`);
    console.log(`  save (stream rows, SHA-256, fsync, rename): ${(save * 1e3).toFixed(0)} ms, ${gbs(save)}`);
    console.log(`  plain write + fsync of the same bytes: ${(plainWrite * 1e3).toFixed(0)} ms, ${gbs(plainWrite)} | save / plain = ${(save / plainWrite).toFixed(2)}`);
    console.log(`  from disk: ${restoreWhat}: ${(restoreCold * 1e3).toFixed(0)} ms, ${gbs(restoreCold)}`);
    console.log(`  from disk: plain read of the same bytes: ${(plainReadCold * 1e3).toFixed(0)} ms, ${gbs(plainReadCold)} | restore / plain = ${(restoreCold / plainReadCold).toFixed(2)}`);
    console.log(`  from the page cache: ${restoreWhat}: ${(restoreWarm * 1e3).toFixed(0)} ms, ${gbs(restoreWarm)}`);
    console.log(`  from the page cache: plain read: ${(plainReadWarm * 1e3).toFixed(0)} ms, ${gbs(plainReadWarm)} | restore / plain = ${(restoreWarm / plainReadWarm).toFixed(2)}`);
    // As throughputs, which is how the targets (>= half the plain figures) are put.
    const rate = (t) => bytes / t / 1e9;
    const what = `${rows}x${dim} table + Adagrad slot, ${(bytes / 1e6).toFixed(0)} MB${verify === 'first' ? ', verified first' : ''}`;
    record({ workload: `save (${what}) vs a plain write + fsync`, value: rate(save), baseline: rate(plainWrite), unit: 'GB/s', baselineName: 'plain fs write + fsync', target: 0.5 });
    record({ workload: `restore from disk: verify + load (${what}) vs a plain read from disk`, value: rate(restoreCold), baseline: rate(plainReadCold), unit: 'GB/s', baselineName: 'plain fs read, page cache dropped', target: 0.5 });
    record({ workload: `restore from the page cache: verify + load (${what}) vs a plain read`, value: rate(restoreWarm), baseline: rate(plainReadWarm), unit: 'GB/s', baselineName: 'plain fs read, file cached' });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
