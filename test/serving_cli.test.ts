// README's serving walk-through, as a user runs it: `hb-ts train` with exportDir exports
// after training (in one process, and after a job of 2 from its sharded checkpoint), then
// `hb-ts serve` answers TF Serving's predict on loopback and exits 0 on SIGTERM. Every
// process is bounded in time and killed when the file ends.
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { cliPath, killAll, repoRoot, runNode, startNode } from './support/processes';

const describeGloo = hb.backend().gloo.available ? describe : describe.skip;
const env = { HB_DEVICE: 'cpu' };
let dir: string;
beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-serving-cli-'))));
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
afterAll(() => killAll());

/** examples/criteo_serving.json with its files and directories in `dir`. */
function configIn(dir: string, extra: Record<string, unknown> = {}): string {
  const config = JSON.parse(fs.readFileSync(path.join(repoRoot, 'examples', 'criteo_serving.json'), 'utf8'));
  const fixture = path.join(repoRoot, 'test', 'fixtures', 'criteo_kaggle_sample.tsv');
  Object.assign(config, { trainFiles: fixture, evalFiles: fixture, modelDir: path.join(dir, 'model'), exportDir: path.join(dir, 'export'), epochs: 2, ...extra });
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify(config));
  return file;
}

/** README's curl: one Criteo row as TF Serving's row format. */
const README_INSTANCE = { I1: 0, I2: 559, I3: 2, I4: 7, I5: 2532, C1: '68fd1e64', C2: 'bc478804', C3: 'b96e826a', C4: '13508380', C5: '43b19349', C6: '7e0ccccf' };

function post(url: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.end(body);
  });
}

/** Resolves with the first match of `pattern` in the child's stdout, or rejects after `ms`. */
function waitForLine(running: ReturnType<typeof startNode>, pattern: RegExp, ms: number): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within ${ms} ms; stdout: ${stdout} stderr: ${stderr}`)), ms);
    running.child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    running.child.stdout!.on('data', (c: Buffer) => {
      stdout += c.toString();
      const m = pattern.exec(stdout);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
  });
}

test('hb-ts train with exportDir, then hb-ts serve: README\'s curl gets a prediction; SIGTERM exits 0', async () => {
  const config = configIn(dir);
  const trained = await runNode([cliPath, 'train', config], { env, timeoutMs: 120_000 });
  expect(trained.stderr).toBe('');
  expect(trained.code).toBe(0);
  const exported = /^exported (\S+) \(serve it: npx hb-ts serve (\S+)\)$/m.exec(trained.stdout);
  expect(exported).not.toBeNull();
  expect(path.dirname(exported![1])).toBe(path.join(dir, 'export'));

  const server = startNode([cliPath, 'serve', path.join(dir, 'export'), '--port', '0', '--model-name', 'criteo'], { env, timeoutMs: 60_000 });
  const ready = await waitForLine(server, /^serving criteo version (\d+) at (http:\/\/127\.0\.0\.1:\d+)$/m, 30_000);
  expect(ready[1]).toBe(path.basename(exported![1]));
  const answer = await post(`${ready[2]}/v1/models/criteo:predict`, JSON.stringify({ instances: [README_INSTANCE] }));
  expect(answer.status).toBe(200);
  const predictions = JSON.parse(answer.body).predictions;
  expect(predictions).toHaveLength(1);
  expect(predictions[0]).toBeGreaterThan(0);
  expect(predictions[0]).toBeLessThan(1);
  // The same row through loadModel in this process: the same number.
  const model = await hb.serving.loadModel(path.join(dir, 'export'), { device: 'cpu' });
  const features = Object.fromEntries(Object.entries(README_INSTANCE).map(([k, v]) => [k, typeof v === 'number' ? Float32Array.of(v) : [v]]));
  const direct = (await model.predict(features)).probs[0];
  await model.close();
  expect(predictions[0]).toBeCloseTo(direct, 6);
  const bad = await post(`${ready[2]}/v1/models/criteo:predict`, JSON.stringify({ instances: [{ ...README_INSTANCE, I2: 'many' }] }));
  expect(bad.status).toBe(400);
  expect(JSON.parse(bad.body).error).toMatch(/I2/);
  server.child.kill('SIGTERM');
  const done = await server.done;
  expect(done.code).toBe(0);
});

describeGloo('after a job', () => {
  test('hb-ts train --nproc-per-node 2 with exportDir: the launcher exports the job\'s sharded checkpoint once', async () => {
    const config = configIn(dir);
    const run = await runNode([cliPath, 'train', config, '--nproc-per-node', '2'], { env, timeoutMs: 120_000 });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n').filter((l) => l.includes('exported'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^exported /); // the launcher's own line, not a rank's
    const version = fs.readdirSync(path.join(dir, 'export'));
    expect(version).toHaveLength(1);
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'export', version[0], 'manifest.json'), 'utf8'));
    expect(manifest.source).toMatch(/\.sharded\.json$/);
    const model = await hb.serving.loadModel(path.join(dir, 'export'), { device: 'cpu' });
    const features = Object.fromEntries(Object.entries(README_INSTANCE).map(([k, v]) => [k, typeof v === 'number' ? Float32Array.of(v) : [v]]));
    const p = (await model.predict(features)).probs[0];
    await model.close();
    expect(p).toBeGreaterThan(0);
    expect(p).toBeLessThan(1);
  });

  test('exportDir under --nproc-per-node without modelDir is refused before the job starts', async () => {
    const config = configIn(dir, { modelDir: undefined });
    const run = await runNode([cliPath, 'train', config, '--nproc-per-node', '2'], { env, timeoutMs: 60_000 });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/exportDir under --nproc-per-node needs modelDir/);
    expect(run.stdout).not.toMatch(/\[rank/);
  });
});
