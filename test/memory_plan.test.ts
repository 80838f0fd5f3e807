// hb.estimator.memoryPlan and the check before training: what a model will hold, per
// device and table, worked out without allocating; a fixed table that cannot fit refuses
// training before anything is made; `hb-ts plan` prints it.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as hb from '../lib';
import { EmbeddingTable } from '../lib/embedding/embedding_table';
import { localPlacement } from '../lib/embedding/placement';
import { withMemoryBudget } from '../lib/tensor/memory_budget';
import { pinDevice } from './support/devices';

pinDevice('cpu');
const fc = hb.featureColumn;

function modelOf(columns: hb.featureColumn.DenseColumn[], makeOptimizer: () => hb.train.Optimizer): hb.estimator.ModelFn {
  return (features, labels, mode) => {
    const x = fc.DenseFeatures(columns)(features);
    const loss = hb.losses.sigmoidCrossEntropy(labels, hb.layers.dense(hb.layers.dense(x, 8, { activation: 'relu', name: 'hidden' }), 1, { name: 'logit' }));
    return hb.estimator.EstimatorSpec({ mode, loss, trainOp: makeOptimizer().minimize(loss) });
  };
}

const quiet = () => new hb.estimator.RunConfig({ log: () => undefined, progressBar: false });
const sample: hb.data.Batch = {
  features: { user: BigInt64Array.of(1n, 2n, 3n, 4n), item: new hb.Ragged(BigInt64Array.of(5n, 6n, 7n, 8n, 9n, 10n, 11n, 12n), Int32Array.of(0, 2, 4, 6, 8)) },
  labels: Float32Array.of(0, 1, 0, 1),
};

describe('hb.estimator.memoryPlan', () => {
  test('counts parameters, slots, dynamic rows and dense variables without allocating anything', async () => {
    const user = fc.embeddingColumn(fc.categoricalColumnWithIdentity('user', 1000), 8);
    const item = fc.embeddingColumn(fc.categoricalColumnWithIdentity('item'), 4);
    const estimator = new hb.estimator.Estimator({ modelFn: modelOf([user, item], () => new hb.train.AdamOptimizer({ lazy: true })), config: quiet() });
    const plan = await hb.estimator.memoryPlan(estimator, sample);
    expect(user.embeddingTable.isMade).toBe(false);
    expect(item.embeddingTable.isMade).toBe(false);
    expect(plan.batchSize).toBe(4);
    const byName = new Map(plan.tables.map((t) => [t.name, t]));
    // Adam: two slots the shape of the rows.
    expect(byName.get('user_embedding/embedding_weights')).toMatchObject({ kind: 'fixed', placement: 'local', device: 'cpu', rows: 1000, dim: 8, paramBytes: 1000 * 8 * 4, slotBytes: 2 * 1000 * 8 * 4, hashBytes: 0, exchangeBytes: 0 });
    expect(byName.get('user_embedding/embedding_weights')!.slots).toEqual(['user_embedding/embedding_weights/Adam', 'user_embedding/embedding_weights/Adam_1']);
    // A dynamic table has no rows yet; each new one costs its values, slots and bookkeeping.
    const dynamic = byName.get('item_embedding/embedding_weights')!;
    expect(dynamic).toMatchObject({ kind: 'dynamic', rows: 0, paramBytes: 0 });
    expect(dynamic.bytesPerNewRow).toBeGreaterThan(4 * 4 + 2 * 4 * 4);
    // Dense: hidden [12, 8] + [8], logit [8, 1] + [1], each with Adam's two slots.
    const denseParams = (12 * 8 + 8 + 8 + 1) * 4;
    expect(plan.dense).toEqual({ variables: 4, paramBytes: denseParams, slotBytes: 2 * denseParams, device: 'cpu' });
    expect(plan.devices).toHaveLength(1);
    expect(plan.devices[0]).toMatchObject({ device: 'cpu', paramBytes: 1000 * 8 * 4 + denseParams, exchangeBytes: 0 });
    expect(plan.devices[0].freeBytes).toBeGreaterThan(0);
    expect(plan.problems).toEqual([]);
    expect(hb.estimator.formatMemoryPlan(plan)).toMatch(/table 'user_embedding\/embedding_weights' \(fixed, local, cpu\): 1000 x 8, parameters 31\.3 KiB/);
    // Training after the plan makes the real tables, once, and the plan changed nothing.
    await estimator.train(() => [sample], { maxSteps: 1 });
    expect(user.embeddingTable.isMade).toBe(true);
    expect(user.embeddingTable.slots.size).toBe(2);
    expect((item.embeddingTable.stats() as hb.DynamicTableStats).rows).toBe(8);
  });

  test('training refuses to start, before allocating, when a fixed table cannot fit', async () => {
    const huge = fc.embeddingColumn(fc.categoricalColumnWithIdentity('user', 2 ** 40), 64);
    const lines: string[] = [];
    const estimator = new hb.estimator.Estimator({
      modelFn: modelOf([huge], () => new hb.train.AdagradOptimizer({ learningRate: 0.1 })),
      config: new hb.estimator.RunConfig({ log: (line) => lines.push(line), progressBar: false }),
    });
    await expect(estimator.train(() => [sample], { maxSteps: 1 })).rejects.toThrow(
      /embedding table 'user_embedding\/embedding_weights' \(1099511627776 x 64\) needs 262144\.00 GiB on cpu; .*more than the [0-9.]+ GiB free when training started, so training does not start\. hb\.estimator\.memoryPlan/,
    );
    expect(huge.embeddingTable.isMade).toBe(false);
    // The plan says the same, without trying.
    const plan = await hb.estimator.memoryPlan(estimator, sample);
    expect(plan.problems[0]).toMatch(/^cpu needs [0-9.]+ GiB but has [0-9.]+ GiB free \(largest tables: 'user_embedding\/embedding_weights' 524288\.00 GiB\)/);
  });

  test('a model that fits logs what it holds per device before its first step; a slot past the free memory stops it too', async () => {
    const lines: string[] = [];
    const user = fc.embeddingColumn(fc.categoricalColumnWithIdentity('user', 1000), 8);
    const estimator = new hb.estimator.Estimator({
      modelFn: modelOf([user], () => new hb.train.AdagradOptimizer({ learningRate: 0.1 })),
      config: new hb.estimator.RunConfig({ log: (line) => lines.push(line), progressBar: false }),
    });
    await estimator.train(() => [sample], { maxSteps: 1 });
    expect(lines.filter((l) => l.startsWith('memory: '))).toEqual([expect.stringMatching(/^memory: cpu 6[0-9.]+ KiB of [0-9.]+ GiB free \(parameters 3[0-9.]+ KiB, slots 3[0-9.]+ KiB, hash 0\.0 KiB, exchange 0\.0 KiB\/step\)$/)]);
    // Rows that fit, then a slot that does not (a budget of 1000 bytes, rows of 800): the
    // slot is refused before it is allocated, naming it.
    const table = new EmbeddingTable({ name: 'budgeted', rows: 50, dim: 4, dtype: 'float32', initializer: hb.initializers.zeros(), trainable: true }, localPlacement('cpu'));
    await expect(
      withMemoryBudget(
        () => 1000,
        async () => {
          table.variableOn();
          table.createSlot('budgeted/Adagrad', 0.1, false);
        },
      ),
    ).rejects.toThrow(/^optimizer slot 'budgeted\/Adagrad' needs 0\.8 KiB on cpu; with the tables made before it the model needs 1\.6 KiB there, more than the 1\.0 KiB free/);
    expect(table.isMade).toBe(true);
    expect(table.slots.size).toBe(0);
  });

  test('a plan leaves an optimizer made outside the modelFn as it was: training after it makes real slots', async () => {
    const optimizer = new hb.train.AdagradOptimizer({ learningRate: 0.1 });
    const user = fc.embeddingColumn(fc.categoricalColumnWithIdentity('user', 10), 2);
    const estimator = new hb.estimator.Estimator({ modelFn: modelOf([user], () => optimizer), config: quiet() });
    const batch = { features: { user: BigInt64Array.of(1n, 2n) }, labels: Float32Array.of(0, 1) };
    const plan = await hb.estimator.memoryPlan(estimator, batch);
    expect(plan.tables.map((t) => t.name)).toEqual(['user_embedding/embedding_weights']);
    await estimator.train(() => [batch, batch], { maxSteps: 2 });
    expect(estimator.globalStep).toBe(2);
    const slot = user.embeddingTable.slots.get('user_embedding/embedding_weights/Adagrad')!;
    expect(Array.from((await slot.data()) as Float32Array).some((x) => x > 0.1)).toBe(true);
  });

  test('a fixed and a dynamic table of one name in one model are refused, not one read as the other', async () => {
    const fixed = fc.embeddingColumn(fc.categoricalColumnWithIdentity('user', 100), 4);
    const dynamic = fc.embeddingColumn(fc.categoricalColumnWithIdentity('user'), 4);
    // Two layers (DenseFeatures refuses one column name twice in one layer).
    const modelFn: hb.estimator.ModelFn = (features, labels, mode) => {
      const x = hb.math.concat([fc.DenseFeatures([fixed])(features), fc.DenseFeatures([dynamic])(features)], 1);
      const loss = hb.losses.sigmoidCrossEntropy(labels, hb.layers.dense(x, 1));
      return hb.estimator.EstimatorSpec({ mode, loss, trainOp: new hb.train.AdagradOptimizer({ learningRate: 0.1 }).minimize(loss) });
    };
    const estimator = new hb.estimator.Estimator({ modelFn, config: quiet() });
    const batch = { features: { user: BigInt64Array.of(1n, 2n) }, labels: Float32Array.of(0, 1) };
    await expect(hb.estimator.memoryPlan(estimator, batch)).rejects.toThrow(/two embedding tables are named 'user_embedding\/embedding_weights' in one model \(one fixed, one dynamic\)/);
    await expect(estimator.train(() => [batch], { maxSteps: 1 })).rejects.toThrow(/one fixed, one dynamic/);
  });

  test('bad arguments are refused', async () => {
    await expect(hb.estimator.memoryPlan({} as never, sample)).rejects.toThrow(/estimator must be an hb.estimator.Estimator/);
    const estimator = new hb.estimator.Estimator({ modelFn: modelOf([], () => new hb.train.AdagradOptimizer({ learningRate: 0.1 })), config: quiet() });
    await expect(hb.estimator.memoryPlan(estimator, null as never)).rejects.toThrow(/sampleBatch must be a batch/);
  });
});

describe('npx hb-ts plan', () => {
  const cli = path.resolve(__dirname, '..', 'bin', 'hb-ts.js');
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-plan-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const run = (args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, HB_DEVICE: 'cpu' } });

  test('prints the plan of a config and exits 0 when it fits, 2 when it does not', () => {
    const fits = run(['plan', path.resolve(__dirname, '..', 'examples', 'criteo_tsv.json')]);
    expect(fits.stderr).toBe('');
    expect(fits.status).toBe(0);
    expect(fits.stdout).toMatch(/^memory plan, a step of 20 examples:$/m);
    expect(fits.stdout).toMatch(/table 'C3_embedding\/embedding_weights' \(dynamic, local, cpu\): 0 rows now, \d+ B per new row/);
    const file = path.join(dir, 'huge.json');
    fs.writeFileSync(file, JSON.stringify({ trainFiles: path.resolve(__dirname, 'fixtures', 'criteo_kaggle_sample.tsv'), model: 'dcn', features: { I1: { type: 'numeric' }, C1: { type: 'hashed', hashBucketSize: 4e11 } } }));
    const huge = run(['plan', file]);
    expect(huge.status).toBe(2);
    expect(huge.stdout).toMatch(/-- DOES NOT FIT/);
    expect(huge.stdout).toMatch(/does not fit: cpu needs/);
  });
});
