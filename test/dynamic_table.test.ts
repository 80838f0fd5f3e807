// Dynamic embedding tables (embBackend 'DYNAMIC'): rows keyed by any int64 id, made in
// training, read as zeros elsewhere; admission, eviction, checkpoints, and their parity
// with a fixed table holding the same ids.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { cudaAvailable, cudaEmulated, describeCuda, loadedAddonPath, pinDevice } from './support/devices';
import { cliPath, killAll, repoRoot, runNode } from './support/processes';

pinDevice('cpu');

const fc = hb.featureColumn;
const DIM = 4;
const init = () => hb.initializers.truncatedNormal({ stddev: 0.5, seed: 11 });

type Ids = Array<number | bigint>;

/** One batch per entry: one id per example, label 1 for even ids. */
function batchesOf(steps: Ids[]): hb.data.Batch[] {
  return steps.map((ids) => ({
    features: { id: BigInt64Array.from(ids, (x) => BigInt(x)) },
    labels: Float32Array.from(ids, (x) => (BigInt(x) % 2n === 0n ? 1 : 0)),
  }));
}

function column(options: Record<string, unknown> = {}, numBuckets?: number) {
  return fc.embeddingColumn(fc.categoricalColumnWithIdentity('id', numBuckets), DIM, { combiner: 'sum', initializer: init(), ...options });
}

function modelFnFor(col: ReturnType<typeof column>, makeOptimizer: () => hb.train.Optimizer): hb.estimator.ModelFn {
  return (features, labels, mode) => {
    const emb = fc.DenseFeatures([col])(features) as hb.SymbolicTensor;
    const logits = hb.layers.dense(emb, 1, { kernelInitializer: hb.initializers.glorotUniform({ seed: 5 }) });
    if (mode === hb.estimator.ModeKeys.PREDICT) return hb.estimator.EstimatorSpec({ mode, predictions: { logits } });
    const loss = hb.losses.sigmoidCrossEntropy(labels as hb.SymbolicTensor, logits);
    if (mode === hb.estimator.ModeKeys.EVAL) return hb.estimator.EstimatorSpec({ mode, loss });
    return hb.estimator.EstimatorSpec({ mode, loss, trainOp: makeOptimizer().minimize(loss) });
  };
}

const dirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-dynamic-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  killAll();
  dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true }));
});

async function train(col: ReturnType<typeof column>, steps: Ids[], makeOptimizer: () => hb.train.Optimizer = () => new hb.train.AdagradOptimizer({ learningRate: 0.1 }), modelDir?: string) {
  const estimator = new hb.estimator.Estimator({
    modelFn: modelFnFor(col, makeOptimizer),
    modelDir: modelDir ?? tempDir(),
    config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, saveCheckpointsSteps: 1000, tfRandomSeed: 3 }),
  });
  await estimator.train(() => batchesOf(steps), { maxSteps: steps.length });
  return estimator;
}

/** Each id's row as the table holds it (a 'sum' of one id), read without changing anything. */
async function rowsOf(table: hb.EmbeddingTable, ids: Ids): Promise<Float32Array> {
  const ragged = new hb.Ragged(BigInt64Array.from(ids, (x) => BigInt(x)), Int32Array.from({ length: ids.length + 1 }, (_, i) => i));
  const out = await table.lookup(ragged, { combiner: 'sum' });
  try {
    return (await out.data()) as Float32Array;
  } finally {
    out.dispose();
  }
}

describe('dynamic tables', () => {
  test('an identity column without numBuckets feeds a dynamic table; embBackend DYNAMIC does for a hash column', () => {
    const table = column().embeddingTable;
    expect(table).toBeInstanceOf(hb.DynamicEmbeddingTable);
    const hashed = fc.embeddingColumn(fc.categoricalColumnWithHashBucket('s', 10), DIM, { embBackend: 'DYNAMIC' });
    expect(hashed.embeddingTable).toBeInstanceOf(hb.DynamicEmbeddingTable);
    expect(fc.embeddingColumn(fc.categoricalColumnWithHashBucket('s', 10), DIM).embeddingTable).not.toBeInstanceOf(hb.DynamicEmbeddingTable);
  });

  test('a new row is what row x of a fixed table with the same initializer holds, for any id, in any order', async () => {
    const ids = [3, 17, 5, 3, 40];
    const frozen = () => new hb.train.GradientDescentOptimizer({ learningRate: 0 });
    const a = column();
    await train(a, [ids, [1, 2]], frozen);
    const b = column();
    await train(b, [[2, 1], [...ids].reverse()], frozen);
    const fixed = column({}, 64);
    const want = await rowsOf(fixed.embeddingTable, [1, 2, 3, 5, 17, 40]);
    expect(Array.from(await rowsOf(a.embeddingTable, [1, 2, 3, 5, 17, 40]))).toEqual(Array.from(want));
    expect(Array.from(await rowsOf(b.embeddingTable, [1, 2, 3, 5, 17, 40]))).toEqual(Array.from(want));
    // Negative and 64-bit ids are keys like any other.
    const c = column();
    await train(c, [[-5, 2n ** 62n, -(2n ** 63n)]], frozen);
    const stats = c.embeddingTable.stats() as hb.DynamicTableStats;
    expect(stats.rows).toBe(3);
    const again = column();
    await train(again, [[-(2n ** 63n), 2n ** 62n, -5]], frozen);
    expect(Array.from(await rowsOf(again.embeddingTable, [-5, 2n ** 62n]))).toEqual(Array.from(await rowsOf(c.embeddingTable, [-5, 2n ** 62n])));
  });

  test.each([
    ['GradientDescent', () => new hb.train.GradientDescentOptimizer({ learningRate: 0.5 })],
    ['Momentum', () => new hb.train.MomentumOptimizer({ learningRate: 0.1, momentum: 0.9 })],
    ['Adagrad', () => new hb.train.AdagradOptimizer({ learningRate: 0.3 })],
    ['RowwiseAdagrad', () => new hb.train.RowwiseAdagradOptimizer({ learningRate: 0.3 })],
    ['Adam (lazy)', () => new hb.train.AdamOptimizer({ learningRate: 0.05, lazy: true })],
    ['Ftrl', () => new hb.train.FtrlOptimizer({ learningRate: 0.3, l1RegularizationStrength: 0.01 })],
  ])('trains to the same values as a fixed table with the same ids (%s)', async (_name, makeOptimizer) => {
    const steps: Ids[] = [
      [1, 2, 3, 1],
      [4, 2, 9, 9, 0],
      [3, 3, 5],
      [0, 1, 2, 4, 5, 9],
    ];
    const dynamic = column();
    const fixed = column({}, 10);
    await train(dynamic, steps, makeOptimizer);
    await train(fixed, steps, makeOptimizer);
    const seen = [0, 1, 2, 3, 4, 5, 9];
    expect(Array.from(await rowsOf(dynamic.embeddingTable, seen))).toEqual(Array.from(await rowsOf(fixed.embeddingTable, seen)));
    // Rows never trained: the fixed table keeps its initial values, the dynamic has none.
    expect(Array.from(await rowsOf(dynamic.embeddingTable, [7]))).toEqual([0, 0, 0, 0]);
  });

  test('a modelFn that makes its column at each call (train, then eval) uses the first table made', async () => {
    const made: Array<ReturnType<typeof column>> = [];
    const modelFn: hb.estimator.ModelFn = (features, labels, mode) => {
      const col = column();
      made.push(col);
      return modelFnFor(col, () => new hb.train.AdagradOptimizer({ learningRate: 0.1 }))(features, labels, mode, {});
    };
    const estimator = new hb.estimator.Estimator({ modelFn, config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false }) });
    await estimator.train(() => batchesOf([[1, 2], [2, 3]]), { maxSteps: 2 });
    const evaluated = await estimator.evaluate(() => batchesOf([[1, 2, 3]]));
    expect(made).toHaveLength(2);
    // The eval graph read the rows training made (through the first table), not an empty second table.
    const first = made[0].embeddingTable.stats() as hb.DynamicTableStats;
    expect(first.rows).toBe(3);
    expect((made[1].embeddingTable.stats() as hb.DynamicTableStats).rows).toBe(0);
    expect(first.hits).toBeGreaterThanOrEqual(3 + 1);
    expect(Number.isFinite(evaluated.loss)).toBe(true);
  });

  test('one column given to two Estimators trains two models, fixed or dynamic', async () => {
    // Columns made once (a modelFn built once, given to two Estimators) used to hold one
    // table for both: the second Estimator trained the first one's rows and took its
    // optimizer slots (checked: A's rows changed while B trained).
    // What each model answers for every id either trained (a dynamic table's rows are
    // only read through lookups).
    const values = async (est: hb.estimator.Estimator) => {
      const out: number[] = [];
      for await (const p of est.predict(() => batchesOf([[1, 2, 3, 5, 6, 7, 8, 9]]))) out.push(p.logits as number);
      return out;
    };
    for (const numBuckets of [undefined, 100]) {
      const shared = column({}, numBuckets);
      const a = await train(shared, [[1, 2], [2, 3]]);
      const before = await values(a);
      const b = await train(shared, [[5, 6], [6, 7], [7, 8]]);
      expect(await values(a)).toEqual(before);
      const alone = await train(column({}, numBuckets), [[5, 6], [6, 7], [7, 8]]);
      expect(await values(b)).toEqual(await values(alone));
      expect(b.globalStep).toBe(3);
    }
  });

  test('evaluation reads unseen ids as zeros and inserts nothing', async () => {
    const col = column();
    const estimator = await train(col, [[1, 2, 3]]);
    const before = col.embeddingTable.stats() as hb.DynamicTableStats;
    await estimator.evaluate(() => batchesOf([[1, 100, 200], [300]]));
    const after = col.embeddingTable.stats() as hb.DynamicTableStats;
    expect(after.rows).toBe(before.rows);
    expect(after.admitted).toBe(before.admitted);
    expect(after.pending).toBe(0);
    const predictions: number[] = [];
    for await (const p of estimator.predict(() => batchesOf([[100]]))) predictions.push((p as { logits: Float32Array }).logits[0]);
    // A zero row through the dense layer: its bias alone.
    expect(predictions).toHaveLength(1);
    expect(Array.from(await rowsOf(col.embeddingTable, [100]))).toEqual([0, 0, 0, 0]);
    // Eager lookups take int32 ids as int64 ones.
    const asInt32 = await col.embeddingTable.lookup(new hb.Ragged(Int32Array.of(1, 2, 100), Int32Array.of(0, 1, 3)), { combiner: 'sum' });
    const asInt64 = await col.embeddingTable.lookup(new hb.Ragged(BigInt64Array.of(1n, 2n, 100n), Int32Array.of(0, 1, 3)), { combiner: 'sum' });
    expect(Array.from((await asInt32.data()) as Float32Array)).toEqual(Array.from((await asInt64.data()) as Float32Array));
    expect(Array.from((await asInt32.data()) as Float32Array).some((x) => x !== 0)).toBe(true);
  });

  test('admission and eviction by age count exactly on a scripted stream', async () => {
    const col = column({ embAdmitMinCount: 2, embEvictAfterSteps: 2 });
    // step 0: 7 twice -> admitted; 1, 2 wait. step 1: 1 admitted; 3 waits. step 2: 4 waits.
    // step 3: 7 (last seen 0) evicted; 4 admitted. step 4: 1 (last seen 1) evicted; 5 waits;
    // 2 and 3, waiting since steps 0 and 1, are forgotten (the pending sweep, every 2 steps).
    await train(col, [[1, 2, 7, 7], [1, 3], [4], [4], [5]]);
    const s = col.embeddingTable.stats() as hb.DynamicTableStats;
    expect({ rows: s.rows, admitted: s.admitted, evicted: s.evicted, pending: s.pending }).toEqual({ rows: 1, admitted: 3, evicted: 2, pending: 1 });
    expect(Array.from(await rowsOf(col.embeddingTable, [7, 1, 2]))).toEqual(new Array(12).fill(0));
    expect((await rowsOf(col.embeddingTable, [4])).some((x) => x !== 0)).toBe(true);
  });

  test('a row cap evicts the least recently used rows; a batch over the cap is refused naming the column', async () => {
    const col = column({ embMaxRows: 2 });
    // step 0: 1, 2. step 1: 3 evicts 1 (the older of the two seen at step 0). step 2: 2 is
    // seen again, 4 evicts 3.
    await train(col, [[1, 2], [3], [2, 4]]);
    const s = col.embeddingTable.stats() as hb.DynamicTableStats;
    expect({ rows: s.rows, admitted: s.admitted, evicted: s.evicted }).toEqual({ rows: 2, admitted: 4, evicted: 2 });
    expect(Array.from(await rowsOf(col.embeddingTable, [1, 3]))).toEqual(new Array(8).fill(0));
    await expect(train(column({ embMaxRows: 2 }), [[1, 2, 3]])).rejects.toThrow(/id_embedding.*embMaxRows \(2\)/);
  });

  test('checkpoints hold the live rows, slots and counts, and restore them exactly', async () => {
    const dir = tempDir();
    const col = column({ embAdmitMinCount: 2 });
    const steps: Ids[] = [[1, 1, 2, 3], [2, 4, 4, 5], [2n ** 40n, -9, -9]];
    const estimator = await train(col, steps, undefined, dir);
    await estimator.saveCheckpoint();
    const ids = [1, 2, 4, -9];
    const rows = await rowsOf(col.embeddingTable, ids);
    const stats = col.embeddingTable.stats() as hb.DynamicTableStats;
    const restoredCol = column({ embAdmitMinCount: 2 });
    const restored = new hb.estimator.Estimator({
      modelFn: modelFnFor(restoredCol, () => new hb.train.AdagradOptimizer({ learningRate: 0.1 })),
      modelDir: dir,
      config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false }),
    });
    await restored.evaluate(() => batchesOf([[1]]));
    expect(Array.from(await rowsOf(restoredCol.embeddingTable, ids))).toEqual(Array.from(rows));
    const again = restoredCol.embeddingTable.stats() as hb.DynamicTableStats;
    expect({ rows: again.rows, pending: again.pending }).toEqual({ rows: stats.rows, pending: stats.pending });
    // Training on from the checkpoint admits a pending id at its next sighting: 3 was seen once.
    await restored.train(() => batchesOf([[3]]), { maxSteps: 4 });
    expect((restoredCol.embeddingTable.stats() as hb.DynamicTableStats).rows).toBe(stats.rows + 1);
  });

  /** Copies `dir` to a new directory when training reaches `atStep` (a job stopped there). */
  function snapshotAt(dir: string, atStep: number, copy: string): hb.estimator.TrainHook {
    return { afterRun: ({ globalStep }) => void (globalStep === atStep && fs.cpSync(dir, copy, { recursive: true })) };
  }

  /** Every delta the manifest of `dir` lists has its base listed too. */
  async function deltasHaveTheirBases(dir: string): Promise<void> {
    const listed = (await hb.estimator.listCheckpoints(dir)).map((c) => path.basename(c.path));
    for (const name of listed) {
      const base = (await hb.estimator.loadCheckpoint(path.join(dir, name))).metadata.hb_delta_base;
      if (base !== undefined) expect(listed).toContain(base);
    }
  }

  test('delta checkpoints hold the rows changed since the last full one; full + newest delta restores exactly', async () => {
    const dir = tempDir();
    const snap = path.join(tempDir(), 'at-7');
    const col = column({ embEvictAfterSteps: 2 });
    const estimator = new hb.estimator.Estimator({
      modelFn: modelFnFor(col, () => new hb.train.AdagradOptimizer({ learningRate: 0.1 })),
      modelDir: dir,
      config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, saveCheckpointsSteps: 4, saveDeltaSteps: 1, keepCheckpointMax: 2, tfRandomSeed: 3 }),
    });
    // Ids 10..19 in the first step, evicted (unseen for more than 2 steps) in the fourth,
    // before the full checkpoint at step 4, which holds 1, 2, 3. Then 4 and 5 are made and
    // 1, 2, 3 evicted: the delta at step 7 holds 4, 5 and says 1, 2, 3 are gone. The job
    // is copied as it stood after step 7's save (stopped there), and trains on to 8.
    const steps: Ids[] = [[10, 11, 12, 13, 14, 15, 16, 17, 18, 19], [1, 2], [1, 3], [2, 3], [4], [5], [4, 5], [4, 5]];
    const live = [4, 5];
    let rows: Float32Array | undefined;
    const capture: hb.estimator.TrainHook = { afterRun: async ({ globalStep }) => void (globalStep === 7 && (rows = await rowsOf(col.embeddingTable, live))) };
    await estimator.train(() => batchesOf(steps), { maxSteps: steps.length, hooks: [capture, snapshotAt(dir, 8, snap)] });
    // The end of training is a full checkpoint.
    expect((await hb.estimator.loadCheckpoint(path.join(dir, 'model.ckpt-8.safetensors'))).metadata.hb_delta_base).toBeUndefined();
    const listed = (await hb.estimator.listCheckpoints(snap)).map((c) => path.basename(c.path));
    // Step 1 had no full checkpoint to be a delta of (so it is one); 4 is full and kept as
    // the base of 7, the newest delta, beyond keepCheckpointMax's rotation.
    expect(listed).toEqual(['model.ckpt-4.safetensors', 'model.ckpt-7.safetensors']);
    const full = await hb.estimator.loadCheckpoint(path.join(snap, 'model.ckpt-4.safetensors'));
    const delta = await hb.estimator.loadCheckpoint(path.join(snap, 'model.ckpt-7.safetensors'));
    const t = col.embeddingTable.name;
    expect(delta.metadata.hb_delta_base).toBe('model.ckpt-4.safetensors');
    expect(full.metadata.hb_delta_base).toBeUndefined();
    const ints = (c: Awaited<ReturnType<typeof hb.estimator.loadCheckpoint>>, name: string) => Array.from(c.tensors.get(name)!.data as BigInt64Array, Number);
    expect(ints(full, `${t}/ids`)).toEqual([1, 2, 3]);
    expect(ints(delta, `${t}/ids`)).toEqual([4, 5]);
    expect(ints(delta, `${t}/removed_ids`)).toEqual([1, 2, 3]);
    // readCheckpoint puts the newest delta over its base: the table as it was at step 7.
    const read = await hb.estimator.readCheckpoint(snap);
    expect(read.globalStep).toBe(7);
    expect(Array.from(read.tensors.get(`${t}/ids`)!.data as BigInt64Array, Number)).toEqual(live);
    expect(Array.from(read.tensors.get(t)!.data as Float32Array)).toEqual(Array.from(rows!));
    expect(read.tensors.get(`${t}/Adagrad`)!.shape).toEqual([2, DIM]);
    expect(read.tensors.has(`${t}/removed_ids`)).toBe(false);
    const restoredCol = column({ embEvictAfterSteps: 2 });
    const restored = new hb.estimator.Estimator({
      modelFn: modelFnFor(restoredCol, () => new hb.train.AdagradOptimizer({ learningRate: 0.1 })),
      modelDir: snap,
      config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, saveCheckpointsSteps: 100, saveDeltaSteps: 1, keepCheckpointMax: 2 }),
    });
    await restored.evaluate(() => batchesOf([[1]]));
    expect(restored.globalStep).toBe(7);
    expect(Array.from(await rowsOf(restoredCol.embeddingTable, live))).toEqual(Array.from(rows!));
    expect(Array.from(await rowsOf(restoredCol.embeddingTable, [1, 10]))).toEqual(new Array(2 * DIM).fill(0));
    expect((restoredCol.embeddingTable.stats() as hb.DynamicTableStats).rows).toBe(2);
    // Trained on from the delta, the next delta is still against step 4 and still says
    // 1, 2, 3 are gone (restoring 4 + it must not bring them back).
    const again = path.join(tempDir(), 'at-8');
    await restored.train(() => batchesOf([[6], [6]]), { maxSteps: 9, hooks: [snapshotAt(snap, 9, again)] });
    const next = await hb.estimator.loadCheckpoint(path.join(again, 'model.ckpt-8.safetensors'));
    expect(next.metadata.hb_delta_base).toBe('model.ckpt-4.safetensors');
    expect(ints(next, `${t}/ids`)).toEqual([4, 5, 6]);
    expect(ints(next, `${t}/removed_ids`)).toEqual([1, 2, 3]);
  });

  test('rotation never leaves a delta without its base; a delta whose base is gone is refused, and none usable stops the run', async () => {
    const dir = tempDir();
    const col = column();
    const checks: Array<Promise<void>> = [];
    const estimator = new hb.estimator.Estimator({
      modelFn: modelFnFor(col, () => new hb.train.AdagradOptimizer({ learningRate: 0.1 })),
      modelDir: dir,
      config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, saveCheckpointsSteps: 4, saveDeltaSteps: 1, keepCheckpointMax: 3, tfRandomSeed: 3 }),
    });
    const everyStep: hb.estimator.TrainHook = { afterRun: async () => void checks.push(deltasHaveTheirBases(dir)) };
    const snap = path.join(tempDir(), 'at-3');
    await estimator.train(() => batchesOf([[1], [2], [3], [4], [5], [6], [7], [8], [9], [10]]), { maxSteps: 10, hooks: [everyStep, snapshotAt(dir, 4, snap)] });
    await Promise.all(checks);
    await deltasHaveTheirBases(dir);
    // The copy at step 3: 1 full (no base yet), 2 and 3 deltas of 1.
    expect((await hb.estimator.loadCheckpoint(path.join(snap, 'model.ckpt-3.safetensors'))).metadata.hb_delta_base).toBe('model.ckpt-1.safetensors');
    fs.rmSync(path.join(snap, 'model.ckpt-1.safetensors'));
    const lines: string[] = [];
    const restored = new hb.estimator.Estimator({
      modelFn: modelFnFor(column(), () => new hb.train.AdagradOptimizer({ learningRate: 0.1 })),
      modelDir: snap,
      config: new hb.estimator.RunConfig({ log: (line) => lines.push(line), progressBar: false }),
    });
    // Nothing left to restore: not a fresh start over the model.
    await expect(restored.evaluate(() => batchesOf([[1]]))).rejects.toThrow(/No usable checkpoint in .*model\.ckpt-3\.safetensors is a delta whose base cannot be used/s);
    expect(lines.join('\n')).toMatch(/model\.ckpt-2\.safetensors is a delta whose base cannot be used/);
  });

  test('a delta whose base has a corrupt data byte is refused as it is read; the restore goes back to an older delta and its own base', async () => {
    const dir = tempDir();
    const col = column();
    const estimator = new hb.estimator.Estimator({
      modelFn: modelFnFor(col, () => new hb.train.AdagradOptimizer({ learningRate: 0.1 })),
      modelDir: dir,
      config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false, saveCheckpointsSteps: 4, saveDeltaSteps: 1, keepCheckpointMax: 10, tfRandomSeed: 3 }),
    });
    let atThree: Float32Array | undefined;
    const capture: hb.estimator.TrainHook = { afterRun: async ({ globalStep }) => void (globalStep === 3 && (atThree = await rowsOf(col.embeddingTable, [1, 2, 3]))) };
    // Copied after step 5's save: 1 full, 2 and 3 deltas of it, 4 full, 5 a delta of 4.
    const snap = path.join(tempDir(), 'at-5');
    await estimator.train(() => batchesOf([[1], [2], [3], [4], [5], [6]]), { maxSteps: 6, hooks: [capture, snapshotAt(dir, 6, snap)] });
    const base = path.join(snap, 'model.ckpt-4.safetensors');
    expect((await hb.estimator.loadCheckpoint(path.join(snap, 'model.ckpt-5.safetensors'))).metadata.hb_delta_base).toBe('model.ckpt-4.safetensors');
    expect((await hb.estimator.loadCheckpoint(path.join(snap, 'model.ckpt-3.safetensors'))).metadata.hb_delta_base).toBe('model.ckpt-1.safetensors');
    const bytes = fs.readFileSync(base);
    bytes[bytes.length - 1] ^= 0x08;
    fs.writeFileSync(base, bytes);
    const lines: string[] = [];
    const restoredCol = column();
    const restored = new hb.estimator.Estimator({
      modelFn: modelFnFor(restoredCol, () => new hb.train.AdagradOptimizer({ learningRate: 0.1 })),
      modelDir: snap,
      config: new hb.estimator.RunConfig({ log: (line) => lines.push(line), progressBar: false }),
    });
    await restored.evaluate(() => batchesOf([[1]]));
    expect(restored.globalStep).toBe(3);
    const log = lines.join('\n');
    expect(log).toMatch(/model\.ckpt-5\.safetensors was refused \(Checkpoint .*model\.ckpt-5\.safetensors is a delta whose base cannot be used: Checkpoint .*model\.ckpt-4\.safetensors: checksum mismatch/);
    expect(log).toMatch(/model\.ckpt-4\.safetensors was refused \(Checkpoint .*model\.ckpt-4\.safetensors: checksum mismatch/);
    // Ids 4 and 5 came from the refused checkpoints: gone again with them.
    expect((restoredCol.embeddingTable.stats() as hb.DynamicTableStats).rows).toBe(3);
    expect(Array.from(await rowsOf(restoredCol.embeddingTable, [1, 2, 3]))).toEqual(Array.from(atThree!));
  });

  test('bad settings are refused naming the column or option', () => {
    expect(() => fc.indicatorColumn(fc.categoricalColumnWithIdentity('id'))).toThrow(/'id' has no numBuckets/);
    expect(() => column({ embAdmitMinCount: 0 })).toThrow(/embAdmitMinCount/);
    expect(() => column({ embMaxRows: -1 })).toThrow(/embMaxRows/);
    if (!cudaAvailable) expect(() => column({ embDevice: 'cuda:0' }).variable).toThrow(/dynamicTableCreate: device.*cuda/i);
    expect(() => column({ initializer: hb.initializers.constant([[1, 2, 3, 4]]) }).variable).toThrow(/is dynamic: its rows are made on first use.*pretrained/);
    expect(() => fc.categoricalColumnWithIdentity('id', undefined, 3)).toThrow(/defaultValue needs numBuckets/);
    expect(() => fc.categoricalColumnWithIdentity('id').transform({ id: Int32Array.of(1) })).toThrow(/no numBuckets/);
  });

  test("non-lazy Adam, which decays every row, is refused for a dynamic table", async () => {
    await expect(train(column(), [[1]], () => new hb.train.AdamOptimizer())).rejects.toThrow(/'id_embedding\/embedding_weights' is dynamic.*lazy: true/);
  });
});

describeCuda('a dynamic table under a model on CUDA', () => {
  // By default the rows live on the device (address space reserved there, backed as rows
  // are made) and the hash index on the host; embDevice 'cpu' keeps the rows in host memory.
  async function trainOn(device: hb.DeviceSpec, makeOptimizer: () => hb.train.Optimizer, options: Record<string, unknown> = {}, modelDir = tempDir()) {
    const col = column({ embAdmitMinCount: 1, ...options });
    const estimator = new hb.estimator.Estimator({
      modelFn: modelFnFor(col, makeOptimizer),
      modelDir,
      config: new hb.estimator.RunConfig({ device, log: () => undefined, progressBar: false, saveCheckpointsSteps: 1000, tfRandomSeed: 3 }),
    });
    const losses: number[] = [];
    const steps: Ids[] = [[1, 2, 3, 1], [-7, 2n ** 62n, 9, 9, 0], [3, 3, 5], [0, 1, 2, -7, 5, 9]];
    await estimator.train(() => batchesOf(steps), { maxSteps: steps.length, hooks: [{ afterRun: ({ loss }) => void losses.push(loss) }] });
    return { estimator, col, losses, rows: await rowsOf(col.embeddingTable, [0, 1, 2, 3, 5, 9, -7, 2n ** 62n]) };
  }

  /** Within 1e-6: the dense layer and the loss run on cuBLAS and the GPU's math library (bit-equal on the emulated device). */
  function expectClose(got: ArrayLike<number>, want: ArrayLike<number>) {
    expect(got.length).toBe(want.length);
    Array.from(got).forEach((x, i) => expect(Math.abs(x - want[i])).toBeLessThan(1e-6));
  }

  test.each([
    ['Adagrad, sum', () => new hb.train.AdagradOptimizer({ learningRate: 0.3 }), 'sum'],
    ['Adam (lazy), mean', () => new hb.train.AdamOptimizer({ learningRate: 0.05, lazy: true }), 'mean'],
    ['GradientDescent, sqrtn', () => new hb.train.GradientDescentOptimizer({ learningRate: 0.5 }), 'sqrtn'],
  ])("trains to the CPU run's rows and losses, its rows on the device or in host memory (%s)", async (_name, makeOptimizer, combiner) => {
    const cpu = await trainOn('cpu', makeOptimizer, { combiner });
    for (const embDevice of ['', 'cpu']) {
      const gpu = await trainOn('cuda', makeOptimizer, { embDevice, combiner });
      expect(gpu.estimator.device).toBe('cuda:0');
      expect(gpu.col.embeddingTable.variable.device).toBe(embDevice === 'cpu' ? 'cpu' : 'cuda:0');
      expect((gpu.col.embeddingTable.stats() as hb.DynamicTableStats).rows).toBe(8);
      expectClose(gpu.losses, cpu.losses);
      expectClose(gpu.rows, cpu.rows);
    }
  });

  test('segment_combine and its gradient run on the device with the host kernels\' bits (weights, every combiner)', async () => {
    const { native } = require('../lib/native') as typeof import('../lib/native');
    const dim = 5;
    const rows = Float32Array.from({ length: 7 * dim }, (_, i) => Math.sin(i * 1.7) * 3);
    const splits = Int32Array.of(0, 3, 3, 7, 8);
    const idx = Int32Array.of(4, 0, 4, 6, 1, 2, 5, 3);
    const weights = Float32Array.of(0.5, 2, 1.25, 3, 0.75, 1, 2.5, 0.1);
    const dy = Float32Array.from({ length: 4 * dim }, (_, i) => Math.cos(i * 0.9));
    const ids = BigInt64Array.from({ length: 7 }, (_, i) => BigInt(i * 10));
    const on = (device: string) => {
      const t = (a: Int32Array | Float32Array | BigInt64Array, shape: number[], where = 'cpu') => native.tensorFromTypedArray(a, shape, where);
      return { rows: t(rows, [7, dim], device), dy: t(dy, [4, dim], device), splits: t(splits, [5]), idx: t(idx, [8]), weights: t(weights, [8]), ids: t(ids, [7]) };
    };
    // A weight not > 0 under mean / sqrtn (which the lookup kernels would prune) takes the host way.
    for (const [combiner, negativeWeight] of [['sum', false], ['mean', false], ['sqrtn', false], ['mean', true], ['sqrtn', true]] as const) {
      weights[2] = negativeWeight ? -0.5 : 1.25;
      const results = [];
      for (const device of ['cuda', 'cpu']) {
        const x = on(device);
        const [out] = await native.kernelRun('segment_combine', [x.rows, x.splits, x.idx, x.weights], [[4, dim]], { combiner }, 'seg');
        const [grad] = await native.kernelRun('segment_combine_grad', [x.dy, x.splits, x.idx, x.weights, x.ids], [{ dtype: 'float32' }], { combiner }, 'seg_grad');
        results.push({ device: [out!.device, grad!.device], out: Array.from((await native.tensorData(out!)) as Float32Array), grad: Array.from((await native.tensorData(grad!)) as Float32Array) });
      }
      expect(results[0].device).toEqual(['cuda:0', 'cuda:0']);
      expect(results[0].out).toEqual(results[1].out);
      expect(results[0].grad).toEqual(results[1].grad);
    }
  });

  test('segment_combine_grad of a row in 600 entries (summed in pieces of 256) and of rows 0 floats wide: the host kernels\' bits on the device', async () => {
    const { native } = require('../lib/native') as typeof import('../lib/native');
    const batch = 300;
    const splits = Int32Array.from({ length: batch + 1 }, (_, b) => 2 * b);
    // Row 0 in every bag and in every seventh one again: 343 entries; the others 42-43.
    const idx = Int32Array.from({ length: 2 * batch }, (_, j) => (j % 2 === 0 ? 0 : (j >> 1) % 7));
    const weights = Float32Array.from({ length: 2 * batch }, (_, j) => 0.25 + ((j * 37) % 11) / 4);
    const ids = BigInt64Array.from({ length: 7 }, (_, i) => BigInt(i * 10));
    for (const dim of [64, 0]) {
      const dy = Float32Array.from({ length: batch * dim }, (_, i) => Math.sin(i * 0.37) * (i % 5 === 0 ? 100 : 1));
      const results = [];
      for (const device of ['cuda', 'cpu']) {
        const t = (a: Int32Array | Float32Array | BigInt64Array, shape: number[], where = 'cpu') => native.tensorFromTypedArray(a, shape, where);
        const inputs = [t(dy, [batch, dim], device), t(splits, [batch + 1]), t(idx, [2 * batch]), t(weights, [2 * batch]), t(ids, [7])];
        const [grad] = await native.kernelRun('segment_combine_grad', inputs, [{ dtype: 'float32' }], { combiner: 'mean' }, 'seg_grad');
        results.push({ device: grad!.device, grad: (await native.tensorData(grad!)) as Float32Array });
      }
      expect(results[0].device).toBe('cuda:0');
      expect(results[0].grad.length).toBe(7 * dim);
      expect(Buffer.from(results[0].grad.buffer, results[0].grad.byteOffset, results[0].grad.byteLength).equals(Buffer.from(results[1].grad.buffer, results[1].grad.byteOffset, results[1].grad.byteLength))).toBe(true);
    }
  });

  test('ids not admitted yet read zeros and get no update on the device', async () => {
    const gpu = await trainOn('cuda', () => new hb.train.AdagradOptimizer({ learningRate: 0.3 }), { embAdmitMinCount: 2 });
    const cpu = await trainOn('cpu', () => new hb.train.AdagradOptimizer({ learningRate: 0.3 }), { embAdmitMinCount: 2 });
    expect(gpu.col.embeddingTable.variable.device).toBe('cuda:0');
    expect(gpu.col.embeddingTable.stats()).toMatchObject({ rows: (cpu.col.embeddingTable.stats() as hb.DynamicTableStats).rows });
    expectClose(gpu.rows, cpu.rows);
    // 2^62 was seen once: no row, zeros.
    expect(Array.from(gpu.rows.slice(7 * DIM))).toEqual([0, 0, 0, 0]);
  });

  test('a checkpoint of rows on the device restores on the device and in host memory', async () => {
    const dir = tempDir();
    const trained = await trainOn('cuda', () => new hb.train.AdagradOptimizer({ learningRate: 0.3 }), {}, dir);
    await trained.estimator.saveCheckpoint();
    for (const device of ['cuda', 'cpu'] as const) {
      const col = column({ embAdmitMinCount: 1 });
      const restored = new hb.estimator.Estimator({
        modelFn: modelFnFor(col, () => new hb.train.AdagradOptimizer({ learningRate: 0.3 })),
        modelDir: dir,
        config: new hb.estimator.RunConfig({ device, log: () => undefined, progressBar: false }),
      });
      await restored.evaluate(() => batchesOf([[1]]));
      expect(col.embeddingTable.variable.device).toBe(device === 'cuda' ? 'cuda:0' : 'cpu');
      expect(Array.from(await rowsOf(col.embeddingTable, [0, 1, 2, 3, 5, 9, -7, 2n ** 62n]))).toEqual(Array.from(trained.rows));
    }
  });

  test('the memory plan puts the rows on the device and the index in host memory', async () => {
    const col = column();
    const estimator = new hb.estimator.Estimator({
      modelFn: modelFnFor(col, () => new hb.train.AdagradOptimizer({ learningRate: 0.3 })),
      modelDir: tempDir(),
      config: new hb.estimator.RunConfig({ device: 'cuda', log: () => undefined, progressBar: false }),
    });
    const plan = await hb.estimator.memoryPlan(estimator, batchesOf([[1, 2, 3]])[0]);
    const table = plan.tables.find((t) => t.kind === 'dynamic')!;
    expect(table.device).toBe('cuda:0');
    expect(plan.devices.find((d) => d.device === 'cpu')?.hashBytes).toBe(table.hashBytes);
  });
});

/** A native table named `name` (seeded truncated normal, no admission, eviction or cap unless given) and its calls. */
function nativeTable(name: string) {
  const { native } = require('../lib/native') as typeof import('../lib/native');
  const seeded = { kind: 'truncatedNormal' as const, stddev: 1, seed: 3 };
  const makeTable = (o: Record<string, unknown> & { dim: number }) => native.dynamicTableCreate({ name, init: seeded, admitMinCount: 1, evictAfterSteps: 0, maxRows: 0, ...o });
  const i64 = (ids: number[]) => native.tensorFromTypedArray(BigInt64Array.from(ids, BigInt), [ids.length], 'cpu');
  const rowsFor = async (t: { handle: unknown }, ids: number[], train: boolean, step: number) => {
    const out = await native.kernelRun('dynamic_rows', [t.handle as never, i64(ids)], [{ dtype: 'int64' }], { train, step }, name);
    return Array.from((await native.tensorData(out[0]!)) as BigInt64Array, Number);
  };
  const snapshot = async (id: number) => {
    const s = await native.dynamicTableSnapshot(id, false);
    const slot = s.slots.length ? Array.from((await native.tensorData(s.slots[0]!)) as Float32Array) : undefined;
    return { raw: s, ids: Array.from((await native.tensorData(s.ids)) as BigInt64Array, Number), values: Array.from((await native.tensorData(s.values)) as Float32Array), slot };
  };
  return { native, makeTable, rowsFor, snapshot };
}

describeCuda('the native dynamic table with its rows on the device', () => {
  const { native, rowsFor, snapshot, makeTable } = nativeTable('device_t');
  const make = (device: string, o: Record<string, unknown> = {}) => makeTable({ dim: 64, device, ...o });

  (cudaEmulated ? test : test.skip)('in a child process on a 64 MiB device: rows that do not fit fail the step with an Error, and the table keeps what it had', () => {
    const { spawnSync } = require('child_process') as typeof import('child_process');
    const script = `
      const { native } = require(${JSON.stringify(require.resolve('../dist/native'))});
      (async () => {
        const t = native.dynamicTableCreate({ name: 'small_device', dim: 64, init: { kind: 'truncatedNormal', stddev: 1, seed: 3 }, admitMinCount: 1, evictAfterSteps: 0, maxRows: 0, device: 'cuda' });
        native.dynamicTableAddSlot(t.id, 0.1, false);
        const lookup = (ids, step) => native.kernelRun('dynamic_rows', [t.handle, native.tensorFromTypedArray(BigInt64Array.from(ids, BigInt), [ids.length], 'cpu')], [{ dtype: 'int64' }], { train: true, step }, 'small_device');
        await lookup(Array.from({ length: 1000 }, (_, i) => i), 0);
        let error = '';
        // 300k rows of 64 floats and their slot: 154 MB.
        await lookup(Array.from({ length: 300000 }, (_, i) => 1000 + i), 1).catch((e) => { error = String(e.message); });
        const after = native.dynamicTableStats(t.id);
        await lookup([5, 2000000], 2);
        console.log(JSON.stringify({ error, rowsAfterFailure: after.rows, rowsAtEnd: native.dynamicTableStats(t.id).rows }));
      })().catch((e) => { console.error(e); process.exit(1); });
    `;
    const r = spawnSync(process.execPath, ['-e', script], {
      encoding: 'utf8',
      env: { ...process.env, HB_ADDON: loadedAddonPath(), HB_CUDA_EMULATE_MEMORY_MIB: '64' },
      timeout: 60_000,
    });
    expect({ signal: r.signal, status: r.status, stderr: r.stderr.trim() }).toEqual({ signal: null, status: 0, stderr: '' });
    const out = JSON.parse(r.stdout.trim());
    expect(out.error).toMatch(/out of device memory: \d+ more bytes for a dynamic table's rows.*embMaxRows.*embDevice: 'cpu'/);
    expect(out).toMatchObject({ rowsAfterFailure: 1000, rowsAtEnd: 1001 });
  });

  test('rows made past the first backed block, evicted, capped and restored hold what the host table holds', async () => {
    // 256 B a row: 20000 rows take several 2 MiB steps of device memory.
    const ids = Array.from({ length: 20000 }, (_, i) => i * 7919 - 50000);
    const both = ['cuda', 'cpu'].map((device) => ({ device, t: make(device, { evictAfterSteps: 2 }) }));
    for (const { t } of both) native.dynamicTableAddSlot(t.id, 0.25, false);
    const results = [];
    for (const { t, device } of both) {
      const made = await rowsFor(t, ids, true, 0);
      await rowsFor(t, ids.slice(0, 10), true, 3); // every row unseen for 3 steps goes first, then 10 come back
      await rowsFor(t, [1, 2, 3], true, 5);
      const stats = native.dynamicTableStats(t.id);
      results.push({ device, made, stats, snap: await snapshot(t.id) });
    }
    const [gpu, cpu] = results;
    expect(gpu.made).toEqual(cpu.made);
    expect(gpu.stats).toMatchObject({ rows: 13, evicted: 20000, admitted: 20013 });
    expect(gpu.stats).toEqual(cpu.stats);
    expect(gpu.snap.ids).toEqual(cpu.snap.ids);
    expect(gpu.snap.values).toEqual(cpu.snap.values);
    expect(gpu.snap.slot).toHaveLength(13 * 64);
    expect(gpu.snap.slot).toEqual(cpu.snap.slot);
    // A restore into a device table, one rank of two: the rows of even ids, exactly.
    const restored = make('cuda');
    native.dynamicTableAddSlot(restored.id, 0.25, false);
    await native.dynamicTableRestore(restored.id, gpu.snap.raw, true, 2, 0);
    const back = await snapshot(restored.id);
    const even = gpu.snap.ids.map((id, k) => [id, k] as const).filter(([id]) => ((id % 2) + 2) % 2 === 0);
    expect(back.ids).toEqual(even.map(([id]) => id));
    expect(back.values).toEqual(even.flatMap(([, k]) => gpu.snap.values.slice(k * 64, k * 64 + 64)));
    // A cap evicts on the device as on the host.
    const capped = make('cuda', { maxRows: 4 });
    await rowsFor(capped, [1, 2, 3, 4], true, 0);
    await rowsFor(capped, [5, 6], true, 1);
    expect((await snapshot(capped.id)).ids).toEqual([3, 4, 5, 6]);
    await expect(rowsFor(capped, [7, 8, 9, 10, 11], true, 2)).rejects.toThrow(/embMaxRows \(4\) is smaller than the distinct ids/);
  });
});

// The native table under what a sharded step sends it (an id repeated, once per rank that
// looked it up) and under failures that must leave it as it was.
describe('the native dynamic table', () => {
  const { native, rowsFor, snapshot, makeTable } = nativeTable('native_t');
  const make = (o: Record<string, unknown> = {}) => makeTable({ dim: 2, ...o });

  test('an id repeated in one lookup gets one row; counts stay exact', async () => {
    const t = make({ maxRows: 3 });
    expect(await rowsFor(t, [5, 5, 6, 5], true, 0)).toEqual([0, 0, 1, 0]);
    expect(native.dynamicTableStats(t.id)).toMatchObject({ rows: 2, pending: 0, admitted: 2 });
    // The cap counts distinct ids: three repeats of two ids fit a cap of 2.
    const capped = make({ maxRows: 2 });
    expect(await rowsFor(capped, [1, 2, 1, 2, 1, 2], true, 0)).toEqual([0, 1, 0, 1, 0, 1]);
  });

  test('a lookup without room fails before any row changes hands', async () => {
    const t = make({ capacityRows: 2 });
    await rowsFor(t, [1, 2], true, 0);
    const before = await snapshot(t.id);
    await expect(rowsFor(t, [3, 4], true, 1)).rejects.toThrow(/is full \(2 rows\)/);
    const after = await snapshot(t.id);
    expect(after.ids).toEqual([1, 2]);
    expect(after.values).toEqual(before.values);
    expect(native.dynamicTableStats(t.id)).toMatchObject({ rows: 2, pending: 2, admitted: 2 });
  });

  test('a restore that does not fit the cap changes nothing; one that does leaves a working list by last use', async () => {
    const t = make({ maxRows: 2 });
    await rowsFor(t, [1, 2], true, 0);
    const before = await snapshot(t.id);
    const other = make();
    await rowsFor(other, [10, 11, 12], true, 0);
    await expect(native.dynamicTableRestore(t.id, (await snapshot(other.id)).raw, true, 1, 0)).rejects.toThrow(/holds 3 rows for this rank, more than embMaxRows \(2\)/);
    expect(await snapshot(t.id)).toMatchObject({ ids: before.ids, values: before.values });
    // Rows 1 and 2 are still evicted oldest first as new ids come.
    await rowsFor(t, [1], true, 1);
    await rowsFor(t, [13], true, 2);
    expect((await snapshot(t.id)).ids).toEqual([1, 13]);
  });

  test("a delta of a capped table restores over its base: its removed rows make room first", async () => {
    const t = make({ maxRows: 3 });
    await rowsFor(t, [1, 2, 3], true, 0);
    const base = await snapshot(t.id);
    await native.dynamicTableMarkSaved(t.id, 1);
    await rowsFor(t, [4, 5], true, 1); // evicts 1 and 2
    const changes = await native.dynamicTableSnapshot(t.id, true);
    const restored = make({ maxRows: 3 });
    await native.dynamicTableRestore(restored.id, base.raw, true, 1, 0);
    await native.dynamicTableMarkSaved(restored.id, 1);
    await native.dynamicTableRestore(restored.id, changes, false, 1, 0);
    expect(await snapshot(restored.id)).toMatchObject({ ids: [3, 4, 5], values: (await snapshot(t.id)).values });
  });

  test('ids forgotten while waiting for admission are listed as removed in a snapshot of changes', async () => {
    const t = make({ admitMinCount: 2, evictAfterSteps: 1 });
    await rowsFor(t, [8], true, 0);
    await native.dynamicTableMarkSaved(t.id, 1);
    for (const step of [1, 2, 3]) await rowsFor(t, [100 + step], true, step);
    const changes = await native.dynamicTableSnapshot(t.id, true);
    expect(Array.from((await native.tensorData(changes.removedIds)) as BigInt64Array, Number)).toContain(8);
  });

  test('a count restored at the top of int64 stays there when the id comes again (a wrap would write a checkpoint that does not restore)', async () => {
    const t = make();
    await rowsFor(t, [1], true, 0);
    const saved = (await snapshot(t.id)).raw;
    const top = 2n ** 63n - 1n;
    const restored = make();
    await native.dynamicTableRestore(restored.id, { ...saved, meta: native.tensorFromTypedArray(BigInt64Array.of(0n, top, 0n), [1, 3], 'cpu') }, true, 1, 0);
    await rowsFor(restored, [1, 1], true, 1);
    const again = await native.dynamicTableSnapshot(restored.id, false);
    expect(((await native.tensorData(again.meta)) as BigInt64Array)[1]).toBe(top);
    await expect(native.dynamicTableRestore(make().id, again, true, 1, 0)).resolves.toBeUndefined();
  });

  test('restored metadata out of range is refused as corrupt', async () => {
    const t = make();
    await rowsFor(t, [1], true, 0);
    const saved = (await snapshot(t.id)).raw;
    const meta = native.tensorFromTypedArray(BigInt64Array.of(-(2n ** 63n), 1n, 0n), [1, 3], 'cpu');
    await expect(native.dynamicTableRestore(t.id, { ...saved, meta }, true, 1, 0)).rejects.toThrow(/steps out of range/);
  });
});

// Gloo is built in where libgloo-dev was found (as .ci/run installs it).
const describeGloo = hb.backend().gloo.available ? describe : describe.skip;

describeGloo('a dynamic table sharded over hb-ts launch', () => {
  const worker = path.join(repoRoot, 'test', 'fixtures', 'sharded', 'dynamic_worker.js');
  const env = { HB_DEVICE: 'cpu' };

  /** The rows a checkpoint of the worker's model holds for `ids`, restored in this process. */
  async function restoredRows(modelDir: string, ids: Ids, options: Record<string, unknown> = {}): Promise<{ rows: Float32Array; count: number }> {
    const col = column(options);
    const estimator = new hb.estimator.Estimator({
      modelFn: modelFnFor(col, () => new hb.train.AdagradOptimizer({ learningRate: 0.3 })),
      modelDir,
      config: new hb.estimator.RunConfig({ log: () => undefined, progressBar: false }),
    });
    await estimator.evaluate(() => batchesOf([[0]]));
    return { rows: await rowsOf(col.embeddingTable, ids), count: (col.embeddingTable.stats() as hb.DynamicTableStats).rows };
  }

  test('2 ranks train what one process trains on the whole batches; the shards restore into one process', async () => {
    const sharded = tempDir();
    const whole = tempDir();
    const job = await runNode([cliPath, 'launch', '--nproc-per-node', '2', worker, JSON.stringify({ worldSize: 2, steps: 6, modelDir: sharded })], { env, timeoutMs: 90_000 });
    expect(job.stderr).toBe('');
    expect(job.code).toBe(0);
    const ranks = job.stdout.split('\n').filter((l) => l.includes('RESULT ')).map((l) => JSON.parse(l.slice(l.indexOf('RESULT ') + 7)));
    expect(ranks.map((r) => r.placement)).toEqual(['sharded', 'sharded']);
    expect(ranks.every((r) => r.rows > 0)).toBe(true);
    const alone = await runNode([worker, JSON.stringify({ worldSize: 2, steps: 6, modelDir: whole })], { env, timeoutMs: 60_000 });
    expect(alone.code).toBe(0);
    const reference = JSON.parse(alone.stdout.slice(alone.stdout.indexOf('RESULT ') + 7));
    // Every id lives on exactly one rank (id floormod 2).
    expect(ranks[0].rows + ranks[1].rows).toBe(reference.rows);
    const ids = Array.from({ length: 23 }, (_, k) => BigInt(k - 11) * 1000003n * 1000003n);
    const a = await restoredRows(sharded, ids);
    const b = await restoredRows(whole, ids);
    expect(a.count).toBe(reference.rows);
    expect(b.count).toBe(reference.rows);
    // The same sums in another order (per-rank gradients, then the exchange): close, not equal.
    Array.from(a.rows).forEach((x, i) => expect(x).toBeCloseTo(b.rows[i], 5));
  }, 120_000);

  test('delta checkpoints of 2 ranks (each its changes and removals) restore into one process as its own do', async () => {
    const sharded = tempDir();
    const whole = tempDir();
    // Steps 1 and 3 full, 2, 4 and 5 deltas; copied as they stood after step 5 (the end of
    // training saves a full checkpoint over step 6's).
    const settings = { worldSize: 2, steps: 6, saveCheckpointsSteps: 3, saveDeltaSteps: 1, evictAfterSteps: 1, snapshotAt: 6 };
    const shardedAt5 = path.join(sharded, '..', 'sharded-at-5');
    const wholeAt5 = path.join(whole, '..', 'whole-at-5');
    const job = await runNode([cliPath, 'launch', '--nproc-per-node', '2', worker, JSON.stringify({ ...settings, modelDir: sharded, snapshotDir: shardedAt5 })], { env, timeoutMs: 90_000 });
    expect(job.stderr).toBe('');
    expect(job.code).toBe(0);
    const alone = await runNode([worker, JSON.stringify({ ...settings, modelDir: whole, snapshotDir: wholeAt5 })], { env, timeoutMs: 60_000 });
    expect(alone.code).toBe(0);
    // Step 5 is a delta of step 3 in both, the job's listed by its layout.
    const layout = JSON.parse(fs.readFileSync(path.join(shardedAt5, 'model.ckpt-5.sharded.json'), 'utf8'));
    expect(layout.metadata.hb_delta_base).toBe('model.ckpt-3.sharded.json');
    expect(layout.tensors['id_embedding/embedding_weights/removed_ids']).toMatchObject({ dtype: 'int64', layout: 'concat' });
    expect((await hb.estimator.loadCheckpoint(path.join(wholeAt5, 'model.ckpt-5.safetensors'))).metadata.hb_delta_base).toBe('model.ckpt-3.safetensors');
    const ids = Array.from({ length: 23 }, (_, k) => BigInt(k - 11) * 1000003n * 1000003n);
    const a = await restoredRows(shardedAt5, ids, { embEvictAfterSteps: 1 });
    const b = await restoredRows(wholeAt5, ids, { embEvictAfterSteps: 1 });
    // The same rows as readCheckpoint's merge of the single-process delta over its base.
    const merged = await hb.estimator.readCheckpoint(wholeAt5);
    expect(b.count).toBe((merged.tensors.get('id_embedding/embedding_weights/ids')!.data as BigInt64Array).length);
    expect(a.count).toBe(b.count);
    expect(b.count).toBeGreaterThan(0);
    Array.from(a.rows).forEach((x, i) => expect(x).toBeCloseTo(b.rows[i], 5));
  }, 120_000);
});
