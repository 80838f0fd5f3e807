// Serving under hostile input: exports damaged in random ways (bytes of any file, or a
// value inside graph.json / manifest.json with the manifest's SHA-256 made to match, so
// the change reaches the parsers behind the checksum) and then loaded; a loaded model's
// predict with features of every wrong kind, alone and merged with good requests (the
// good ones must still get their predictions); and the REST server on 127.0.0.1 sent raw
// requests (wrong methods and routes, lying lengths, broken or deeply nested JSON, rows
// and columns that do not add up). After each hostile request the server must still
// answer a good one with the model's own predictions. Either an Error (a 4xx) says why,
// or the input is served: never a crash, a hang or a 500.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const net = require('net');
const path = require('path');
const { estimator, input } = require('../model');

// A broken promise of the serving layer (a good request refused, a wrong answer): reported
// by the runner as a finding, like an internal error.
function violation(message) {
  const error = new Error(`serving invariant: ${message}`);
  error.code = 'HB_ERR_INTERNAL';
  return error;
}

const COLORS = ['red', 'green', 'blue', 'cyan', 'olive'];

// Rows of the string model's features, seeded.
function stringRows(r, n) {
  const color = [], city = [], tags = [], tagWeight = [];
  const age = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    color.push(r.pick(COLORS));
    city.push(`city-${r.int(0, 60)}`);
    age[i] = r.int(0, 90);
    const t = Array.from({ length: r.int(0, 3) }, () => `t${r.int(0, 9)}`);
    tags.push(t);
    tagWeight.push(t.map(() => r.next()));
  }
  return { color, city, age, tags, tagWeight };
}

// Two exports made once per worker: the DLRM of fuzz/model.js (int64 ids) and a Wide &
// Deep over vocabulary, hashed, bucketized, crossed and weighted string columns.
let made;
function exportsOnce(hb, scratch) {
  if (made) return made;
  made = (async () => {
    const root = fs.mkdtempSync(path.join(scratch, 'serving-'));
    const dlrm = estimator(path.join(root, 'dlrm-model'), 1000);
    await dlrm.train(input(1), { steps: 2 });
    const dlrmExport = path.join(root, 'dlrm-export');
    await dlrm.exportSavedModel(dlrmExport);
    let dlrmBatch;
    for await (const b of input(2)()) {
      dlrmBatch = b.features;
      break;
    }

    const fc = hb.featureColumn;
    const color = fc.categoricalColumnWithVocabularyList('color', COLORS.slice(0, 4), { numOovBuckets: 2 });
    const age = fc.numericColumn('age');
    const ageBuckets = fc.bucketizedColumn(age, [18, 30, 50, 65]);
    const modelFn = hb.models.wideAndDeepModelFn({
      inputs: {
        numeric: [age],
        categorical: [
          { column: color },
          { column: fc.categoricalColumnWithHashBucket('city', 50) },
          { column: fc.crossedColumn([ageBuckets, 'color'], 37) },
          { column: fc.weightedCategoricalColumn(fc.categoricalColumnWithVocabularyList('tags', ['t0', 't1', 't2', 't3', 't4', 't5']), 'tagWeight'), embedding: { combiner: 'sqrtn' } },
        ],
        embeddingDim: 4,
      },
      hiddenUnits: [8],
      seed: 2,
    });
    const quiet = new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, saveCheckpointsSteps: 1000 });
    const wide = new hb.estimator.Estimator({ modelFn, modelDir: path.join(root, 'wide-model'), config: quiet });
    const { rng } = require('../generate');
    const rows = (seed) => {
      const features = stringRows(rng(seed), 32);
      return { features, labels: Float32Array.from(features.age, (a) => (a > 50 ? 1 : 0)) };
    };
    await wide.train(() => [1, 2].map(rows), { steps: 2 });
    const wideExport = path.join(root, 'wide-export');
    await wide.exportSavedModel(wideExport);
    const models = {
      dlrm: { exportDir: dlrmExport, good: dlrmBatch, loaded: await hb.serving.loadModel(dlrmExport, { device: 'cpu' }) },
      wide: { exportDir: wideExport, good: rows(3).features, loaded: await hb.serving.loadModel(wideExport, { device: 'cpu' }) },
    };
    for (const m of Object.values(models)) {
      m.version = fs.readdirSync(m.exportDir).find((d) => /^\d+$/.test(d));
      m.expected = await m.loaded.predict(m.good);
    }
    return models;
  })();
  // A failure (a busy machine's timeout) is tried again by the next case, not kept.
  made.catch(() => (made = undefined));
  return made;
}

function sameOutputs(a, b) {
  const keys = Object.keys(b);
  if (!a || Object.keys(a).length !== keys.length) return false;
  return keys.every((k) => a[k] && a[k].length === b[k].length && a[k].every((v, i) => Object.is(v, b[k][i])));
}

// A value of the wrong kind for a feature of `rows` rows.
function hostileFeature(r, rows, good) {
  const choices = [
    () => undefined,
    () => null,
    () => r.number(),
    () => 'text',
    () => ({}),
    () => [],
    () => Array.from({ length: rows + r.pick([-1, 1, 5]) }, () => 1),
    () => Array.from({ length: rows }, () => r.pick([null, undefined, NaN, -1, 2 ** 63, 'x', [], [[1]], {}, true, -0, 1e300])),
    () => r.typedArray(undefined, r.pick([rows, rows + 1, Math.max(0, rows - 1), 0]), () => r.number()).array,
    () => r.typedArray('f32', rows, () => r.pick([NaN, Infinity, -1, 1e30])).array,
    () => r.typedArray('i64', rows, () => r.pick([-1, 2 ** 40, -(2 ** 53), 0])).array,
    () => ({ values: r.typedArray(undefined, r.size()).array, rowSplits: r.typedArray('i32', rows + 1, () => r.int(-3, 5)).array }),
    () => ({ values: new BigInt64Array(2), rowSplits: Int32Array.from([0, 1, 2]), weights: new Float32Array(5) }),
    () => ({ values: new BigInt64Array(rows), rowSplits: Int32Array.from({ length: rows + 1 }, (_, i) => i), weights: Float32Array.from({ length: rows }, () => r.pick([NaN, -1, Infinity, 0])) }),
    () => Array.from({ length: rows }, () => Array.from({ length: r.int(0, 3) }, () => r.pick(['a', 1, null, [], 'red']))),
    () => { const a = [1, 2]; a.length = rows; return a; },
    () => ({ get values() { throw new Error('getter threw'); }, rowSplits: new Int32Array(rows + 1) }),
    () => new Proxy(Array.isArray(good) ? good.slice() : {}, { get: (t, k) => (k === 'length' ? 2 ** 32 : t[k]) }),
  ];
  return r.pick(choices)();
}

function hostileFeatures(r, good) {
  const rows = Object.values(good).find((v) => v.length !== undefined && !v.rowSplits).length;
  const features = { ...good };
  const keys = Object.keys(good);
  for (let i = 0, n = r.int(1, 3); i < n; i++) {
    const key = r.pick(keys);
    if (r.chance(0.2)) delete features[key];
    else features[key] = hostileFeature(r, rows, good[key]);
  }
  if (r.chance(0.1)) features[r.pick(['unknown', '__proto__', 'constructor'])] = new Float32Array(rows);
  return features;
}

async function predictCase(r, { attempt }, models) {
  const m = models[r.pick(Object.keys(models))];
  const bad = hostileFeatures(r, m.good);
  if (r.chance(0.5)) {
    await attempt('predict hostile features', () => m.loaded.predict(bad));
    return;
  }
  // Merged with good requests: theirs must come back as if alone.
  const goods = Array.from({ length: r.int(1, 4) }, () => m.loaded.predict(m.good));
  const badCall = attempt('predict hostile features among good ones', () => m.loaded.predict(bad));
  const results = await Promise.allSettled(goods);
  await badCall;
  for (const result of results) {
    if (result.status === 'rejected') throw violation(`a good request merged with a bad one failed: ${result.reason && result.reason.message}`);
    if (!sameOutputs(result.value, m.expected)) throw violation('a good request merged with a bad one got other predictions');
  }
}

// --- damaged exports ------------------------------------------------------------------

function corruptBytes(r, file) {
  const bytes = fs.readFileSync(file);
  const how = r.pick(['flip', 'cut', 'zero', 'append', 'empty']);
  if (how === 'flip') for (let i = 0; i < r.int(1, 8); i++) bytes[r.int(0, Math.max(0, bytes.length - 1))] ^= 1 << r.int(0, 7);
  if (how === 'zero') bytes.fill(0, r.int(0, bytes.length), r.int(0, bytes.length));
  const out = how === 'cut' ? bytes.subarray(0, r.int(0, Math.max(0, bytes.length - 1)))
    : how === 'append' ? Buffer.concat([bytes, Buffer.alloc(r.int(1, 4096), r.int(0, 255))])
    : how === 'empty' ? Buffer.alloc(0)
    : bytes;
  fs.writeFileSync(file, out);
}

// The manifest's size and SHA-256 of `name` set to the file's, so the damage gets past them.
function rehash(versionDir, name) {
  const manifestFile = path.join(versionDir, 'manifest.json');
  const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
  if (!manifest || typeof manifest.files !== 'object' || !manifest.files || !manifest.files[name]) return;
  const bytes = fs.readFileSync(path.join(versionDir, name));
  manifest.files[name] = { sha256: crypto.createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length };
  fs.writeFileSync(manifestFile, JSON.stringify(manifest));
}

async function damagedExportCase(r, { hb, attempt, scratch }, models) {
  const m = models[r.pick(Object.keys(models))];
  const dir = fs.mkdtempSync(path.join(scratch, 'export-'));
  const versionDir = path.join(dir, m.version);
  fs.cpSync(path.join(m.exportDir, m.version), versionDir, { recursive: true });
  const name = r.pick(['graph.json', 'graph.json', 'manifest.json', 'variables.bin']);
  const file = path.join(versionDir, name);
  if (name.endsWith('.json') && r.chance(0.8)) {
    let doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    for (let i = 0, n = r.int(1, 3); i < n; i++) doc = r.mutateJson(doc);
    fs.writeFileSync(file, JSON.stringify(doc));
  } else {
    corruptBytes(r, file);
  }
  if (name !== 'manifest.json' && r.chance(0.8)) {
    try {
      rehash(versionDir, name);
    } catch {
      // a manifest no longer JSON: left as it is
    }
  }
  const model = await attempt(`loadModel with ${name} damaged`, () => hb.serving.loadModel(dir, { device: 'cpu' }));
  if (model) {
    await attempt(`predict on an export with ${name} damaged`, () => model.predict(r.chance(0.7) ? m.good : hostileFeatures(r, m.good)));
    await attempt('close', () => model.close());
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

// --- the REST server ------------------------------------------------------------------

let serverMade;
function serverOnce(hb, models) {
  if (serverMade) return serverMade;
  serverMade = (async () => {
    const server = await hb.serving.startServer({
      exportDir: models.wide.exportDir,
      modelName: 'fuzz',
      host: '127.0.0.1',
      port: 0,
      load: (dir) => hb.serving.loadModel(dir, { device: 'cpu' }),
      maxRequestBytes: 1 << 20,
      pollIntervalMs: 60_000,
    });
    // Requests wait for the first version to load (a 503 until then).
    for (const deadline = Date.now() + 10_000; server.version === undefined && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 10));
    return server;
  })();
  return serverMade;
}

// Sends `raw` on a fresh connection; resolves to the response's text (status line first),
// or '' when the server closed without one; gives up after `ms`.
function exchange(port, raw, ms = 3000) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const chunks = [];
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    const timer = setTimeout(finish, ms);
    socket.on('data', (c) => {
      chunks.push(c);
      const text = Buffer.concat(chunks).toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      const length = /content-length: *(\d+)/i.exec(text);
      if (head >= 0 && length && text.length >= head + 4 + Number(length[1])) finish();
    });
    socket.on('error', finish);
    socket.on('end', finish);
    socket.on('close', finish);
    socket.write(raw);
  });
}

function request(method, route, body, headers = {}) {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body ?? '', 'utf8');
  const lines = [`${method} ${route} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  if (!('content-length' in headers) && body !== undefined) lines.push(`Content-Length: ${bytes.length}`);
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), bytes]);
}

// The rows of a string-model batch as TF Serving's `instances`.
function instancesOf(features) {
  const rows = features.age.length;
  return Array.from({ length: rows }, (_, i) => ({
    color: features.color[i], city: features.city[i], age: features.age[i], tags: features.tags[i], tagWeight: features.tagWeight[i],
  }));
}

function hostileBody(r, good) {
  const instances = instancesOf(good);
  const pick = r.int(0, 11);
  if (pick === 0) return '{"instances": [' + '['.repeat(r.pick([100, 5000, 200000])) + ']}';
  if (pick === 1) return '{'.repeat(r.pick([10, 100000]));
  if (pick === 2) return JSON.stringify({ instances: instances.map((row) => { const o = { ...row }; delete o[r.pick(Object.keys(o))]; return o; }) });
  if (pick === 3) return JSON.stringify({ inputs: { ...Object.fromEntries(Object.entries(good).map(([k, v]) => [k, Array.from(v)])), age: [1, 2] } });
  if (pick === 4) return JSON.stringify({ instances: instances.map((row) => ({ ...row, [r.pick(Object.keys(row))]: r.pick([null, {}, [[['x']]], 1e309, -1, 'NaN', true, '', [1, 'a']]) })) });
  if (pick === 5) return JSON.stringify({ instances: [], inputs: {} });
  if (pick === 6) return JSON.stringify({ instances: Array.from({ length: r.pick([5000, 100000]) }, () => instances[0]) });
  if (pick === 7) return JSON.stringify(r.pick([null, 1, 'x', [], { instances: null }, { instances: 'x' }, { inputs: [] }, { signature_name: 'nope', instances }]));
  if (pick === 8) return JSON.stringify({ instances }).slice(0, r.int(1, 200));
  if (pick === 9) return Buffer.from(Array.from({ length: r.int(1, 512) }, () => r.int(0, 255)));
  if (pick === 10) return JSON.stringify({ instances: instances.map((row) => ({ ...row, age: { b64: 'AAAA' } })) });
  return JSON.stringify({ instances: instances.map((row) => ({ ...row, tags: r.pick(['\u0000', '\ud800', 'x'.repeat(70000)]) })) });
}

function hostileRaw(r, good) {
  const route = '/v1/models/fuzz:predict';
  const pick = r.int(0, 7);
  if (pick <= 2) return request('POST', route, hostileBody(r, good), r.chance(0.2) ? { 'Content-Type': 'text/plain' } : {});
  if (pick === 3) return request(r.pick(['GET', 'PUT', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH']), r.pick([route, '/v1/models/fuzz', '/v1/models/fuzz/metadata', '/metrics', '/v1/models/other:predict', '/', '/v1/models/fuzz/versions/1:predict', '/v1/models/fuzz/versions/x', '//..%2f', '/v1/models/' + 'a'.repeat(5000)]), undefined);
  if (pick === 4) return request('POST', route, JSON.stringify({ instances: instancesOf(good) }), { 'content-length': String(r.pick([0, 5, 2 ** 31, -1, 'x'])) });
  if (pick === 5) return request('POST', route, Buffer.alloc((1 << 20) + r.int(1, 4096), 0x20));
  if (pick === 6) return Buffer.from(`POST ${route} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${r.pick(['zz\r\n', 'ffffffff\r\n{', '5\r\n{"ins\r\n0\r\n\r\n', '0\r\n\r\n'])}`, 'latin1');
  return Buffer.from(r.pick(['\r\n\r\n', 'GARBAGE\r\n\r\n', 'POST / HTTP/9.9\r\n\r\n', `POST ${route} HTTP/1.1\r\n` + 'X: y\r\n'.repeat(5000) + '\r\n']), 'latin1');
}

async function httpCase(r, { hb }, models) {
  const server = await serverOnce(hb, models);
  const port = server.port;
  const m = models.wide;
  for (let i = 0, n = r.int(1, 3); i < n; i++) {
    const reply = await exchange(port, hostileRaw(r, m.good));
    const status = Number((/^HTTP\/1\.1 (\d{3})/.exec(reply) || [])[1]);
    if (status >= 500 && status !== 503) throw violation(`a hostile request got ${status}: ${reply.slice(0, 300)}`);
  }
  // A good request still gets the model's own predictions.
  const reply = await exchange(port, request('POST', '/v1/models/fuzz:predict', JSON.stringify({ instances: instancesOf(m.good) }), { 'Content-Type': 'application/json' }), 10_000);
  const status = Number((/^HTTP\/1\.1 (\d{3})/.exec(reply) || [])[1]);
  if (status !== 200) throw violation(`a good request after hostile ones got ${status || 'no answer'}: ${reply.slice(0, 300)}`);
  const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4));
  const probs = body.predictions.map((p) => (typeof p === 'number' ? p : p.probs));
  const expected = Array.from(m.expected.probs);
  if (probs.length !== expected.length || probs.some((p, i) => Math.fround(Array.isArray(p) ? p[0] : p) !== expected[i])) {
    throw violation('a good request over HTTP got other predictions than model.predict');
  }
}

module.exports = {
  name: 'serving',
  async run(r, context) {
    const models = await exportsOnce(context.hb, context.scratch);
    const mode = r.pick(['predict', 'predict', 'export', 'http', 'http']);
    if (mode === 'predict') await predictCase(r, context, models);
    else if (mode === 'export') await damagedExportCase(r, context, models);
    else await httpCase(r, context, models);
  },
};
