// Sharded embeddings and hybrid-parallel training, over real processes on loopback
// (hb-ts launch, Gloo): W ranks with batch b each train what one process trains with
// batch W * b, table by table and slot by slot, for every optimizer family, with
// sharded, replicated and host-memory tables; the wire dtypes; evaluation over every
// rank's rows. The worker is test/fixtures/sharded/train_worker.js; every process is
// bounded in time and killed when the file ends.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { cliPath, killAll, repoRoot, runNode } from './support/processes';

const worker = path.join(repoRoot, 'test', 'fixtures', 'sharded', 'train_worker.js');
const describeGloo = hb.backend().gloo.available ? describe : describe.skip;
const env = { HB_DEVICE: 'cpu' };

afterAll(() => killAll());

interface VariableDump {
  shape: number[];
  placement: 'local' | 'sharded' | 'replicated' | 'dense';
  values: number[];
}

interface WorkerResult {
  rank: number;
  worldSize: number;
  globalStep: number;
  losses: number[];
  variables: Record<string, VariableDump>;
  slots: Record<string, number[]>;
  stats?: { collectives: number; bytesSent: number; bytesReceived: number; seconds: number };
  evaluation?: Record<string, number>;
  evaluationAfterPredict?: Record<string, number>;
  failure?: { code?: string; message: string };
  predictions?: number[];
  restoredStep: number;
  logs: string[];
  fatal?: boolean;
  message?: string;
}

function results(stdout: string): WorkerResult[] {
  return stdout
    .split('\n')
    .filter((l) => l.includes('RESULT '))
    .map((l) => JSON.parse(l.slice(l.indexOf('RESULT ') + 7)) as WorkerResult)
    .sort((a, b) => a.rank - b.rank);
}

/** One process training on the whole global batches of a world of `worldSize`. */
async function reference(worldSize: number, config: Record<string, unknown>): Promise<WorkerResult> {
  const run = await runNode([worker, JSON.stringify({ ...config, worldSize })], { env, timeoutMs: 60_000 });
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return results(run.stdout)[0];
}

/** A job of `worldSize` ranks started by hb-ts launch. */
async function job(worldSize: number, config: Record<string, unknown>): Promise<WorkerResult[]> {
  const run = await runNode([cliPath, 'launch', '--nproc-per-node', String(worldSize), worker, JSON.stringify(config)], { env, timeoutMs: 90_000 });
  expect(run.stderr).toBe('');
  const ranks = results(run.stdout);
  expect(ranks.map((r) => r.fatal ? r.message : r.rank)).toEqual(Array.from({ length: worldSize }, (_, r) => r));
  expect(run.code).toBe(0);
  return ranks;
}

/**
 * The whole of each variable and slot from the ranks: a sharded one put together (local
 * row j of rank r is row j * W + r), any other one the same on every rank, bit for bit.
 */
function assemble(ranks: WorkerResult[]): Map<string, number[]> {
  const W = ranks.length;
  const out = new Map<string, number[]>();
  const first = ranks[0];
  const put = (name: string, values: (r: WorkerResult) => number[], sharded: boolean, localRows: (r: WorkerResult) => number) => {
    if (!sharded) {
      for (const r of ranks) expect([name, values(r)]).toEqual([name, values(first)]);
      out.set(name, values(first));
      return;
    }
    const width = values(first).length / localRows(first);
    const whole: number[] = [];
    for (const r of ranks) {
      const v = values(r);
      for (let j = 0; j < localRows(r); j++) for (let c = 0; c < width; c++) whole[(j * W + r.rank) * width + c] = v[j * width + c];
    }
    out.set(name, whole);
  };
  for (const [name, v] of Object.entries(first.variables)) {
    const sharded = v.placement === 'sharded';
    put(name, (r) => r.variables[name].values, sharded, (r) => r.variables[name].shape[0]);
    for (const slot of Object.keys(first.slots).filter((s) => s.startsWith(`${name}/`))) {
      put(slot, (r) => r.slots[slot], sharded, (r) => r.variables[name].shape[0]);
    }
  }
  return out;
}

/** Equal within 1e-5 relative, where sums are added in another order (1e-7 absolute near zero). */
function expectClose(actual: number[], expected: number[], what: string): void {
  expect([what, actual.length]).toEqual([what, expected.length]);
  const bad = expected.findIndex((e, i) => !(Math.abs(actual[i] - e) <= 1e-5 * Math.max(Math.abs(actual[i]), Math.abs(e)) + 1e-7));
  if (bad >= 0) throw new Error(`${what}[${bad}]: ${actual[bad]} vs ${expected[bad]} (one process)`);
}

/** The loss one process would report for each global batch: the mean of the ranks' means. */
function meanLosses(ranks: WorkerResult[]): number[] {
  return ranks[0].losses.map((_, s) => ranks.reduce((sum, r) => sum + r.losses[s], 0) / ranks.length);
}

describeGloo('hybrid-parallel training across processes', () => {
  const cases: Array<[number, string]> = [];
  for (const W of [2, 3]) for (const optimizer of ['sgd', 'adagrad', 'adam', 'ftrl']) cases.push([W, optimizer]);

  test.each(cases)('%i ranks with batch b train what one process trains with batch W * b (%s)', async (W, optimizer) => {
    // 2 ranks coalesce the two sharded lookups (embNumGroups 1); 3 ranks look each up alone (2 groups).
    const config = { optimizer, steps: 20, perRank: 4, maxNorm: optimizer === 'ftrl' ? 0.5 : undefined, numGroups: W === 3 ? 2 : 1 };
    const [ref, ranks] = await Promise.all([reference(W, config), job(W, config)]);
    // Table a (53 rows) and c (41 rows, host memory) are sharded; b (6 rows, at most
    // hb.scope's batchSize hint of 8) is replicated; the dense layers are replicated.
    expect(Object.fromEntries(Object.entries(ranks[0].variables).map(([n, v]) => [n, v.placement]))).toEqual({
      'a_embedding/embedding_weights': 'sharded',
      'b_embedding/embedding_weights': 'replicated',
      'c_embedding/embedding_weights': 'sharded',
      'hidden/kernel': 'dense',
      'hidden/bias': 'dense',
      'logits/kernel': 'dense',
      'logits/bias': 'dense',
    });
    // Shards of HybridBackend's sizes: the first rows mod W ranks hold one more row.
    for (const r of ranks) {
      expect(r.variables['a_embedding/embedding_weights'].shape).toEqual([Math.floor(53 / W) + (r.rank < 53 % W ? 1 : 0), 4]);
      expect(r.globalStep).toBe(20);
    }
    const whole = assemble(ranks);
    const expected = new Map<string, number[]>([
      ...Object.entries(ref.variables).map(([n, v]) => [n, v.values] as [string, number[]]),
      ...Object.entries(ref.slots),
    ]);
    expect([...whole.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [name, values] of expected) expectClose(whole.get(name)!, values, name);
    expectClose(meanLosses(ranks), ref.losses, 'loss');
    // Exchanges: 5 broadcasts of the whole variables (table b, 4 dense), then per step the
    // flags, the ids, rows and row gradients of each group of sharded lookups (one group
    // of two at W = 2, two of one at W = 3), b's gradients gathered (ids, values) and one
    // allreduce of every dense gradient.
    const perStep = 1 + 3 * (W === 3 ? 2 : 1) + 2 + 1;
    for (const r of ranks) expect(r.stats!.collectives).toBe(5 + 20 * perStep);
    expect(ref.losses.length).toBe(20);
  }, 120_000);

  test('initial values do not depend on the world size: a seeded table is the same whole or in shards', async () => {
    const config = { optimizer: 'sgd', steps: 0 };
    const [ref, ranks] = await Promise.all([reference(3, config), job(3, config)]);
    const whole = assemble(ranks);
    for (const [name, v] of Object.entries(ref.variables)) expect([name, whole.get(name)]).toEqual([name, v.values]);
  }, 120_000);

  test('float16 and bfloat16 on the wire: the loss curve stays within 1e-3 (float16) and 5e-3 (bfloat16) of float32', async () => {
    const base = { optimizer: 'adagrad', steps: 40 };
    const [f32, f16, bf16] = await Promise.all(['float32', 'float16', 'bfloat16'].map((wire) => job(2, { ...base, wire })));
    const curve = meanLosses(f32);
    const gap = (ranks: WorkerResult[]) => Math.max(...meanLosses(ranks).map((l, s) => Math.abs(l - curve[s])));
    expect(gap(f16)).toBeLessThan(1e-3);
    expect(gap(bf16)).toBeLessThan(5e-3);
    // The wire changed something: rows really went through the narrower type.
    expect(gap(bf16)).toBeGreaterThan(0);
  }, 120_000);

  test('trainAndEvaluate: the ranks agree when the throttle calls for an evaluation, and evaluate at the same steps', async () => {
    const ranks = (await job(2, { optimizer: 'adagrad', steps: 7, trainAndEvaluate: true })) as Array<WorkerResult & { evaluatedAt: number[]; final: Record<string, number> }>;
    // throttleSecs 0: a rank asks after every step; the ranks agree on it in the next
    // step's first exchange and pause after that step; once more at the end.
    expect(ranks[0].evaluatedAt).toEqual([2, 4, 6, 7]);
    expect(ranks[1].evaluatedAt).toEqual(ranks[0].evaluatedAt);
    expect(ranks[1].final).toEqual(ranks[0].final);
    expect(ranks.map((r) => r.globalStep)).toEqual([7, 7]);
  }, 120_000);

  test('evaluation over 2 ranks reports the metrics of one process evaluating all the rows', async () => {
    const config = { optimizer: 'adagrad', steps: 10, evaluate: 4 };
    const [ref, ranks] = await Promise.all([reference(2, config), job(2, config)]);
    for (const r of ranks) {
      expect(r.evaluation!.auc).toBe(ref.evaluation!.auc);
      expect(r.evaluation!.mean).toBeCloseTo(ref.evaluation!.mean, 6);
      expect(r.evaluation!.loss).toBeCloseTo(ref.evaluation!.loss, 6);
      expect(r.evaluation!.globalStep).toBe(10);
    }
  }, 120_000);
});

describeGloo('evaluation and prediction when ranks have different numbers of batches', () => {
  test("ranks whose input ended run empty batches: every rank's rows are evaluated and predicted", async () => {
    const perRank = 4;
    const evalCounts = [3, 1, 2];
    const predictCounts = [1, 3, 2];
    const config = { optimizer: 'adagrad', steps: 5, perRank, evalCounts, predictCounts };
    const [ref, ranks] = await Promise.all([reference(3, config), job(3, config)]);
    for (const r of ranks) {
      // The same AUC and mean as one process over the union of the rows (the loss is a
      // mean of batch means, and the batches differ).
      expect(r.evaluation!.auc).toBe(ref.evaluation!.auc);
      expect(r.evaluation!.mean).toBeCloseTo(ref.evaluation!.mean, 6);
      // The empty batches added nothing: a metric of the per-batch loss is the loss, and a
      // metric of a feature is the one process's.
      expect(r.evaluation!.meanLoss).toBeCloseTo(r.evaluation!.loss, 6);
      expect(r.evaluation!.meanX).toBeCloseTo(ref.evaluation!.meanX, 6);
      expect(r.predictions).toHaveLength(predictCounts[r.rank] * perRank);
    }
    // Rank r's rows of batch s sit in one process's batch s after the rows of the ranks
    // before it that had a batch s.
    let at = 0;
    const expected: number[][] = ranks.map(() => []);
    for (let s = 0; s < Math.max(...predictCounts); s++) {
      for (let r = 0; r < 3; r++) {
        if (s >= predictCounts[r]) continue;
        expected[r].push(...ref.predictions!.slice(at, at + perRank));
        at += perRank;
      }
    }
    for (const r of ranks) expectClose(r.predictions!, expected[r.rank], `rank ${r.rank}'s predictions`);
  }, 120_000);
});

describeGloo('failures in a job', () => {
  const failingJob = async (W: number, config: Record<string, unknown>) => {
    const run = await runNode([cliPath, 'launch', '--nproc-per-node', String(W), worker, JSON.stringify({ expectFailure: true, ...config })], { env: { ...env, HB_COMM_TIMEOUT_MS: '30000' }, timeoutMs: 60_000 });
    expect(run.stderr).toBe('');
    return { ranks: results(run.stdout), ms: run.ms };
  };

  test('a rank whose loss is not finite stops every rank at that step, before any rank applies an update', async () => {
    const [{ ranks, ms }, before] = await Promise.all([
      failingJob(2, { steps: 5, nanLabelAt: 3, rankOverrides: { 0: { nanLabelAt: null } } }),
      job(2, { steps: 3 }),
    ]);
    // At once, not after the communication timeout (30 s here).
    expect(ms).toBeLessThan(20_000);
    expect(ranks[1].failure).toMatchObject({ code: 'HB_ERR_NAN', message: expect.stringMatching(/^training stopped at step 4: loss is NaN or infinite .*no update was applied/) });
    expect(ranks[0].failure!.message).toMatch(/^training step 4: .*: rank 1 failed its own checks: loss: loss is NaN or infinite/);
    // Both are exactly where 3 steps leave them.
    expect(ranks.map((r) => r.globalStep)).toEqual([3, 3]);
    for (const [name] of Object.entries(before[0].variables)) {
      for (const r of [0, 1]) expect([name, r, ranks[r].variables[name].values]).toEqual([name, r, before[r].variables[name].values]);
    }
  }, 120_000);

  test("a rank whose next batch is bad stops every rank with its reason; the step that ran counts", async () => {
    const { ranks, ms } = await failingJob(2, { steps: 5, missingFeatureAt: 2, rankOverrides: { 0: { missingFeatureAt: null } } });
    expect(ms).toBeLessThan(20_000);
    expect(ranks[1].failure!.message).toBe("feature column 'x': feature 'x' is missing from the batch (it has 'a', 'b', 'c')");
    expect(ranks[0].failure!.message).toMatch(/^training step 3: .*rank 1 failed its own checks: the next batch of rank 1 failed: feature column 'x': feature 'x' is missing/);
    expect(ranks.map((r) => r.globalStep)).toEqual([2, 2]);
  }, 120_000);

  test("a rank whose evaluation input breaks stops every rank's evaluation with its reason", async () => {
    const { ranks, ms } = await failingJob(2, { steps: 2, evalCounts: [3, 3], rankOverrides: { 1: { evalFailsAfter: 1 } } });
    expect(ms).toBeLessThan(20_000);
    expect(ranks[1].failure!.message).toBe('the evaluation input of this rank broke after 1 batches');
    expect(ranks[0].failure!.message).toMatch(/rank 1 failed its own checks: the evaluation input of rank 1 failed: the evaluation input of this rank broke after 1 batches/);
  }, 120_000);

  test('a failing rank whose peer reaches the step late still gives it the reason before its process ends', async () => {
    // Rank 1's input breaks while rank 0 is still preparing its batch (1.5 s late): rank 1
    // must not end, closing its connections, before rank 0 has heard why (rank 0 reported
    // "rank 1 has gone" when the news was only queued).
    const { ranks } = await failingJob(2, { steps: 2, evalCounts: [3, 3], rankOverrides: { 0: { evalDelayMs: 1500 }, 1: { evalFailsAfter: 1 } } });
    expect(ranks[1].failure!.message).toBe('the evaluation input of this rank broke after 1 batches');
    expect(ranks[0].failure!.message).toMatch(/rank 1 failed its own checks: the evaluation input of rank 1 failed: the evaluation input of this rank broke after 1 batches/);
  }, 120_000);

  test('a rank that stops reading its predictions early keeps the job in step', async () => {
    const ranks = await job(3, { steps: 3, predictCounts: [3, 2, 2], predictStopAfter: { 0: 4 } });
    expect(ranks.map((r) => r.predictions!.length)).toEqual([4, 8, 8]);
    for (const r of ranks) expect(r.evaluationAfterPredict).toEqual(ranks[0].evaluationAfterPredict);
  }, 120_000);
});

describeGloo('MonitoredTrainingSession under hb-ts launch', () => {
  const sessionWorker = path.join(repoRoot, 'test', 'fixtures', 'sharded', 'session_worker.js');
  const sessionJob = async (config: Record<string, unknown>) => {
    const run = await runNode([cliPath, 'launch', '--nproc-per-node', '2', sessionWorker, JSON.stringify(config)], { env, timeoutMs: 90_000 });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    return results(run.stdout);
  };

  test('the loop of one process trains unchanged in a job of 2, saves per-shard checkpoints and resumes', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-session-job-'));
    try {
      const alone = await runNode([sessionWorker, JSON.stringify({ worldSize: 2, batches: 10 })], { env, timeoutMs: 60_000 });
      const ref = results(alone.stdout)[0];
      const first = await sessionJob({ batches: 10, lastStep: 6, checkpointDir: dir });
      expect(first.map((r) => r.globalStep)).toEqual([6, 6]);
      expect(first[0].logs).toEqual([`saved ${dir}/model.ckpt-6.sharded.json`]);
      const second = await sessionJob({ batches: 10, firstStep: 6, lastStep: 10, checkpointDir: dir });
      expect(second[0].logs).toEqual([`restored ${dir}/model.ckpt-6.sharded.json (global step 6)`, `saved ${dir}/model.ckpt-10.sharded.json`]);
      expectClose([...meanLosses(first), ...meanLosses(second)], ref.losses, 'losses');
      const whole = assemble(second);
      for (const [name, v] of Object.entries(ref.variables)) expectClose(whole.get(name)!, v.values, name);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  test("when one rank's input ends, every rank's session stops at that step", async () => {
    const ranks = await sessionJob({ batchesByRank: { 0: 8, 1: 5 } });
    expect(ranks.map((r) => [r.globalStep, r.losses.length])).toEqual([[5, 5], [5, 5]]);
  }, 120_000);
});

function editLayout(file: string, edit: (layout: { metadata: Record<string, string>; tensors: Record<string, unknown> }) => void): void {
  const layout = JSON.parse(fs.readFileSync(file, 'utf8'));
  edit(layout);
  fs.writeFileSync(file, JSON.stringify(layout));
}

describeGloo('checkpoints of a job', () => {
  const G = 12; // rows per global batch, whatever the world size
  const one = (config: Record<string, unknown>) => reference(1, { ...config, perRank: G });
  const ranksOf = (W: number, config: Record<string, unknown>) => job(W, { ...config, perRank: G / W });
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-sharded-ckpt-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  const copyOf = (from: string) => {
    const to = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-sharded-copy-'));
    fs.cpSync(from, to, { recursive: true });
    return to;
  };

  test('exported from one process: the sharded tables put together, served as the Estimator predicts, bit for bit', async () => {
    await ranksOf(2, { optimizer: 'adagrad', steps: 6, modelDir: dir });
    const exportDir = path.join(dir, 'export');
    const alone = await one({ optimizer: 'adagrad', steps: 0, firstStep: 6, modelDir: dir, exportDir });
    const exported = (alone as unknown as { export: { source: string; globalStep: number; served: number[]; predicted: number[] } }).export;
    expect(exported.source).toBe('model.ckpt-6.sharded.json');
    expect(exported.globalStep).toBe(6);
    expect(exported.served).toHaveLength(G);
    expect(exported.served).toEqual(exported.predicted);
  });

  test('written by 2 ranks, one file each and a layout; restored at 1, 2 and 3 ranks the run goes on as the uninterrupted one', async () => {
    const optimizer = 'adam';
    const [uninterrupted, first] = await Promise.all([one({ optimizer, steps: 20 }), ranksOf(2, { optimizer, steps: 10, modelDir: dir })]);
    expect(fs.readdirSync(dir).sort()).toEqual([
      'checkpoint.json',
      'model.ckpt-10.shard-0-of-2.safetensors',
      'model.ckpt-10.shard-1-of-2.safetensors',
      'model.ckpt-10.sharded.json',
    ]);
    const layout = JSON.parse(fs.readFileSync(path.join(dir, 'model.ckpt-10.sharded.json'), 'utf8'));
    expect(layout).toMatchObject({ format: 'hb-ts-sharded/1', globalStep: 10, worldSize: 2, ownerRule: 'row floormod worldSize' });
    expect(layout.tensors['a_embedding/embedding_weights']).toEqual({ dtype: 'float32', shape: [53, 4], layout: 'sharded' });
    expect(layout.tensors['a_embedding/embedding_weights/Adam']).toEqual({ dtype: 'float32', shape: [53, 4], layout: 'sharded' });
    expect(layout.tensors['b_embedding/embedding_weights']).toEqual({ dtype: 'float32', shape: [6, 3], layout: 'whole' });
    expect(layout.tensors['hidden/kernel']).toMatchObject({ layout: 'whole' });
    // One process reads it whole: the tables put together from the shards.
    const read = await hb.estimator.readCheckpoint(dir);
    expect({ step: read.globalStep, worldSize: read.worldSize }).toEqual({ step: 10, worldSize: 2 });
    const trained = assemble(first);
    for (const name of Object.keys(first[0].variables)) expect([name, Array.from(read.tensors.get(name)!.data as Float32Array)]).toEqual([name, trained.get(name)]);
    // Slots too, under TF's names (the worker's dumps name them by the optimizer's slot names).
    expect(read.tensors.get('a_embedding/embedding_weights/Adam_1')!.shape).toEqual([53, 4]);
    expect(Array.from(read.tensors.get('a_embedding/embedding_weights/Adam_1')!.data as Float32Array)).toEqual(trained.get('a_embedding/embedding_weights/v'));

    for (const W of [1, 2, 3]) {
      const resumedDir = copyOf(dir);
      try {
        const config = { optimizer, steps: 10, firstStep: 10, modelDir: resumedDir };
        const ranks = W === 1 ? [await one(config)] : await ranksOf(W, config);
        for (const r of ranks) expect([W, r.restoredStep, r.globalStep]).toEqual([W, 10, 20]);
        expect(ranks[0].logs[0]).toBe(`restored ${resumedDir}/model.ckpt-10.sharded.json (global step 10)`);
        expectClose(meanLosses(ranks), uninterrupted.losses.slice(10), `losses resumed at ${W} ranks`);
        const whole = assemble(ranks);
        for (const [name, v] of Object.entries(uninterrupted.variables)) expectClose(whole.get(name)!, v.values, `${name} resumed at ${W} ranks`);
      } finally {
        fs.rmSync(resumedDir, { recursive: true, force: true });
      }
    }
  }, 180_000);

  test("a one-process checkpoint restores into a job (each rank takes its shard's rows)", async () => {
    const optimizer = 'adagrad';
    const [uninterrupted] = await Promise.all([one({ optimizer, steps: 12 }), one({ optimizer, steps: 6, modelDir: dir })]);
    const ranks = await ranksOf(3, { optimizer, steps: 6, firstStep: 6, modelDir: dir });
    for (const r of ranks) expect(r.restoredStep).toBe(6);
    expectClose(meanLosses(ranks), uninterrupted.losses.slice(6), 'losses');
  }, 120_000);

  test('a truncated, corrupt or missing shard is refused (logged) and the previous checkpoint loads; an edited layout too', async () => {
    const flipLastByte = (f: string) => {
      const bytes = fs.readFileSync(f);
      bytes[bytes.length - 1] ^= 0x40;
      fs.writeFileSync(f, bytes);
    };
    await ranksOf(2, { optimizer: 'sgd', steps: 10, saveEvery: 5, modelDir: dir });
    const damage: Array<[string, (file: string) => void, RegExp]> = [
      ['model.ckpt-10.shard-1-of-2.safetensors', (f) => fs.truncateSync(f, fs.statSync(f).size - 7), /shard 1 of 2 is corrupt/],
      // Found as the ranks read the shards (each rank hashes both files), not at open.
      ['model.ckpt-10.shard-1-of-2.safetensors', (f) => flipLastByte(f), /shard 1 of 2 is corrupt: Checkpoint .*: checksum mismatch/],
      ['model.ckpt-10.shard-0-of-2.safetensors', (f) => fs.rmSync(f), /shard 0 of 2 \(model\.ckpt-10\.shard-0-of-2\.safetensors\) is missing/],
      ['model.ckpt-10.sharded.json', (f) => fs.writeFileSync(f, fs.readFileSync(f, 'utf8').replace('"worldSize": 2', '"worldSize": 3')), /its layout lists 2 shards for a world of 3/],
      ['model.ckpt-10.sharded.json', (f) => editLayout(f, (l) => void (l.metadata.optimizer_state = '[{"beta1_power":0.5}]')), /its layout's metadata differs from what shard 0 recorded/],
      ['model.ckpt-10.sharded.json', (f) => editLayout(f, (l) => void delete l.tensors['hidden/bias']), /shard 0 of 2 holds 'hidden\/bias', which its layout does not list there/],
    ];
    for (const [file, harm, reason] of damage) {
      const broken = copyOf(dir);
      try {
        harm(path.join(broken, file));
        const ranks = await ranksOf(2, { optimizer: 'sgd', steps: 1, firstStep: 5, modelDir: broken });
        // Trained from step 5, one step. A shard's header that opens gives restoreGlobalStep
        // its step (10); its data, found corrupt as it is read, sends the restore to step 5.
        const foundWhenRead = reason.source.includes('checksum mismatch');
        for (const r of ranks) expect([file, r.restoredStep, r.globalStep]).toEqual([file, foundWhenRead ? 10 : 5, 6]);
        const refused = ranks[0].logs.find((l) => l.includes('was refused'))!;
        expect(refused).toMatch(/^checkpoint .*model\.ckpt-10\.sharded\.json was refused \(Checkpoint .*model\.ckpt-10\.sharded\.json: /);
        expect(refused).toMatch(reason);
        expect(ranks[0].logs).toContain(`restored ${broken}/model.ckpt-5.sharded.json (global step 5)`);
      } finally {
        fs.rmSync(broken, { recursive: true, force: true });
      }
    }
  }, 180_000);

  test('a rank that cannot restore stops every rank before anything trains', async () => {
    await ranksOf(2, { optimizer: 'sgd', steps: 2, modelDir: dir });
    const broken = copyOf(dir);
    try {
      for (const f of fs.readdirSync(broken).filter((n) => n.includes('.shard-'))) fs.truncateSync(path.join(broken, f), 10);
      const run = await runNode([cliPath, 'launch', '--nproc-per-node', '2', worker, JSON.stringify({ optimizer: 'sgd', steps: 2, firstStep: 2, perRank: G / 2, modelDir: dir, lateRestore: true, rankOverrides: { 1: { modelDir: broken } } })], { env, timeoutMs: 60_000 });
      expect(run.code).toBe(1);
      const [r0, r1] = results(run.stdout);
      expect(r1.message).toMatch(/^No usable checkpoint in .*: shard \d of 2 is corrupt/s);
      expect(r0.message).toMatch(/^rank 1 could not restore from .* \(see its error\); no rank trains$/);
    } finally {
      fs.rmSync(broken, { recursive: true, force: true });
    }
  }, 120_000);

  test('ranks that restored different checkpoints (one could not see the newest) refuse to train', async () => {
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-sharded-other-'));
    try {
      await Promise.all([ranksOf(2, { optimizer: 'sgd', steps: 4, modelDir: dir }), ranksOf(2, { optimizer: 'sgd', steps: 2, modelDir: other })]);
      const run = await runNode([cliPath, 'launch', '--nproc-per-node', '2', worker, JSON.stringify({ optimizer: 'sgd', steps: 2, firstStep: 4, perRank: G / 2, modelDir: dir, rankOverrides: { 1: { modelDir: other } } })], { env, timeoutMs: 60_000 });
      expect(run.code).toBe(1);
      for (const r of results(run.stdout)) expect(r.message).toMatch(/^the ranks restored different checkpoints from .* \(rank 0: step 4, rank 1: step 2\)/);
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  }, 120_000);

  test('ranks started with different models fail at once, naming what differs', async () => {
    const wire = await runNode([cliPath, 'launch', '--nproc-per-node', '2', worker, JSON.stringify({ steps: 3, rankOverrides: { 1: { wire: 'float16' } } })], { env, timeoutMs: 60_000 });
    expect(wire.code).toBe(1);
    for (const r of results(wire.stdout)) expect(r.message).toBe('training step 1: alltoallv: ranks disagree on the wire dtype: rank 0 has none, rank 1 has float16');
    const size = await runNode([cliPath, 'launch', '--nproc-per-node', '2', worker, JSON.stringify({ steps: 3, rankOverrides: { 1: { dimensionA: 5 } } })], { env, timeoutMs: 60_000 });
    expect(size.code).toBe(1);
    expect(results(size.stdout)[0].message).toMatch(/^variable '.*' differs between the ranks' models: broadcast: ranks disagree on the shape/);
  }, 120_000);
});
