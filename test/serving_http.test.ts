// The model server (lib/serving/http_server.ts) over real HTTP on 127.0.0.1, with a fake
// ServableModel: TF Serving's predict (row and columnar), status and metadata, every
// refused request with its status code, Prometheus metrics, loading the newest version,
// skipping one that fails, swapping versions under load without failing a request, and
// closing with requests in flight. Every server is closed after its test, failed or not.
import * as fs from 'fs';
import * as http from 'http';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import type { Features } from '../lib/data/batch';
import { ModelServer, ServerOptions, startServer } from '../lib/serving/http_server';
import { BadInputError, ServableModel, ServingSignature } from '../lib/serving/servable';

const MODEL = 'ranker';

const SIGNATURE: ServingSignature = {
  inputs: [
    { name: 'x', kind: 'numeric', dtype: 'float32', width: 1 },
    { name: 'pair', kind: 'numeric', dtype: 'float32', width: 2 },
    { name: 'tags', kind: 'categorical', dtype: 'string' },
  ],
  outputs: [
    { name: 'sum', dtype: 'float32', width: 1 },
    { name: 'tag_count', dtype: 'float32', width: 1 },
    { name: 'version', dtype: 'float32', width: 1 },
  ],
};

/** Resolves once `condition` holds; fails the test after `timeoutMs`. */
async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function within<T>(promise: Promise<T>, what: string, timeoutMs = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A gate predictions wait at while it is shut. */
class Gate {
  private opened: Promise<void> = Promise.resolve();
  private openIt: () => void = () => undefined;
  shut(): void {
    this.opened = new Promise((resolve) => (this.openIt = resolve));
  }
  open(): void {
    this.openIt();
  }
  pass(): Promise<void> {
    return this.opened;
  }
}

/**
 * Predicts sum = x + pair[0] + pair[1], the number of tags and its own version. x < 0 is
 * a BadInputError, x = 13 a failure of the model. It counts what the server did to it.
 */
class FakeModel implements ServableModel {
  inFlight = 0;
  predictions = 0;
  closeCalls = 0;
  inFlightAtClose = -1;
  predictsAfterClose = 0;
  closed = false;
  delayMs = 0;
  readonly gate = new Gate();
  private idle: Array<() => void> = [];

  constructor(
    readonly version: number,
    readonly directory: string,
  ) {}

  signature(): ServingSignature {
    return SIGNATURE;
  }

  async predict(features: Features): Promise<Record<string, Float32Array>> {
    if (this.closeCalls > 0) {
      this.predictsAfterClose++;
      throw new Error(`version ${this.version} is closed`);
    }
    this.inFlight++;
    try {
      if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      await this.gate.pass();
      const x = features.x as Float32Array;
      const pair = features.pair as Float32Array;
      const tags = features.tags as ReadonlyArray<string | null | readonly string[]>;
      const n = x.length;
      if (x.some((v) => v < 0)) throw new BadInputError("feature 'x' must not be negative");
      if (x.some((v) => v === 13)) throw new Error('the model broke');
      const sum = new Float32Array(n);
      const tagCount = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        sum[i] = x[i] + pair[2 * i] + pair[2 * i + 1];
        const t = tags[i];
        tagCount[i] = t === null ? 0 : Array.isArray(t) ? t.length : 1;
      }
      this.predictions += n;
      return { sum, tag_count: tagCount, version: new Float32Array(n).fill(this.version) };
    } finally {
      this.inFlight--;
      if (this.inFlight === 0) this.idle.splice(0).forEach((resolve) => resolve());
    }
  }

  async close(): Promise<void> {
    this.closeCalls++;
    if (this.inFlightAtClose === -1) this.inFlightAtClose = this.inFlight;
    if (this.inFlight > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
    this.closed = true;
  }
}

/** The models loaded in this test, and each load asked for. */
let models: FakeModel[] = [];
let loads: string[] = [];
const servers: ModelServer[] = [];
const dirs: string[] = [];
const agents: http.Agent[] = [];

/** `manifest.fail` makes its load fail; `manifest.failTimes` its first loads. */
async function loadFake(versionDir: string): Promise<ServableModel> {
  loads.push(versionDir);
  const manifest = JSON.parse(fs.readFileSync(path.join(versionDir, 'manifest.json'), 'utf8')) as { fail?: boolean; failTimes?: number };
  if (manifest.fail) throw new Error(`export ${path.basename(versionDir)} is broken`);
  const attempt = loads.filter((d) => d === versionDir).length;
  if (manifest.failTimes !== undefined && attempt <= manifest.failTimes) throw new Error(`export ${path.basename(versionDir)}: out of memory, try ${attempt}`);
  const model = new FakeModel(Number(path.basename(versionDir)), versionDir);
  models.push(model);
  return model;
}

function exportDirWith(...versions: number[]): string {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-serving-'));
  dirs.push(base);
  const exportDir = path.join(base, MODEL);
  fs.mkdirSync(exportDir);
  for (const version of versions) writeVersion(exportDir, version);
  return exportDir;
}

/** As exportSavedModel does: written under a temporary name, then renamed. */
function writeVersion(exportDir: string, version: number, manifest: Record<string, unknown> = {}): void {
  const tmp = path.join(exportDir, `.tmp-${version}-${Math.random().toString(36).slice(2)}`);
  fs.mkdirSync(tmp);
  fs.writeFileSync(path.join(tmp, 'manifest.json'), JSON.stringify({ version, ...manifest }));
  fs.renameSync(tmp, path.join(exportDir, String(version)));
}

async function serve(exportDir: string, options: Partial<ServerOptions> = {}): Promise<ModelServer> {
  const server = await startServer({ exportDir, port: 0, host: '127.0.0.1', load: loadFake, pollIntervalMs: 20, ...options });
  servers.push(server);
  return server;
}

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

function send(url: string, options: { method?: string; body?: string | Buffer; headers?: Record<string, string>; agent?: http.Agent } = {}): Promise<Reply> {
  const request = new Promise<Reply>((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? 'GET', headers: options.headers, agent: options.agent ?? false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
  return within(request, `${options.method ?? 'GET'} ${url}`);
}

const predictUrl = (server: ModelServer, suffix = '') => `${server.url}/v1/models/${MODEL}${suffix}:predict`;
const post = (url: string, body: unknown, agent?: http.Agent) =>
  send(url, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'Content-Type': 'application/json' }, agent });

afterEach(async () => {
  // Nothing left waiting at a gate, so every close can finish.
  for (const model of models) model.gate.open();
  try {
    await Promise.all(servers.splice(0).map((server) => within(server.close(), 'the server to close')));
  } finally {
    for (const agent of agents.splice(0)) agent.destroy();
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
    models = [];
    loads = [];
  }
});

describe('predict', () => {
  test('row format: one object of outputs per instance', async () => {
    const server = await serve(exportDirWith(1));
    expect(server.version).toBe(1);
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    const reply = await post(predictUrl(server), {
      instances: [
        { x: 0.1, pair: [0, 0], tags: ['a', 'b'] },
        { x: 1, pair: [2, 3], tags: 'c' },
        { x: 2, pair: [0, 0.5] },
      ],
    });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(reply.json).toEqual({
      predictions: [
        { sum: 0.1, tag_count: 2, version: 1 },
        { sum: 6, tag_count: 1, version: 1 },
        { sum: 2.5, tag_count: 0, version: 1 },
      ],
    });
  });

  test('columnar format: one list per output; a version path; signature_name', async () => {
    const server = await serve(exportDirWith(1));
    const reply = await post(predictUrl(server, '/versions/1'), { signature_name: 'serving_default', inputs: { x: [1, 2], pair: [[1, 1], [0, 0]], tags: [['a'], null] } });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ outputs: { sum: [3, 2], tag_count: [1, 0], version: [1, 1] } });
  });

  test('the newest complete version is served; temporary and manifest-less directories are not versions', async () => {
    const exportDir = exportDirWith(1, 3, 2);
    fs.mkdirSync(path.join(exportDir, '7')); // no manifest: not complete
    fs.mkdirSync(path.join(exportDir, '.tmp-9-abc'));
    fs.writeFileSync(path.join(exportDir, '.tmp-9-abc', 'manifest.json'), '{}');
    fs.mkdirSync(path.join(exportDir, 'v8'));
    fs.writeFileSync(path.join(exportDir, 'v8', 'manifest.json'), '{}');
    const server = await serve(exportDir);
    expect(server.version).toBe(3);
    expect(loads).toEqual([path.join(exportDir, '3')]);
    // An older version appearing later changes nothing.
    writeVersion(exportDir, 0);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(loads).toHaveLength(1);
    expect((await post(predictUrl(server), { instances: [{ x: 1, pair: [0, 0] }] })).json).toEqual({ predictions: [{ sum: 1, tag_count: 0, version: 3 }] });
  });
});

describe('status and metadata', () => {
  test("GET /v1/models/<name>[/versions/<v>] is TF Serving's model status", async () => {
    const server = await serve(exportDirWith(4));
    const available = { model_version_status: [{ version: '4', state: 'AVAILABLE', status: { error_code: 'OK', error_message: '' } }] };
    expect(await send(`${server.url}/v1/models/${MODEL}`)).toMatchObject({ status: 200, json: available });
    expect(await send(`${server.url}/v1/models/${MODEL}/versions/4`)).toMatchObject({ status: 200, json: available });
  });

  test('GET .../metadata is the signature_def of the signature', async () => {
    const server = await serve(exportDirWith(4), { modelName: 'other' });
    const reply = await send(`${server.url}/v1/models/other/metadata`);
    expect(reply.status).toBe(200);
    expect(reply.json.model_spec).toEqual({ name: 'other', signature_name: '', version: '4' });
    const def = reply.json.metadata.signature_def.signature_def.serving_default;
    expect(def.method_name).toBe('tensorflow/serving/predict');
    expect(Object.keys(def.inputs)).toEqual(['x', 'pair', 'tags']);
    expect(def.inputs.pair).toEqual({ dtype: 'DT_FLOAT', tensor_shape: { dim: [{ size: '-1', name: '' }, { size: '2', name: '' }], unknown_rank: false }, name: 'pair' });
    expect(def.inputs.tags.dtype).toBe('DT_STRING');
    expect(Object.keys(def.outputs)).toEqual(['sum', 'tag_count', 'version']);
  });
});

describe('refused requests', () => {
  test('each is answered with its status code and {"error": message}', async () => {
    const server = await serve(exportDirWith(1), { maxBatch: 2 });
    const url = predictUrl(server);
    const row = { x: 1, pair: [0, 0] };
    const cases: Array<[string, Promise<Reply>, number, RegExp]> = [
      ['malformed JSON', post(url, '{"instances": [}'), 400, /^malformed JSON in the request body: /],
      ['a missing feature', post(url, { instances: [{ pair: [0, 0] }] }), 400, /^instance 0: numeric feature 'x' is missing/],
      ['a wrongly typed feature', post(url, { instances: [{ x: 'one', pair: [0, 0] }] }), 400, /^instance 0: numeric feature 'x' is a string/],
      ['a wrongly typed categorical', post(url, { instances: [{ ...row, tags: 5 }] }), 400, /^instance 0: categorical feature 'tags' takes strings, got the number 5$/],
      ['an unknown feature', post(url, { instances: [{ ...row, y: 1 }] }), 400, /^instance 0: unknown feature 'y'/],
      ['too many instances', post(url, { instances: [row, row, row] }), 400, /^'instances' has 3 examples; this server takes at most 2 per request$/],
      ['another signature', post(url, { signature_name: 'classify', instances: [row] }), 400, /^signature_name .* has 'serving_default' only$/],
      ["the model's BadInputError", post(url, { instances: [{ x: -1, pair: [0, 0] }] }), 400, /^feature 'x' must not be negative$/],
      ["the model's own failure", post(url, { instances: [{ x: 13, pair: [0, 0] }] }), 500, /^the model broke$/],
      ['an unknown model', post(`${server.url}/v1/models/nope:predict`, { instances: [row] }), 404, /^model 'nope' is not served here \(this server serves 'ranker'\)$/],
      ['an unknown version', post(predictUrl(server, '/versions/2'), { instances: [row] }), 404, /^version 2 of model 'ranker' is not served \(serving version 1\)$/],
      ['an unknown version status', send(`${server.url}/v1/models/${MODEL}/versions/9`), 404, /^version 9 of model 'ranker' is not served/],
      ['an unknown path', send(`${server.url}/v2/models`), 404, /^no such path: GET \/v2\/models/],
      ['another verb', post(`${server.url}/v1/models/${MODEL}:classify`, { examples: [] }), 404, /^:classify is not served here/],
      ['GET on predict', send(url), 405, /^GET \/v1\/models\/ranker:predict: use POST$/],
      ['POST on status', post(`${server.url}/v1/models/${MODEL}`, {}), 405, /: use GET$/],
      ['DELETE on metrics', send(`${server.url}/metrics`, { method: 'DELETE' }), 405, /: use GET$/],
    ];
    for (const [what, pending, status, message] of cases) {
      const reply = await pending;
      expect({ what, status: reply.status }).toEqual({ what, status });
      expect(reply.headers['content-type']).toBe('application/json');
      expect(Object.keys(reply.json)).toEqual(['error']);
      expect(reply.json.error).toMatch(message);
      if (status === 405) expect(reply.headers.allow).toMatch(/^(GET|POST)$/);
    }
    // None of them stopped the server.
    expect((await post(url, { instances: [row] })).status).toBe(200);
  });

  test('beyond maxInFlight predict requests, a 503 with Retry-After at once; served again once they finish', async () => {
    const server = await serve(exportDirWith(1), { maxInFlight: 2 });
    const url = predictUrl(server);
    const row = { x: 1, pair: [0, 0] };
    await until(() => models.length === 1, 'the model to load');
    const model = models[0];
    model.gate.shut();
    const held = [post(url, { instances: [row] }), post(url, { instances: [row] })];
    await until(() => model.inFlight === 2, 'two predictions in flight');
    const busy = await post(url, { instances: [row] });
    expect(busy.status).toBe(503);
    expect(busy.headers['retry-after']).toBe('1');
    expect(busy.json.error).toMatch(/^the server is busy: 2 predict requests in flight/);
    // Status and metrics are not predict requests: still answered.
    expect((await send(`${server.url}/v1/models/${MODEL}`)).status).toBe(200);
    model.gate.open();
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
    expect((await post(url, { instances: [row] })).status).toBe(200);
  });

  test('a request not received whole within requestTimeoutMs is a 408 and gives its place back (it held it for Node\'s 5 minutes)', async () => {
    const server = await serve(exportDirWith(1), { maxInFlight: 1, requestTimeoutMs: 1500 });
    const url = predictUrl(server);
    const row = { x: 1, pair: [0, 0] };
    await until(() => models.length === 1, 'the model to load');
    // A client that sends its headers and part of its body, then nothing.
    const slow = net.connect(server.port, '127.0.0.1');
    let answer = '';
    const closed = new Promise<void>((resolve) => slow.on('close', () => resolve()));
    slow.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    slow.on('error', () => undefined);
    try {
      slow.write(`POST /v1/models/${MODEL}:predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"inst`);
      // Its place is taken once the server has its headers: a good request is then a 503.
      let status = 0;
      for (let tries = 0; status !== 503 && tries < 50; tries++) {
        status = (await post(url, { instances: [row] })).status;
        if (status !== 503) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(status).toBe(503);
      await within(closed, 'the slow request to time out');
      expect(answer).toMatch(/^HTTP\/1\.1 408/);
      expect((await post(url, { instances: [row] })).status).toBe(200);
    } finally {
      slow.destroy();
    }
  });

  test('a body over maxRequestBytes is a 413, unread: by its Content-Length, as it streams, or before 100-continue', async () => {
    const server = await serve(exportDirWith(1), { maxRequestBytes: 1024 });
    const url = new URL(predictUrl(server));
    // Each client sends a part of its body, then waits for the answer.
    const partly = (headers: Record<string, string>, firstPart: string | undefined) =>
      within(
        new Promise<Reply>((resolve, reject) => {
          const req = http.request(url, { method: 'POST', headers, agent: false }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => {
              req.destroy();
              const text = Buffer.concat(chunks).toString('utf8');
              resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: JSON.parse(text) });
            });
          });
          req.on('error', reject);
          if (firstPart === undefined) req.flushHeaders();
          else req.write(firstPart);
        }),
        '413',
      );
    const declared = await partly({ 'Content-Length': String(1 << 30) }, '{"instances": [');
    expect(declared.status).toBe(413);
    expect(declared.json.error).toBe(`the request body is ${1 << 30} bytes; this server takes at most 1024`);
    expect(declared.headers.connection).toBe('close');
    const streamed = await partly({ 'Transfer-Encoding': 'chunked' }, `{"instances": [${' '.repeat(2000)}`);
    expect(streamed.status).toBe(413);
    expect(streamed.json.error).toBe('the request body is over 1024 bytes, the most this server takes');
    const asked = await partly({ 'Content-Length': '5000', Expect: '100-continue' }, undefined);
    expect(asked.status).toBe(413);
    // A body within the limit is read.
    expect((await post(predictUrl(server), { instances: [{ x: 1, pair: [0, 0] }] })).status).toBe(200);
  });

  test('503 while no version has loaded, with why; then served once one appears', async () => {
    const exportDir = exportDirWith();
    writeVersion(exportDir, 1, { fail: true });
    const server = await serve(exportDir);
    expect(server.version).toBeUndefined();
    for (const reply of [await post(predictUrl(server), { instances: [{ x: 1, pair: [0, 0] }] }), await send(`${server.url}/v1/models/${MODEL}`), await send(`${server.url}/v1/models/${MODEL}/metadata`)]) {
      expect(reply.status).toBe(503);
      expect(reply.json.error).toMatch(/^model 'ranker' has no version loaded yet \(watching .*; version 1: export 1 is broken\)$/);
    }
    writeVersion(exportDir, 2);
    await until(() => server.version === 2, 'version 2 to be served');
    expect((await post(predictUrl(server), { instances: [{ x: 1, pair: [0, 0] }] })).json.predictions[0].version).toBe(2);
  });

  test('startServer refuses a missing export directory and a port in use', async () => {
    await expect(startServer({ exportDir: path.join(os.tmpdir(), 'hb-no-such-dir-x'), port: 0, load: loadFake })).rejects.toThrow(/does not exist or is not a directory/);
    const server = await serve(exportDirWith(1));
    await expect(startServer({ exportDir: exportDirWith(1), port: server.port, load: loadFake })).rejects.toThrow(/EADDRINUSE/);
    // Options out of range are named before anything binds.
    await expect(startServer({ exportDir: exportDirWith(1), port: 0, load: loadFake, maxInFlight: 0 })).rejects.toThrow(/startServer: maxInFlight must be a whole number >= 1, got 0/);
    await expect(startServer({ exportDir: exportDirWith(1), port: -1, load: loadFake })).rejects.toThrow(/startServer: port must be a whole number >= 0, got -1/);
    await expect(startServer({ exportDir: exportDirWith(1), port: 0, load: loadFake, requestTimeoutMs: 0 })).rejects.toThrow(/startServer: requestTimeoutMs must be a whole number >= 1, got 0/);
    await expect(startServer({ exportDir: exportDirWith(1), port: 0, load: loadFake, modelName: 'a/b' })).rejects.toThrow(/model name 'a\/b' cannot be part of/);
  });
});

describe('metrics', () => {
  /** Samples by name and labels, and each metric's TYPE, from Prometheus' text format. */
  function parseExposition(text: string): { types: Map<string, string>; helps: Set<string>; samples: Array<{ name: string; labels: Record<string, string>; value: number }> } {
    const types = new Map<string, string>();
    const helps = new Set<string>();
    const samples: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
    expect(text.endsWith('\n')).toBe(true);
    for (const line of text.trimEnd().split('\n')) {
      let m: RegExpExecArray | null;
      if ((m = /^# TYPE ([a-zA-Z_:][\w:]*) (counter|gauge|histogram)$/.exec(line))) types.set(m[1], m[2]);
      else if ((m = /^# HELP ([a-zA-Z_:][\w:]*) .+$/.exec(line))) helps.add(m[1]);
      else if ((m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line))) {
        const labels: Record<string, string> = {};
        const body = m[2] ?? '';
        const pair = /([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"(,|$)/gy;
        let consumed = 0;
        let p: RegExpExecArray | null;
        while ((p = pair.exec(body))) {
          labels[p[1]] = p[2];
          consumed = pair.lastIndex;
        }
        expect(consumed).toBe(body.length);
        const value = m[3] === '+Inf' ? Infinity : Number(m[3]);
        expect(Number.isNaN(value)).toBe(false);
        samples.push({ name: m[1], labels, value });
      } else throw new Error(`not a line of the text format: ${line}`);
    }
    return { types, helps, samples };
  }

  test('GET /metrics: requests by method and code, errors, durations, batch sizes, the version', async () => {
    const server = await serve(exportDirWith(5));
    const url = predictUrl(server);
    await post(url, { instances: [{ x: 1, pair: [0, 0] }, { x: 2, pair: [0, 0] }] });
    await post(url, { inputs: { x: [1, 2, 3], pair: [[0, 0], [0, 0], [0, 0]] } });
    await post(url, { instances: [{ pair: [0, 0] }] });
    await post(url, 'not json');
    await send(`${server.url}/v1/models/${MODEL}`);
    await send(`${server.url}/nowhere`);
    const reply = await send(`${server.url}/metrics`);
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    const { types, helps, samples } = parseExposition(reply.text);
    expect(Object.fromEntries(types)).toEqual({
      hb_serving_requests_total: 'counter',
      hb_serving_request_errors_total: 'counter',
      hb_serving_request_duration_seconds: 'histogram',
      hb_serving_batch_size: 'histogram',
      hb_serving_model_version: 'gauge',
    });
    expect([...helps].sort()).toEqual([...types.keys()].sort());
    const value = (name: string, labels: Record<string, string>) => samples.find((s) => s.name === name && JSON.stringify(s.labels) === JSON.stringify(labels))?.value;
    expect(value('hb_serving_requests_total', { model: MODEL, method: 'predict', code: '200' })).toBe(2);
    expect(value('hb_serving_requests_total', { model: MODEL, method: 'predict', code: '400' })).toBe(2);
    expect(value('hb_serving_requests_total', { model: MODEL, method: 'status', code: '200' })).toBe(1);
    expect(value('hb_serving_requests_total', { model: '', method: 'unknown', code: '404' })).toBe(1);
    expect(value('hb_serving_request_errors_total', { model: MODEL, code: '400' })).toBe(2);
    expect(value('hb_serving_request_errors_total', { model: '', code: '404' })).toBe(1);
    expect(value('hb_serving_model_version', { model: MODEL })).toBe(5);
    // Batch sizes of the two requests that could be read: 2 and 3.
    expect(value('hb_serving_batch_size_count', { model: MODEL })).toBe(2);
    expect(value('hb_serving_batch_size_sum', { model: MODEL })).toBe(5);
    expect(value('hb_serving_batch_size_bucket', { model: MODEL, le: '1' })).toBe(0);
    expect(value('hb_serving_batch_size_bucket', { model: MODEL, le: '2' })).toBe(1);
    expect(value('hb_serving_batch_size_bucket', { model: MODEL, le: '4' })).toBe(2);
    expect(value('hb_serving_batch_size_bucket', { model: MODEL, le: '4096' })).toBe(2);
    // Histogram buckets are cumulative, ending at +Inf = _count.
    const predictBuckets = samples.filter((s) => s.name === 'hb_serving_request_duration_seconds_bucket' && s.labels.method === 'predict');
    expect(predictBuckets.length).toBeGreaterThan(2);
    for (let i = 1; i < predictBuckets.length; i++) expect(predictBuckets[i].value).toBeGreaterThanOrEqual(predictBuckets[i - 1].value);
    expect(predictBuckets[predictBuckets.length - 1].labels.le).toBe('+Inf');
    expect(predictBuckets[predictBuckets.length - 1].value).toBe(4);
    expect(value('hb_serving_request_duration_seconds_count', { model: MODEL, method: 'predict' })).toBe(4);
    expect(value('hb_serving_request_duration_seconds_sum', { model: MODEL, method: 'predict' })).toBeGreaterThan(0);
  });
});

describe('versions', () => {
  test('a version that fails to load is skipped (the old one kept), and retried once its directory changes', async () => {
    const logged: string[] = [];
    const exportDir = exportDirWith(1);
    const server = await serve(exportDir, { log: (line) => logged.push(line) });
    writeVersion(exportDir, 2, { fail: true });
    await until(() => logged.some((line) => line.includes('version 2 failed to load')), 'the failed load to be logged');
    expect(logged.find((line) => line.includes('version 2 failed to load'))).toBe('ranker: version 2 failed to load, still serving version 1: export 2 is broken');
    // Polls go on; the unchanged broken version is not loaded again.
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(loads.filter((dir) => dir.endsWith(`${path.sep}2`))).toHaveLength(1);
    expect(server.version).toBe(1);
    const status = await send(`${server.url}/v1/models/${MODEL}`);
    expect(status.json.model_version_status).toEqual([
      { version: '1', state: 'AVAILABLE', status: { error_code: 'OK', error_message: '' } },
      { version: '2', state: 'END', status: { error_code: 'UNKNOWN', error_message: 'export 2 is broken' } },
    ]);
    expect((await post(predictUrl(server), { instances: [{ x: 1, pair: [0, 0] }] })).status).toBe(200);
    // Fixed in place: loaded.
    const manifest = path.join(exportDir, '2', 'manifest.json');
    fs.writeFileSync(manifest, JSON.stringify({ version: 2 }));
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(manifest, later, later);
    await until(() => server.version === 2, 'the fixed version 2 to be served');
    await until(() => models[0].closed, 'version 1 to be closed');
  });

  test('a version whose load failed is tried again after loadRetryMs, up to maxLoadRetries times', async () => {
    // Before, a failed load was tried again only once its directory changed: a passing
    // failure (device memory still held by the old version) left the old one serving.
    const exportDir = exportDirWith(1);
    const server = await serve(exportDir, { loadRetryMs: 30, maxLoadRetries: 2 });
    const loadsOf = (version: number) => loads.filter((dir) => dir.endsWith(`${path.sep}${version}`)).length;
    writeVersion(exportDir, 2, { failTimes: 2 });
    await until(() => server.version === 2, 'version 2 to be served after two failed loads');
    expect(loadsOf(2)).toBe(3);
    writeVersion(exportDir, 3, { fail: true });
    await until(() => loadsOf(3) === 3, 'version 3 to be tried three times');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(loadsOf(3)).toBe(3);
    expect(server.version).toBe(2);
    await expect(serve(exportDir, { loadRetryMs: -1 })).rejects.toThrow('startServer: loadRetryMs must be a whole number >= 0, got -1');
    await expect(serve(exportDir, { maxLoadRetries: 1.5 })).rejects.toThrow('startServer: maxLoadRetries must be a whole number >= 0, got 1.5');
  });

  test('removing the version serving rolls back to the newest one left on disk', async () => {
    // Before, the removed version went on serving: only a newer one could replace it.
    const exportDir = exportDirWith(1);
    const server = await serve(exportDir);
    writeVersion(exportDir, 2);
    await until(() => server.version === 2, 'version 2 to be served');
    fs.rmSync(path.join(exportDir, '2'), { recursive: true, force: true });
    await until(() => server.version === 1, 'version 1 to be served again');
    expect((await post(predictUrl(server), { instances: [{ x: 1, pair: [0, 0] }] })).status).toBe(200);
    // A newer version still replaces it.
    writeVersion(exportDir, 3);
    await until(() => server.version === 3, 'version 3 to be served');
  });

  test('a swap under load fails no request; later requests get the new version; the old closes after its requests', async () => {
    const served: number[] = [];
    const exportDir = exportDirWith(1);
    const server = await serve(exportDir, { pollIntervalMs: 10, onServing: (version) => served.push(version) });
    const [first] = models;
    first.delayMs = 2;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    agents.push(agent);
    // Each reply with when its request started and ended, in one sequence of events.
    let clock = 0;
    const replies: Array<{ started: number; ended: number; status: number; version?: number; error?: string }> = [];
    let stop = false;
    const client = async (id: number) => {
      for (let i = 0; !stop; i++) {
        const started = ++clock;
        try {
          const reply = await post(predictUrl(server), { instances: [{ x: id, pair: [i, 0] }] }, agent);
          replies.push({ started, ended: ++clock, status: reply.status, version: reply.json?.predictions?.[0]?.version, error: reply.json?.error });
        } catch (error) {
          replies.push({ started, ended: ++clock, status: 0, error: (error as Error).message });
        }
      }
    };
    const clients = Array.from({ length: 8 }, (_, id) => client(id));
    try {
      await until(() => replies.length >= 40, '40 replies from version 1');
      // Requests held inside version 1 while version 2 arrives.
      first.gate.shut();
      await until(() => first.inFlight >= 4, 'requests held in version 1');
      writeVersion(exportDir, 2);
      await until(() => server.version === 2, 'version 2 to be served');
      const second = models[1];
      second.delayMs = 2;
      // Version 1 still has requests: it is not closed; a new request is answered by version 2 meanwhile.
      expect(first.closeCalls).toBe(0);
      expect((await post(predictUrl(server), { instances: [{ x: 0, pair: [0, 0] }] })).json.predictions[0].version).toBe(2);
      expect(first.closeCalls).toBe(0);
      first.gate.open();
      await until(() => first.closed, 'version 1 to be closed once its requests are answered');
      const atSwap = replies.length;
      await until(() => replies.length >= atSwap + 40, '40 more replies');
    } finally {
      stop = true;
      first.gate.open();
      await within(Promise.all(clients), 'the clients to stop');
    }
    expect(replies.filter((r) => r.status !== 200)).toEqual([]);
    expect(served).toEqual([1, 2]);
    const firstFromTwo = Math.min(...replies.filter((r) => r.version === 2).map((r) => r.ended));
    expect(replies.filter((r) => r.version === 1).length).toBeGreaterThan(0);
    // Every request sent after version 2 answered one is answered by version 2.
    expect(replies.filter((r) => r.started > firstFromTwo && r.version !== 2)).toEqual([]);
    expect(first.closeCalls).toBe(1);
    expect(first.inFlightAtClose).toBe(0);
    expect(first.predictsAfterClose).toBe(0);
    expect(models[1].closeCalls).toBe(0);
  });
});

describe('close', () => {
  test('answers every request in flight (one still uploading), refuses new connections, then closes the model', async () => {
    const exportDir = exportDirWith(1);
    const server = await serve(exportDir);
    const [model] = models;
    model.gate.shut();
    const held = Array.from({ length: 6 }, (_, i) => post(predictUrl(server), { instances: [{ x: i, pair: [0, 0] }] }));
    await until(() => model.inFlight === 6, 'six predictions in flight');
    // A request whose body is half sent when close begins.
    const body = JSON.stringify({ instances: [{ x: 100, pair: [0, 0] }] });
    let uploading!: http.ClientRequest;
    const uploaded = within(
      new Promise<Reply>((resolve, reject) => {
        uploading = http.request(predictUrl(server), { method: 'POST', headers: { 'Content-Length': String(Buffer.byteLength(body)) }, agent: false }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: JSON.parse(text) }));
        });
        uploading.on('error', reject);
        uploading.write(body.slice(0, 10));
      }),
      'the uploading request',
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const closed = server.close();
    let closeDone = false;
    void closed.then(() => (closeDone = true));
    // No new connection once closing.
    await expect(send(`${server.url}/v1/models/${MODEL}`)).rejects.toThrow(/ECONNREFUSED/);
    uploading.end(body.slice(10));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closeDone).toBe(false);
    expect(model.closeCalls).toBe(0);
    model.gate.open();
    const replies = await Promise.all([...held, uploaded]);
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200, 200]);
    expect(replies.map((r) => r.json.predictions[0].sum)).toEqual([0, 1, 2, 3, 4, 5, 100]);
    await within(closed, 'close');
    expect(model.closeCalls).toBe(1);
    expect(model.inFlightAtClose).toBe(0);
    expect(model.closed).toBe(true);
    expect(server.close()).toBe(closed);
  });

  test('a request pipelined behind one in flight when closing begins: the first is answered with Connection: close, close does not wait for the other', async () => {
    const server = await serve(exportDirWith(1));
    const [model] = models;
    model.gate.shut();
    const socket = net.connect(server.port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    const ended = within(new Promise((resolve) => socket.on('close', resolve)), 'the connection to close');
    const body = JSON.stringify({ instances: [{ x: 1, pair: [0, 0] }] });
    socket.write(`POST /v1/models/${MODEL}:predict HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await until(() => model.inFlight === 1, 'the first request to be in flight');
    const closed = server.close();
    socket.write(`GET /v1/models/${MODEL} HTTP/1.1\r\nHost: x\r\n\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    model.gate.open();
    await ended;
    await within(closed, 'close');
    expect([...received.matchAll(/^HTTP\/1\.1 (\d+)/gm)].map((m) => Number(m[1]))).toEqual([200]);
    expect(received).toMatch(/\r\nConnection: close\r\n/i);
    expect(model.closed).toBe(true);
  });

  test('a prediction whose client left is still waited for before its model closes', async () => {
    const server = await serve(exportDirWith(1));
    const [model] = models;
    model.gate.shut();
    const body = JSON.stringify({ instances: [{ x: 1, pair: [0, 0] }] });
    const leaving = http.request(predictUrl(server), { method: 'POST', headers: { 'Content-Length': String(body.length) }, agent: false });
    leaving.on('error', () => undefined);
    leaving.end(body);
    await until(() => model.inFlight === 1, 'the prediction to start');
    leaving.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    let closeDone = false;
    const closed = server.close().then(() => (closeDone = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closeDone).toBe(false);
    expect(model.closeCalls).toBe(0);
    model.gate.open();
    await within(closed, 'close');
    expect(model.closeCalls).toBe(1);
    expect(model.inFlightAtClose).toBe(0);
  });
});
