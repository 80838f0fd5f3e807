#!/usr/bin/env node
// Scale on one machine: one identity column (dim 64, Adagrad) trained through the
// Estimator for a few steps of power-law ids, with the checkpoint the end of training
// writes, at table sizes from 1M rows doubling up to the largest that fits in memory.
// Each size runs in its own processes, so peak RSS is per size: a first child makes the
// table, trains and saves; a second, fresh one restores the same modelDir and predicts
// one batch. Each figure is printed next to a baseline measured in the same child:
//   - table initialisation (the table's initializer, a threaded native fill) against
//     memory bandwidth: Float32Array.fill in as many worker threads as the addon's pool
//     has, over one pre-touched buffer (<= 256 MiB) reused until the table's bytes are
//     written; and, since a new table is new memory, against the same fill writing a
//     fresh buffer's pages for the first time (the kernel's page faults and zeroing
//     included, scaled to the table's bytes);
//   - checkpoint write (end of training: rows streamed, SHA-256, fsync, rename) against a
//     plain fs write + fsync of the same number of bytes;
//   - restore (a fresh Estimator: read rows, hashed as they land, one predict step) against
//     a plain fs read of the checkpoint file. Before both reads the file is dropped from the page
//     cache (dd iflag=nocache), so both come from disk.
// Peak RSS is process.resourceUsage().maxRSS, read before any baseline allocates.
// Targets (issue 18): peak RSS <= 1.15x model + 0.5 GiB; checkpoint write and read >=
// 50% of the plain fs figures; table initialisation >= 25% of memory bandwidth.
//
// Sizes: rows*64*4*2 (table + slot) must stay under 40% of os.freemem(), and a size is
// skipped when the RSS ratio of the size before predicts it would not fit, or when the
// time left (--seconds) is less than the size before took times 2.2.
//
//   node bench/scale.bench.js [--max-rows 16777216] [--min-rows 1048576] [--seconds 480] [--steps 3] [--batch 4096]
//   (internal) node bench/scale.bench.js --child <rows> --phase train|restore --dir <dir>
'use strict';
const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { option } = require('./options');
const { powerLawIds } = require('./workloads');
const { record } = require('./report');
const { dropFromPageCache } = require('./page_cache');

const dim = 64;
const batch = option('batch', 4096);
const steps = option('steps', 3);
const GiB = 2 ** 30;
const MiB = 2 ** 20;

// ---------------------------------------------------------------------------------------
// Shared

function stringOption(name) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const seconds = (t0) => Number(process.hrtime.bigint() - t0) / 1e9;
const maxRssBytes = () => process.resourceUsage().maxRSS * 1024; // maxRSS is in KiB

// ---------------------------------------------------------------------------------------
// Child: one size, one phase

function estimatorFor(hb, rows, dir, log) {
  const fc = hb.featureColumn;
  const column = fc.embeddingColumn(fc.categoricalColumnWithIdentity('id', rows), dim, {
    combiner: 'sum',
    initializer: hb.initializers.truncatedNormal({ stddev: 1 / Math.sqrt(dim), seed: 1 }), // the column's default, seeded
  });
  const estimator = new hb.estimator.Estimator({
    modelFn: (features, labels, mode) => {
      const logits = hb.math.reduceSum(fc.DenseFeatures([column])(features), 1, true);
      if (mode === hb.estimator.ModeKeys.PREDICT) return hb.estimator.EstimatorSpec({ mode, predictions: { logits } });
      const loss = hb.losses.sigmoidCrossEntropy(labels, logits);
      return hb.estimator.EstimatorSpec({ mode, loss, trainOp: new hb.train.AdagradOptimizer({ learningRate: 0.05 }).minimize(loss) });
    },
    modelDir: dir,
    config: new hb.estimator.RunConfig({ log, progressBar: false, keepCheckpointMax: 1, saveCheckpointsSteps: 0, logStepCountSteps: 0 }),
  });
  return { column, estimator };
}

/** Waits until everything queued on the CPU executor before it has run (the fill is queued, not run, by variable()). */
async function cpuQueueDrained(hb) {
  await hb.tensor(new Float32Array(1), [1]).data();
}

/**
 * Memory bandwidth: `bytes` written by Float32Array.fill in `threads` worker threads, each
 * over its share of one shared buffer of at most 256 MiB (touched first), reused until
 * `bytes` are written. Seconds (median of 3), and `firstTouch`: the seconds of the first
 * pass over the fresh buffer (page faults included), scaled to `bytes`.
 */
async function fillBandwidth(bytes, threads) {
  const { Worker } = require('worker_threads');
  const bufferBytes = Math.min(bytes, 256 * MiB) - (Math.min(bytes, 256 * MiB) % (4 * threads));
  const passes = Math.max(1, Math.round(bytes / bufferBytes));
  const shared = new SharedArrayBuffer(bufferBytes);
  const code = `
    const { parentPort, workerData } = require('worker_threads');
    const { shared, begin, end } = workerData;
    const view = new Float32Array(shared, begin, (end - begin) / 4);
    parentPort.on('message', (passes) => {
      for (let p = 0; p < passes; p++) view.fill(p + 1);
      parentPort.postMessage('done');
    });`;
  const share = bufferBytes / threads;
  const workers = Array.from({ length: threads }, (_, i) => new Worker(code, { eval: true, workerData: { shared, begin: i * share, end: (i + 1) * share } }));
  const run = (n) => Promise.all(workers.map((w) => new Promise((resolve) => { w.once('message', resolve); w.postMessage(n); })));
  try {
    await run(0); // threads started
    const touchStart = process.hrtime.bigint();
    await run(1); // first touch
    const firstTouch = seconds(touchStart) * (bytes / bufferBytes);
    const times = [];
    for (let i = 0; i < 3; i++) {
      const t0 = process.hrtime.bigint();
      await run(passes);
      times.push(seconds(t0) * (bytes / (passes * bufferBytes)));
    }
    return { seconds: times.sort((a, b) => a - b)[1], firstTouch };
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

/** A plain write of `bytes` (from one reused 64 MiB buffer) to `file`, then fsync; seconds. */
function plainWrite(file, bytes) {
  const chunk = Buffer.alloc(Math.min(bytes, 64 * MiB), 0x5a);
  const t0 = process.hrtime.bigint();
  const fd = fs.openSync(file, 'w');
  try {
    for (let done = 0; done < bytes; ) done += fs.writeSync(fd, chunk, 0, Math.min(chunk.length, bytes - done), done);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return seconds(t0);
}

/** A plain read of all of `file` (into one reused 64 MiB buffer); seconds. */
function plainRead(file) {
  const bytes = fs.statSync(file).size;
  const chunk = Buffer.allocUnsafe(Math.min(bytes, 64 * MiB));
  const t0 = process.hrtime.bigint();
  const fd = fs.openSync(file, 'r');
  try {
    for (let done = 0; done < bytes; ) {
      const got = fs.readSync(fd, chunk, 0, Math.min(chunk.length, bytes - done), done);
      if (got === 0) throw new Error(`${file}: short read`);
      done += got;
    }
  } finally {
    fs.closeSync(fd);
  }
  return seconds(t0);
}

function checkpointFile(dir) {
  const files = fs.readdirSync(dir).filter((f) => /^model\.ckpt-\d+/.test(f) && !f.startsWith('.'));
  if (files.length !== 1) throw new Error(`expected one checkpoint in ${dir}, found ${JSON.stringify(files)}`);
  return path.join(dir, files[0]);
}

async function childTrain(hb, rows, dir) {
  const logLines = [];
  const { column, estimator } = estimatorFor(hb, rows, dir, (line) => logLines.push(line));
  const tableBytes = rows * dim * 4;
  // Table initialisation: the table made as the Estimator's first build makes it (the
  // column's variable, its initializer filled natively), timed alone to the end of the fill.
  let t0 = process.hrtime.bigint();
  void column.embeddingTable.variable;
  await cpuQueueDrained(hb);
  const initSeconds = seconds(t0);
  const rssAfterInit = maxRssBytes();

  const batches = Array.from({ length: steps }, (_, s) => {
    const ids = powerLawIds(batch, rows, 7 + s);
    return { features: { id: ids }, labels: Float32Array.from(ids, (x) => Number(x % 2n)) };
  });
  let endAt;
  const endHook = { end: () => void (endAt = process.hrtime.bigint()) };
  t0 = process.hrtime.bigint();
  await estimator.train(() => batches, { steps, hooks: [endHook] });
  const done = process.hrtime.bigint();
  const trainSeconds = Number(endAt - t0) / 1e9; // first build (the Adagrad slot made), the steps
  const saveSeconds = Number(done - endAt) / 1e9; // the end-of-training checkpoint
  const rss = maxRssBytes(); // before any baseline allocates
  const file = checkpointFile(dir);
  const fileBytes = fs.statSync(file).size;
  const slots = column.embeddingTable.stats().slots;

  // Baselines, after the peak RSS was read.
  const plainFile = path.join(dir, 'plain-write.bin');
  let plainWriteSeconds;
  try {
    plainWriteSeconds = plainWrite(plainFile, fileBytes);
  } finally {
    fs.rmSync(plainFile, { force: true });
  }
  const threads = hb.backend().threads;
  const { seconds: fillSeconds, firstTouch: firstTouchSeconds } = await fillBandwidth(tableBytes, threads);
  return {
    phase: 'train',
    rows,
    tableBytes,
    slotBytes: slots.reduce((n, s) => n + s.bytes, 0),
    slots: slots.map((s) => s.name),
    initSeconds,
    fillSeconds,
    firstTouchSeconds,
    fillThreads: threads,
    trainSeconds,
    saveSeconds,
    fileBytes,
    plainWriteSeconds,
    rssAfterInit,
    maxRss: rss,
    log: logLines,
  };
}

async function childRestore(hb, rows, dir) {
  const file = checkpointFile(dir);
  const fileBytes = fs.statSync(file).size;
  const cold = dropFromPageCache(file);
  const logLines = [];
  const { column, estimator } = estimatorFor(hb, rows, dir, (line) => logLines.push(line));
  const ids = powerLawIds(batch, rows, 99);
  let t0 = process.hrtime.bigint();
  let first;
  for await (const out of estimator.predict(() => [{ features: { id: ids } }], { yieldSingleExamples: false })) {
    first = out;
    break;
  }
  const restoreSeconds = seconds(t0);
  const rss = maxRssBytes();
  if (!first || !(first.logits instanceof Float32Array) || first.logits.length !== batch) throw new Error('restore: predict gave no batch of logits');
  const restored = column.embeddingTable.stats();
  // Baseline: the same file read with plain fs, from disk too.
  const coldPlain = dropFromPageCache(file);
  const plainReadSeconds = plainRead(file);
  // Diagnostic: the file's SHA-256 alone (one stream, what the restore hashes beside its
  // reads), from disk too: the restore cannot beat the slower of it and the plain read.
  const { verifyCheckpoint } = require('../dist/io/checkpoint_file');
  dropFromPageCache(file);
  t0 = process.hrtime.bigint();
  await verifyCheckpoint(file);
  const verifySeconds = seconds(t0);
  return {
    phase: 'restore',
    rows,
    fileBytes,
    restoreSeconds,
    plainReadSeconds,
    verifySeconds,
    cold: cold && coldPlain,
    restoredSlots: restored.slots.map((s) => s.name),
    maxRss: rss,
    log: logLines,
  };
}

async function child(rows) {
  const path_ = require('path');
  const hb = require(path_.resolve(__dirname, '..'));
  const dir = stringOption('dir');
  const phase = stringOption('phase');
  if (!dir || !fs.existsSync(dir)) throw new Error('--dir: an existing directory is needed');
  const result = phase === 'train' ? await childTrain(hb, rows, dir) : phase === 'restore' ? await childRestore(hb, rows, dir) : undefined;
  if (!result) throw new Error(`--phase must be train or restore, got ${phase}`);
  process.stdout.write(JSON.stringify(result) + '\n');
}

// ---------------------------------------------------------------------------------------
// Parent: sizes, children, table

const children = new Set();

/** Runs one child phase; resolves to its JSON line, or { error }. Killed (SIGKILL) after `limitS`. */
function runChild(rows, phase, dir, limitS) {
  return new Promise((resolve) => {
    const args = [__filename, '--child', String(rows), '--phase', phase, '--dir', dir, '--steps', String(steps), '--batch', String(batch)];
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(proc);
    let out = '';
    let err = '';
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      proc.kill('SIGKILL');
    }, Math.max(1, limitS) * 1000);
    proc.stdout.on('data', (d) => (out += d));
    proc.stderr.on('data', (d) => (err += d));
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(proc);
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code === 0 && line) return resolve(JSON.parse(line));
      const why = killed ? `killed after the time left (${limitS.toFixed(0)} s)` : signal ? `killed by ${signal} (out of memory?)` : `exit ${code}`;
      resolve({ error: `${phase} child for ${rows} rows: ${why}${err ? `: ${err.trim().split('\n').slice(-3).join(' | ')}` : ''}` });
    });
  });
}

const fmtBytes = (b) => (b >= GiB ? `${(b / GiB).toFixed(2)} GiB` : `${(b / MiB).toFixed(0)} MiB`);
const mbs = (bytes, s) => bytes / s / 1e6;
const rowsLabel = (r) => (r % MiB === 0 ? `${r / MiB}M` : String(r));

function pad(cells, widths) {
  return cells.map((c, i) => String(c).padStart(widths[i])).join('  ');
}

async function parent() {
  const hb = require(path.resolve(__dirname, '..'));
  const { describeMachine } = require('./machine');
  const budgetS = option('seconds', 480);
  const minRows = option('min-rows', MiB);
  const free = os.freemem();
  const maxRows = option('max-rows', Infinity);
  const fitsFree = (rows) => rows * dim * 4 * 2 <= 0.4 * free;
  const sizes = [];
  for (let r = minRows; r <= maxRows && fitsFree(r); r *= 2) sizes.push(r);
  const start = process.hrtime.bigint();
  const df = spawnSync('df', ['-h', '--output=source,fstype,size,avail', os.tmpdir()], { encoding: 'utf8' });
  console.log(describeMachine(hb));
  console.log(`memory: ${fmtBytes(os.totalmem())} total, ${fmtBytes(free)} free at start; temp dir ${os.tmpdir()} on ${(df.stdout || '').split('\n')[1]?.trim() ?? '?'}`);
  console.log(`one identity column, dim ${dim}, Adagrad, Estimator: ${steps} steps of batch ${batch} (power-law ids), checkpoint at the end; then a fresh Estimator restores and predicts one batch`);
  console.log(`sizes (model = table + slot <= 40% of free memory${Number.isFinite(maxRows) ? `, <= --max-rows ${maxRows}` : ''}): ${sizes.map(rowsLabel).join(', ') || 'none'}; time bound ${budgetS} s`);
  if (sizes.length === 0) throw new Error(`no size fits: ${minRows} rows need ${fmtBytes(minRows * dim * 8)} > 40% of ${fmtBytes(free)} free`);

  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-scale-bench-'));
  const cleanup = () => {
    for (const c of children) c.kill('SIGKILL');
    fs.rmSync(root, { recursive: true, force: true });
  };
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      cleanup();
      process.exit(130);
    });
  }
  const results = [];
  const notes = [];
  try {
    let lastSeconds;
    let lastRatio;
    for (const rows of sizes) {
      const modelBytes = rows * dim * 4 * 2;
      const left = budgetS - seconds(start);
      if (lastSeconds !== undefined && lastSeconds * 2.2 > left) {
        notes.push(`stopped before ${rowsLabel(rows)} rows: the size before took ${lastSeconds.toFixed(0)} s, ${left.toFixed(0)} s of --seconds ${budgetS} left`);
        break;
      }
      if (lastRatio !== undefined && lastRatio * modelBytes + 0.5 * GiB > 0.85 * os.freemem()) {
        notes.push(`stopped before ${rowsLabel(rows)} rows: at ${lastRatio.toFixed(2)}x its model's bytes its peak RSS would be ${fmtBytes(lastRatio * modelBytes)}, over 85% of the ${fmtBytes(os.freemem())} free`);
        break;
      }
      const dir = path.join(root, `rows-${rows}`);
      fs.mkdirSync(dir);
      const t0 = process.hrtime.bigint();
      try {
        process.stdout.write(`${rowsLabel(rows)} rows (${fmtBytes(modelBytes)}): train + save ...`);
        const train = await runChild(rows, 'train', dir, budgetS - seconds(start));
        if (train.error) throw new Error(train.error);
        process.stdout.write(` ${seconds(t0).toFixed(1)} s; restore ...`);
        const restore = await runChild(rows, 'restore', dir, budgetS - seconds(start));
        if (restore.error) throw new Error(restore.error);
        process.stdout.write(` ${seconds(t0).toFixed(1)} s\n`);
        results.push({ rows, modelBytes, train, restore });
        lastSeconds = seconds(t0);
        lastRatio = Math.max(train.maxRss, restore.maxRss) / modelBytes;
      } catch (error) {
        process.stdout.write('\n');
        notes.push(error.message);
        break;
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    cleanup();
  }

  // Per size, in detail.
  for (const { rows, modelBytes, train: t, restore: r } of results) {
    const peak = Math.max(t.maxRss, r.maxRss);
    const target = 1.15 * modelBytes + 0.5 * GiB;
    console.log(`\n${rowsLabel(rows)} rows x ${dim}: model ${fmtBytes(modelBytes)} (table ${fmtBytes(t.tableBytes)} + slot ${fmtBytes(t.slotBytes)} ${t.slots.join(', ')}), checkpoint file ${fmtBytes(t.fileBytes)}`);
    console.log(`  table init: ${t.initSeconds.toFixed(2)} s, ${(t.tableBytes / t.initSeconds / 1e9).toFixed(2)} GB/s (${(rows * dim / t.initSeconds / 1e6).toFixed(0)} M values/s) | memory bandwidth (Float32Array.fill, ${t.fillThreads} threads): ${(t.tableBytes / t.fillSeconds / 1e9).toFixed(2)} GB/s | init / baseline = ${(t.fillSeconds / t.initSeconds).toFixed(3)} | the same fill over fresh pages: ${(t.tableBytes / t.firstTouchSeconds / 1e9).toFixed(2)} GB/s, init / that = ${(t.firstTouchSeconds / t.initSeconds).toFixed(3)}`);
    console.log(`  train ${steps} steps (first build and slot included): ${t.trainSeconds.toFixed(2)} s`);
    console.log(`  checkpoint write: ${t.saveSeconds.toFixed(2)} s, ${mbs(t.fileBytes, t.saveSeconds).toFixed(0)} MB/s | plain fs write + fsync of the same bytes: ${t.plainWriteSeconds.toFixed(2)} s, ${mbs(t.fileBytes, t.plainWriteSeconds).toFixed(0)} MB/s | write / plain = ${(t.plainWriteSeconds / t.saveSeconds).toFixed(2)}`);
    console.log(`  restore (fresh Estimator, read ${r.restoredSlots.length ? `table and ${r.restoredSlots.join(', ')}` : 'the table (predict makes no slot)'} hashed as it lands, one predict): ${r.restoreSeconds.toFixed(2)} s, ${mbs(r.fileBytes, r.restoreSeconds).toFixed(0)} MB/s of the file | plain fs read of the file: ${r.plainReadSeconds.toFixed(2)} s, ${mbs(r.fileBytes, r.plainReadSeconds).toFixed(0)} MB/s | restore / plain = ${(r.plainReadSeconds / r.restoreSeconds).toFixed(2)}${r.cold ? '' : ' (page cache not dropped: reads may be warm)'}`);
    // A restored table is made as zeros (not drawn by its initializer), then read in.
    console.log(`    for comparison (measured apart): the file's SHA-256 alone, from disk ${r.verifySeconds.toFixed(2)} s (${mbs(r.fileBytes, r.verifySeconds).toFixed(0)} MB/s)`);
    console.log(`  peak RSS: train + save ${fmtBytes(t.maxRss)} (after init ${fmtBytes(t.rssAfterInit)}), restore ${fmtBytes(r.maxRss)}; ${(peak / modelBytes).toFixed(2)}x the model, target <= ${fmtBytes(target)}`);
    const size = `${rowsLabel(rows)} rows x ${dim}`;
    const gbs = (bytes, s) => bytes / s / 1e9;
    record({
      workload: `table init, ${size} vs memory bandwidth`, value: gbs(t.tableBytes, t.initSeconds), baseline: gbs(t.tableBytes, t.fillSeconds), unit: 'GB/s',
      baselineName: `Float32Array.fill, ${t.fillThreads} threads`, target: 0.25,
    });
    record({
      workload: `table init, ${size} vs the fill over fresh pages`, value: gbs(t.tableBytes, t.initSeconds), baseline: gbs(t.tableBytes, t.firstTouchSeconds), unit: 'GB/s',
      baselineName: `Float32Array.fill on fresh pages, ${t.fillThreads} threads`,
    });
    record({
      workload: `checkpoint write, ${size} + slot vs a plain write + fsync`, value: mbs(t.fileBytes, t.saveSeconds), baseline: mbs(t.fileBytes, t.plainWriteSeconds), unit: 'MB/s',
      baselineName: 'plain fs write + fsync', target: 0.5,
    });
    record({
      workload: `restore, ${size} vs a plain read`, value: mbs(r.fileBytes, r.restoreSeconds), baseline: mbs(r.fileBytes, r.plainReadSeconds), unit: 'MB/s',
      baselineName: `plain fs read${r.cold ? '' : ' (page cache not dropped)'}`, target: 0.5,
    });
  }
  for (const n of notes) console.log(`\nnote: ${n}`);

  // The table.
  const head = ['rows', 'model', 'init s', 'init GB/s', 'mem GB/s', 'peak RSS', 'RSS/model', 'write s', 'write MB/s', 'plain MB/s', 'restore s', 'read MB/s', 'plain MB/s'];
  const rowsOut = results.map(({ rows, modelBytes, train: t, restore: r }) => {
    const peak = Math.max(t.maxRss, r.maxRss);
    return [
      rowsLabel(rows), fmtBytes(modelBytes), t.initSeconds.toFixed(2), (t.tableBytes / t.initSeconds / 1e9).toFixed(2), (t.tableBytes / t.fillSeconds / 1e9).toFixed(2),
      fmtBytes(peak), `${(peak / modelBytes).toFixed(2)}x`, t.saveSeconds.toFixed(2), mbs(t.fileBytes, t.saveSeconds).toFixed(0), mbs(t.fileBytes, t.plainWriteSeconds).toFixed(0),
      r.restoreSeconds.toFixed(2), mbs(r.fileBytes, r.restoreSeconds).toFixed(0), mbs(r.fileBytes, r.plainReadSeconds).toFixed(0),
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...rowsOut.map((r) => r[i].length)));
  console.log('\n' + pad(head, widths));
  for (const r of rowsOut) console.log(pad(r, widths));

  // One line per target.
  if (results.length > 0) {
    const verdict = (name, pass, detail) => console.log(`${pass.every(Boolean) ? 'met    ' : 'NOT MET'}  ${name}: ${detail}`);
    console.log('');
    const rss = results.map(({ modelBytes, train: t, restore: r }) => ({ peak: Math.max(t.maxRss, r.maxRss), target: 1.15 * modelBytes + 0.5 * GiB }));
    verdict('peak RSS <= 1.15x model + 0.5 GiB', rss.map((x) => x.peak <= x.target), results.map((x, i) => `${rowsLabel(x.rows)} ${fmtBytes(rss[i].peak)} / ${fmtBytes(rss[i].target)}`).join(', '));
    const write = results.map(({ train: t }) => t.plainWriteSeconds / t.saveSeconds);
    verdict('checkpoint write >= 50% of plain write + fsync', write.map((x) => x >= 0.5), results.map((x, i) => `${rowsLabel(x.rows)} ${(write[i] * 100).toFixed(0)}%`).join(', '));
    const read = results.map(({ restore: r }) => r.plainReadSeconds / r.restoreSeconds);
    verdict('checkpoint restore >= 50% of plain read', read.map((x) => x >= 0.5), results.map((x, i) => `${rowsLabel(x.rows)} ${(read[i] * 100).toFixed(0)}%`).join(', '));
    const init = results.map(({ train: t }) => t.fillSeconds / t.initSeconds);
    verdict('table init >= 25% of memory bandwidth', init.map((x) => x >= 0.25), results.map((x, i) => `${rowsLabel(x.rows)} ${(init[i] * 100).toFixed(0)}%`).join(', '));
    const largest = results[results.length - 1];
    console.log(`largest size run: ${rowsLabel(largest.rows)} rows, model ${fmtBytes(largest.modelBytes)} = ${((largest.modelBytes / os.totalmem()) * 100).toFixed(0)}% of ${fmtBytes(os.totalmem())}; total ${seconds(start).toFixed(0)} s`);
  }
  if (results.length === 0) process.exitCode = 1;
}

const childRows = option('child', undefined);
(childRows !== undefined ? child(childRows) : parent()).catch((error) => {
  console.error(error);
  process.exit(1);
});
