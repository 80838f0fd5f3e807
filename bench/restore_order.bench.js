#!/usr/bin/env node
// A restore that reads a checkpoint out of the file's order, as a model with several
// dynamic tables does: the writer puts every int64 tensor first (each table's ids and
// meta), then the float ones (its values and slots), and each table reads its own
// tensors in turn (ids, meta, pending ids and meta, values, slot), so its reads jump
// between the two regions. The file holds the tensors a dynamic table saves, under its
// names and dtypes, with made-up values: the reads (lib/io/verified_reads.ts) are what is
// timed, against the same file read in its own order and a plain read of its bytes, in the
// same run, from disk (dropped from the page cache before each read) and from the page
// cache. Also printed: the bytes hashed again (read a second time) by each restore.
//
//   node bench/restore_order.bench.js [--tables 4] [--rows 1000000] [--dim 8] [--iters 5]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { saveCheckpoint } = require('../dist/io/checkpoint_file');
const { openCheckpoint } = require('../dist/io/checkpoint_source');
const { native } = require('../dist/native');
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { timeInterleaved } = require('./timing');
const { dropFromPageCache, readIntoPageCache } = require('./page_cache');
const { record } = require('./report');

const tables = option('tables', 4);
const rows = option('rows', 1_000_000);
const dim = option('dim', 8);
const iters = option('iters', 5);

/** A dynamic table's tensors as it saves them, and the order it reads them back in. */
function tableTensors(k) {
  const t = `table_${k}`;
  const ids = BigInt64Array.from({ length: rows }, (_, i) => BigInt(i) * BigInt(tables) + BigInt(k));
  const values = Float32Array.from({ length: rows * dim }, (_, i) => ((i * 2654435761) % 1000) / 1000 - 0.5);
  return [
    { name: `${t}/ids`, dtype: 'int64', shape: [rows], data: ids },
    { name: `${t}/meta`, dtype: 'int64', shape: [rows], data: new BigInt64Array(rows).fill(1n) },
    { name: `${t}/pending_ids`, dtype: 'int64', shape: [0], data: new BigInt64Array(0) },
    { name: `${t}/pending_meta`, dtype: 'int64', shape: [0], data: new BigInt64Array(0) },
    { name: t, dtype: 'float32', shape: [rows, dim], data: values },
    { name: `${t}/Adagrad`, dtype: 'float32', shape: [rows, dim], data: new Float32Array(rows * dim).fill(0.1) },
  ];
}

async function main() {
  console.log(describeMachine(hb));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-bench-restore-order-'));
  try {
    const tensors = Array.from({ length: tables }, (_, k) => tableTensors(k)).flat();
    const file = (await saveCheckpoint(dir, 1, tensors)).path;
    const bytes = fs.statSync(file).size;
    const targets = new Map(tensors.map((t) => [t.name, native.tensorFromTypedArray(new t.data.constructor(t.data.length), t.shape, 'cpu')]));
    const header = (await openCheckpoint(file)).entries;
    const fileOrder = [...header.values()].sort((a, b) => a.begin - b.begin).map((e) => e.name);
    const tableOrder = tensors.map((t) => t.name);

    // Bytes a restore hashes by reading them again (fileSha256Update), kept per order.
    const hashedAgain = { table: 0, file: 0 };
    const fileSha256Update = native.fileSha256Update;
    let counting = 'table';
    native.fileSha256Update = (...args) => {
      hashedAgain[counting] = args[4] + hashedAgain[counting];
      return fileSha256Update.apply(native, args);
    };
    const restoreIn = (order, which) => async () => {
      counting = which;
      hashedAgain[which] = 0;
      const source = await openCheckpoint(file, { verifyWhileReading: true });
      for (const name of order) await source.read(name, targets.get(name));
      await source.verified();
    };
    const back = Buffer.alloc(bytes);
    const readPlain = async () => {
      const fh = await fs.promises.open(file, 'r');
      for (let done = 0; done < bytes; ) done += (await fh.read(back, done, Math.min(bytes - done, 1 << 30), done)).bytesRead;
      await fh.close();
    };
    const untimed = (work) => async () => work();
    const drop = untimed(() => {
      if (!dropFromPageCache(file)) throw new Error(`dd could not drop ${file} from the page cache`);
    });
    const fill = untimed(() => {
      if (!readIntoPageCache(file)) throw new Error(`could not read ${file}`);
    });
    const times = await timeInterleaved([
      drop, restoreIn(tableOrder, 'table'),
      drop, restoreIn(fileOrder, 'file'),
      drop, readPlain,
      // Each after the same untimed step, so none pays for following another kind.
      fill, restoreIn(tableOrder, 'table'),
      fill, restoreIn(fileOrder, 'file'),
      fill, readPlain,
    ], iters, 1);
    const [, tableCold, , fileCold, , plainCold, , tableWarm, , fileWarm, , plainWarm] = times;
    const ms = (t) => `${(t * 1e3).toFixed(0)} ms`;
    const share = (n) => `${(n / 1e6).toFixed(1)} MB (${((100 * n) / bytes).toFixed(1)}% of the file)`;
    console.log(`restore of ${tables} dynamic tables' tensors (${rows} rows of dim ${dim} + Adagrad slot each): ${(bytes / 1e6).toFixed(0)} MB`);
    console.log(`  bytes read again: table by table ${share(hashedAgain.table)}, in the file's order ${share(hashedAgain.file)}`);
    for (const [where, table, inFile, plain] of [['from disk', tableCold, fileCold, plainCold], ['from the page cache', tableWarm, fileWarm, plainWarm]]) {
      console.log(`  ${where}: table by table ${ms(table)}, in the file's order ${ms(inFile)}, plain read ${ms(plain)} | table by table / file order = ${(table / inFile).toFixed(2)}, plain / table by table = ${(plain / table).toFixed(2)}`);
    }
    const what = `${tables} dynamic tables of ${rows} x ${dim} + Adagrad slot, ${(bytes / 1e6).toFixed(0)} MB`;
    const rate = (t) => bytes / t / 1e9;
    record({ workload: `restore table by table from disk (${what}) vs the same restore in the file's order`, value: rate(tableCold), baseline: rate(fileCold), unit: 'GB/s', baselineName: "restore in the file's order" });
    record({ workload: `restore table by table from disk (${what}) vs a plain read from disk`, value: rate(tableCold), baseline: rate(plainCold), unit: 'GB/s', baselineName: 'plain fs read, page cache dropped', target: 0.5 });
    record({ workload: `restore table by table from the page cache (${what}) vs a plain read`, value: rate(tableWarm), baseline: rate(plainWarm), unit: 'GB/s', baselineName: 'plain fs read, file cached' });
    for (const t of targets.values()) t.dispose();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
