#!/usr/bin/env node
// Input pipeline throughput next to the training step it must feed, measured in the same
// run: rows/s of hb.data reading Parquet (26 string + 13 float columns + label) and raw
// Criteo TSV, with one reader thread and with all cores, against the rows/s of two
// training steps at the same batch size: the DLRM step of bench/dlrm_step.bench.js (what a
// reader feeds in a real run) and the bare sparse step (lookup + backward + Adagrad on a
// 1M x 64 table, 26 power-law ids per example, as bench/sparse_step.bench.js). The reader
// must deliver at least 3 steps' worth of rows in the time of one.
//
//   node bench/data.bench.js [--rows 1000000] [--batch 8192] [--iters 20] [--tableRows 1000000] [--dim 64]
//
// Also: training fed by the pipeline itself (Dataset.synthetic with the same id shape,
// prefetching while each step runs) against the same steps on batches made in advance,
// which shows what is left when readers and the step share the cores.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { performance } = require('perf_hooks');
const hb = require(path.resolve(__dirname, '..'));
const arrow = require('apache-arrow');
const parquet = require('parquet-wasm/node');
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { dlrmTrainer, seededUniform, sparseAdagradStep } = require('./workloads');
const { record } = require('./report');

const rows = option('rows', 1_000_000);
const batch = option('batch', 8192);
const iters = option('iters', 20);
const tableRows = option('tableRows', 1_000_000);
const dim = option('dim', 64);
const features = 26;
const alpha = 1.1;
const cores = os.availableParallelism();

// Criteo-like values: categoricals are 8 hex characters drawn with a skew from
// vocabularies of 10^2..10^6 values, about 4% empty; integers are counts, about 10% empty.
// Kept as numbers and written out as bytes: making millions of JS strings would take
// longer than the benchmark itself.
function criteoLike(n, seed) {
  const random = seededUniform(seed);
  const label = new Float32Array(n);
  const ints = Array.from({ length: 13 }, () => new Float32Array(n));
  const intMissing = Array.from({ length: 13 }, () => new Uint8Array(n));
  const cats = Array.from({ length: 26 }, () => new Uint32Array(n));
  const catMissing = Array.from({ length: 26 }, () => new Uint8Array(n));
  const vocabulary = Array.from({ length: 26 }, (_, c) => 10 ** (2 + (c % 5)));
  for (let i = 0; i < n; i++) {
    label[i] = random() < 0.25 ? 1 : 0;
    for (let j = 0; j < 13; j++) {
      if (random() < 0.1) intMissing[j][i] = 1;
      else ints[j][i] = Math.floor(Math.expm1(random() * 8));
    }
    for (let c = 0; c < 26; c++) {
      if (random() < 0.04) catMissing[c][i] = 1;
      else cats[c][i] = Math.imul(Math.floor(random() ** 3 * vocabulary[c]) + c * 1e7, 2654435761) >>> 0;
    }
  }
  return { n, label, ints, intMissing, cats, catMissing };
}

const HEX = Uint8Array.from('0123456789abcdef', (ch) => ch.charCodeAt(0));

function writeHex(out, at, value) {
  for (let k = 7; k >= 0; k--) out[at + 7 - k] = HEX[(value >>> (4 * k)) & 15];
  return at + 8;
}

function utf8Vector(values, missing) {
  const n = values.length;
  const offsets = new Int32Array(n + 1);
  const bitmap = new Uint8Array(((n + 63) >> 6) << 3);
  const bytes = new Uint8Array(n * 8);
  let nulls = 0;
  for (let i = 0; i < n; i++) {
    if (missing[i]) {
      nulls++;
      offsets[i + 1] = offsets[i];
    } else {
      bitmap[i >> 3] |= 1 << (i & 7);
      offsets[i + 1] = writeHex(bytes, offsets[i], values[i]);
    }
  }
  return arrow.makeVector(arrow.makeData({ type: new arrow.Utf8(), length: n, nullCount: nulls, nullBitmap: bitmap, valueOffsets: offsets, data: bytes.subarray(0, offsets[n]) }));
}

function slice(data, from, to) {
  const part = (arrays) => arrays.map((a) => a.subarray(from, to));
  return { n: to - from, label: data.label.subarray(from, to), ints: part(data.ints), intMissing: part(data.intMissing), cats: part(data.cats), catMissing: part(data.catMissing) };
}

function writeParquetFile(file, data) {
  const columns = { label: arrow.makeVector(data.label) };
  data.ints.forEach((values, j) => (columns[`I${j + 1}`] = arrow.makeVector(values)));
  data.cats.forEach((values, c) => (columns[`C${c + 1}`] = utf8Vector(values, data.catMissing[c])));
  const table = new arrow.Table(columns);
  const properties = new parquet.WriterPropertiesBuilder().setMaxRowGroupSize(65536).setCompression(parquet.Compression.SNAPPY).build();
  fs.writeFileSync(file, parquet.writeParquet(parquet.Table.fromIPCStream(arrow.tableToIPC(table, 'stream')), properties));
}

function writeTsvFile(file, data) {
  const fd = fs.openSync(file, 'w');
  const out = Buffer.alloc(1 << 22);
  let at = 0;
  const digits = (value) => {
    const text = String(value);
    for (let k = 0; k < text.length; k++) out[at++] = text.charCodeAt(k);
  };
  for (let i = 0; i < data.n; i++) {
    out[at++] = data.label[i] ? 49 : 48;
    for (let j = 0; j < 13; j++) {
      out[at++] = 9;
      if (!data.intMissing[j][i]) digits(data.ints[j][i]);
    }
    for (let c = 0; c < 26; c++) {
      out[at++] = 9;
      if (!data.catMissing[c][i]) at = writeHex(out, at, data.cats[c][i]);
    }
    out[at++] = 10;
    if (at > out.length - 1024) (fs.writeSync(fd, out, 0, at), (at = 0));
  }
  fs.writeSync(fd, out, 0, at);
  fs.closeSync(fd);
}

// Rows/s once rows flow (from the first batch to the last), and the start-up before the
// first batch (starting threads, loading the decoder, reading footers), best of two passes.
async function readRate(makeDataset) {
  let best;
  for (let pass = 0; pass < 2; pass++) {
    const start = process.hrtime.bigint();
    let first;
    let firstRows = 0;
    let count = 0;
    for await (const b of makeDataset()) {
      if (first === undefined) (first = process.hrtime.bigint()), (firstRows = b.labels.length);
      count += b.labels.length;
    }
    const end = process.hrtime.bigint();
    const result = {
      rowsPerSecond: (count - firstRows) / (Number(end - first) / 1e9),
      overall: count / (Number(end - start) / 1e9),
      startup: Number(first - start) / 1e9,
      count,
    };
    if (best === undefined || result.rowsPerSecond > best.rowsPerSecond) best = result;
  }
  return best;
}

function idsDataset(numSamples, numWorkers) {
  return hb.data.Dataset.synthetic({ numDense: 0, tables: [{ name: 'ids', vocabularySize: tableRows, hotness: features, alpha }], numSamples, seed: 5, numWorkers });
}

async function main() {
  console.log(describeMachine(hb));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-data-bench-'));
  try {
    let start = Date.now();
    const data = criteoLike(rows, 1);
    const parquetFiles = [path.join(dir, 'a.parquet'), path.join(dir, 'b.parquet')];
    const tsvFiles = [path.join(dir, 'a.tsv'), path.join(dir, 'b.tsv')];
    for (const k of [0, 1]) {
      const part = slice(data, k * (rows >> 1), (k + 1) * (rows >> 1));
      writeParquetFile(parquetFiles[k], part);
      writeTsvFile(tsvFiles[k], part);
    }
    const size = (files) => files.reduce((s, f) => s + fs.statSync(f).size, 0) / 1e6;
    console.log(
      `data: ${2 * (rows >> 1)} Criteo-like rows in 2 files each: Parquet (snappy, 64Ki-row groups) ${size(parquetFiles).toFixed(1)} MB, ` +
        `TSV ${size(tsvFiles).toFixed(1)} MB (made in ${((Date.now() - start) / 1e3).toFixed(1)} s)`,
    );

    // The training step at this batch size, on batches made in advance.
    const step = sparseAdagradStep(hb, { rows: tableRows, dim, batch, name: 'data_bench_table' });
    const premade = [];
    for await (const b of idsDataset(3 * batch, cores).batch(batch)) premade.push(b.features.ids);
    for (let i = 0; i < 2; i++) await step(premade[i % premade.length]);
    const times = [];
    for (let i = 0; i < iters; i++) {
      const t0 = process.hrtime.bigint();
      await step(premade[i % premade.length]);
      times.push(Number(process.hrtime.bigint() - t0) / 1e9);
    }
    const stepSeconds = times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
    const trainRows = batch / stepSeconds;
    console.log(
      `training step (sparse step on ${hb.currentDevice()}: lookup + backward + Adagrad, ${tableRows}x${dim} table, batch ${batch}, ${features} ids/example, alpha ${alpha}): ` +
        `${(stepSeconds * 1e3).toFixed(1)} ms, ${Math.round(trainRows).toLocaleString('en-US')} rows/s`,
    );

    // The DLRM training step (bench/dlrm_step.bench.js's model) at the same batch size:
    // the step a reader feeds in a real run.
    const dlrm = await (await dlrmTrainer(hb, { rows: 100_000, dim: 64, batch })).time(3);
    const dlrmRows = (batch * 1000) / dlrm.msPerStep;
    console.log(
      `training step (DLRM on ${hb.currentDevice()}: 26 tables 100000x64, MLPs 512-256-64 / 512-256-1, batch ${batch}, Adagrad): ` +
        `${dlrm.msPerStep.toFixed(1)} ms, ${Math.round(dlrmRows).toLocaleString('en-US')} rows/s`,
    );

    const cases = [
      ['Parquet, 26 string + 13 float columns', (workers) => hb.data.Dataset.fromParquet(parquetFiles, { labelField: 'label', numWorkers: workers }).batch(batch)],
      ['Criteo TSV', (workers) => hb.data.Dataset.fromCriteoTsv(tsvFiles, { numWorkers: workers }).batch(batch)],
    ];
    for (const [name, make] of cases) {
      for (const workers of [1, cores]) {
        const r = await readRate(() => make(workers));
        console.log(
          `${name}, ${workers} reader thread${workers > 1 ? 's' : ''}: ${Math.round(r.rowsPerSecond).toLocaleString('en-US')} rows/s ` +
            `(start-up ${(r.startup * 1e3).toFixed(0)} ms; ${Math.round(r.overall).toLocaleString('en-US')} rows/s with it over ${r.count} rows) | ` +
            `ratio reader rows/s / training rows/s = ${(r.rowsPerSecond / trainRows).toFixed(2)} (sparse step), ${(r.rowsPerSecond / dlrmRows).toFixed(2)} (DLRM step)`,
        );
        const reader = `${name}, ${workers} reader thread${workers > 1 ? 's' : ''}`;
        record({ workload: `${reader} vs the sparse step's rows/s`, value: r.rowsPerSecond, baseline: trainRows, unit: 'rows/s', baselineName: `sparse step, batch ${batch}` });
        record({ workload: `${reader} vs the DLRM step's rows/s`, value: r.rowsPerSecond, baseline: dlrmRows, unit: 'rows/s', baselineName: `DLRM step, batch ${batch}`, target: 3 });
      }
    }

    // The shuffle's cost to the JS thread: its time busy per batch (event-loop utilisation)
    // reading the TSV files with and without .shuffle(4 batches), in the same run.
    const busyPerBatch = async (make) => {
      let best;
      for (let pass = 0; pass < 2; pass++) {
        const before = performance.eventLoopUtilization();
        const start = process.hrtime.bigint();
        let batches = 0;
        let count = 0;
        for await (const b of make()) (batches++, (count += b.labels.length));
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        const busy = performance.eventLoopUtilization(before).active / batches;
        if (best === undefined || busy < best.busy) best = { busy, rowsPerSecond: count / seconds };
      }
      return best;
    };
    const plainRead = await busyPerBatch(() => hb.data.Dataset.fromCriteoTsv(tsvFiles, { numWorkers: cores }).batch(batch));
    const shuffledRead = await busyPerBatch(() => hb.data.Dataset.fromCriteoTsv(tsvFiles, { numWorkers: cores }).batch(batch).shuffle(4 * batch, { seed: 1 }));
    console.log(
      `Criteo TSV, ${cores} reader threads, shuffle(${4 * batch}): JS thread busy ${shuffledRead.busy.toFixed(2)} ms per batch of ${batch} ` +
        `(${Math.round(shuffledRead.rowsPerSecond).toLocaleString('en-US')} rows/s) | without the shuffle ${plainRead.busy.toFixed(2)} ms ` +
        `(${Math.round(plainRead.rowsPerSecond).toLocaleString('en-US')} rows/s) | ratio ${(shuffledRead.busy / plainRead.busy).toFixed(2)}`,
    );
    record({
      workload: `Criteo TSV: JS thread busy per batch with shuffle(${4 * batch}) vs without`,
      value: shuffledRead.busy, baseline: plainRead.busy, unit: 'ms/batch', higherIsBetter: false, baselineName: 'the same read without shuffle',
    });

    // The next epoch over the same Dataset: its reader threads, with Parquet's WebAssembly
    // loaded, are kept from a pass that read to the end.
    const epochs = hb.data.Dataset.fromParquet(parquetFiles, { labelField: 'label', numWorkers: cores }).batch(batch);
    const passStartup = async () => {
      const start = process.hrtime.bigint();
      let first;
      for await (const b of epochs) if (first === undefined) first = process.hrtime.bigint(), void b;
      return Number(first - start) / 1e6;
    };
    const firstPass = await passStartup();
    const nextPass = await passStartup();
    console.log(`Parquet, ${cores} reader threads, passes over one Dataset: start-up ${firstPass.toFixed(0)} ms for the first, ${nextPass.toFixed(0)} ms for the next (threads kept)`);
    record({ workload: 'Parquet: next pass start-up (threads kept) vs the first pass', value: nextPass, baseline: firstPass, unit: 'ms', higherIsBetter: false, baselineName: 'first pass (threads started)' });

    // Training fed by the pipeline while it runs, against the steps above.
    const fedSteps = iters * 2;
    const fed = idsDataset(fedSteps * batch, cores).batch(batch).prefetch(2);
    let n = 0;
    let t0 = 0n;
    for await (const b of fed) {
      if (n === 2) t0 = process.hrtime.bigint();
      await step(b.features.ids);
      n++;
    }
    const fedSeconds = Number(process.hrtime.bigint() - t0) / 1e9 / (n - 2);
    console.log(
      `training fed by Dataset.synthetic (${cores} reader threads, prefetch 2, same id shape): ${(fedSeconds * 1e3).toFixed(1)} ms/step ` +
        `| ratio premade-batch step time / fed step time = ${(stepSeconds / fedSeconds).toFixed(2)}`,
    );
    record({
      workload: `sparse step fed by Dataset.synthetic (${cores} reader threads, prefetch 2) vs on premade batches`,
      value: fedSeconds * 1e3, baseline: stepSeconds * 1e3, unit: 'ms/step', higherIsBetter: false, baselineName: 'premade batches',
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
