#!/usr/bin/env node
// Serving an export: hb.serving.loadModel's predict at batch 1, 64 and 1024 (latency p50 /
// p99, rows/s) against estimator.predict on the same rows, interleaved in one run; many
// callers of batch 1 at once (micro-batched) against the same requests one after another;
// and `hb-ts serve`'s HTTP server on loopback with N concurrent clients for a bounded time.
//
//   node bench/serving.bench.js [--tables 26] [--rows 100000] [--dim 16] [--iters 200] [--clients 8] [--seconds 5]
//
// The model is the DLRM `hb-ts train` trains by default (13 numeric features, 26 tables,
// MLPs 64-16 / 64-1), trained a few steps on generated rows.
'use strict';
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { record } = require('./report');

const numTables = option('tables', 26);
const rows = option('rows', 100_000);
const dim = option('dim', 16);
const iters = option('iters', 200);
const clients = option('clients', 8);
const seconds = option('seconds', 5);
const numDense = 13;

// A fixed, deterministic batch of `n` rows: numbers for I1..I13, one id per C1..C26.
function batchOf(n, seed) {
  let s = seed >>> 0;
  const next = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  const features = {};
  for (let i = 1; i <= numDense; i++) features[`I${i}`] = Float32Array.from({ length: n }, () => Math.floor(next() * 100));
  for (let t = 1; t <= numTables; t++) features[`C${t}`] = Array.from({ length: n }, () => Math.floor(next() ** 3 * rows));
  const labels = Float32Array.from({ length: n }, () => (next() < 0.25 ? 1 : 0));
  return { features, labels };
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

const ms = (s) => (s * 1000).toFixed(3);

async function timeOnce(fn) {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** POSTs `body` to `url`; resolves with the status once the whole answer is read. */
function post(agent, url, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function main() {
  console.log(`machine: ${describeMachine(hb)}`);
  const modelFn = hb.models.dlrmModelFn({
    denseFeatures: Array.from({ length: numDense }, (_, i) => `I${i + 1}`),
    tables: Array.from({ length: numTables }, (_, t) => ({ name: `C${t + 1}`, numBuckets: rows })),
    embeddingDim: dim,
    bottomMlp: [64, dim],
    topMlp: [64],
    seed: 1,
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-serving-bench-'));
  let server;
  try {
    const estimator = new hb.estimator.Estimator({ modelFn, config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, tfRandomSeed: 1 }) });
    await estimator.train(() => [1, 2, 3, 4].map((s) => batchOf(1024, s)), { steps: 4 });
    const exported = await estimator.exportSavedModel(path.join(dir, 'export'));
    const bytes = fs.readdirSync(exported).reduce((n, f) => n + fs.statSync(path.join(exported, f)).size, 0);
    console.log(`model: DLRM, ${numTables} tables of ${rows} x ${dim}, export ${(bytes / 2 ** 20).toFixed(1)} MiB`);
    const model = await hb.serving.loadModel(exported, { device: 'cpu' });

    console.log('\nin process: loadModel(...).predict vs estimator.predict on the same rows (interleaved)');
    for (const n of [1, 64, 1024]) {
      const batch = batchOf(n, 100 + n);
      const predictOf = async () => {
        for await (const p of estimator.predict(() => [batch])) void p; // what a user of the Estimator waits for
      };
      const served = [];
      const viaEstimator = [];
      const count = n >= 1024 ? Math.max(20, Math.floor(iters / 5)) : iters;
      for (let i = 0; i < 3; i++) {
        await model.predict(batch.features);
        await predictOf();
      }
      for (let i = 0; i < count; i++) {
        served.push(await timeOnce(() => model.predict(batch.features)));
        viaEstimator.push(await timeOnce(predictOf));
      }
      served.sort((a, b) => a - b);
      viaEstimator.sort((a, b) => a - b);
      const p50 = percentile(served, 0.5);
      const e50 = percentile(viaEstimator, 0.5);
      console.log(
        `  batch ${String(n).padStart(4)}: predict p50 ${ms(p50)} ms, p99 ${ms(percentile(served, 0.99))} ms, ${Math.round(n / p50)} rows/s | ` +
          `estimator.predict p50 ${ms(e50)} ms, p99 ${ms(percentile(viaEstimator, 0.99))} ms | ${(e50 / p50).toFixed(2)}x`,
      );
      record({
        workload: `loadModel(...).predict, batch ${n}, p50 vs estimator.predict`,
        value: p50 * 1e3, baseline: e50 * 1e3, unit: 'ms', higherIsBetter: false, baselineName: 'estimator.predict, same rows',
      });
    }

    console.log(`\nmicro-batching: ${clients * 8} requests of batch 1, all at once vs one after another`);
    {
      const requests = Array.from({ length: clients * 8 }, (_, i) => batchOf(1, 5000 + i).features);
      for (let round = 0; round < 3; round++) {
        const sequential = await timeOnce(async () => {
          for (const r of requests) await model.predict(r);
        });
        const callsBefore = model.batchStats.calls;
        const together = await timeOnce(() => Promise.all(requests.map((r) => model.predict(r))));
        const calls = model.batchStats.calls - callsBefore;
        console.log(
          `  round ${round + 1}: at once ${Math.round(requests.length / together)} predictions/s in ${calls} native calls, ` +
            `one after another ${Math.round(requests.length / sequential)} predictions/s | ${(sequential / together).toFixed(2)}x`,
        );
        record({
          workload: `${requests.length} batch-1 predicts at once (micro-batched), round ${round + 1} vs one after another`,
          value: requests.length / together, baseline: requests.length / sequential, unit: 'predictions/s', baselineName: 'one after another',
        });
      }
    }
    await model.close();

    console.log(`\nHTTP on loopback (hb-ts serve's server), ${clients} clients, ${seconds} s per batch size`);
    server = await hb.serving.startServer({ exportDir: path.join(dir, 'export'), modelName: 'dlrm', host: '127.0.0.1', port: 0, load: (d) => hb.serving.loadModel(d, { device: 'cpu' }) });
    const url = `${server.url}/v1/models/dlrm:predict`;
    for (const n of [1, 64]) {
      const batch = batchOf(n, 900 + n);
      const instances = Array.from({ length: n }, (_, r) => Object.fromEntries(Object.entries(batch.features).map(([k, v]) => [k, v[r]])));
      const body = JSON.stringify({ instances });
      const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
      const latencies = [];
      let failed = 0;
      const end = Date.now() + seconds * 1000;
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (Date.now() < end) {
            const start = process.hrtime.bigint();
            const status = await post(agent, url, body).catch(() => 0);
            latencies.push(Number(process.hrtime.bigint() - start) / 1e9);
            if (status !== 200) failed++;
          }
        }),
      );
      agent.destroy();
      latencies.sort((a, b) => a - b);
      console.log(
        `  batch ${String(n).padStart(2)}: ${Math.round(latencies.length / seconds)} requests/s (${Math.round((latencies.length * n) / seconds)} rows/s), ` +
          `p50 ${ms(percentile(latencies, 0.5))} ms, p99 ${ms(percentile(latencies, 0.99))} ms, ${failed} failed`,
      );
    }
  } finally {
    if (server) await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
