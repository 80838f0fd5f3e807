// On the CPU, a compiled step runs consecutive lookups of different tables side by side,
// one per thread, and their backward and update steps too (native/exec/plan.cc). Each
// table's results must be the bits it gets when the steps run one after another
// (HB_SIDE_BY_SIDE=0, read at process start: each setting runs in a child process), and
// a step that fails among them fails the run with its own error.
import { spawnSync } from 'child_process';
import * as hb from '../lib';
import { KERNEL_REGISTRY_VERSION, native } from '../lib/native';
import { pinDevice } from './support/devices';

pinDevice('cpu');

const script = `
  const hb = require(${JSON.stringify(require.resolve('../dist'))});
  const fc = hb.featureColumn;
  const digestOf = (values) => {
    let digest = 2166136261;
    for (const bits of new Uint32Array(values.buffer, values.byteOffset, values.length)) digest = Math.imul(digest ^ bits, 16777619) >>> 0;
    return digest;
  };
  (async () => {
    hb.setDevice('cpu');
    const batch = 96;
    let seed = 7;
    const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    // Six tables: each combiner, weighted bags, a clipped one, two widths, one id or up to four a row.
    const specs = [
      { name: 'a', rows: 50, dim: 8, combiner: 'sum', most: 1 },
      { name: 'b', rows: 300, dim: 8, combiner: 'mean', most: 4 },
      { name: 'c', rows: 40, dim: 12, combiner: 'sqrtn', most: 3, weighted: true },
      { name: 'd', rows: 1000, dim: 8, combiner: 'sum', most: 2, weighted: true },
      { name: 'e', rows: 20, dim: 12, combiner: 'mean', most: 4, maxNorm: 0.5 },
      { name: 'f', rows: 500, dim: 8, combiner: 'sum', most: 1 },
    ];
    const makeBatch = (nanIn) => {
      const features = {};
      for (const s of specs) {
        const splits = [0];
        const ids = [];
        for (let r = 0; r < batch; r++) {
          const n = 1 + Math.floor(next() * s.most);
          for (let k = 0; k < n; k++) ids.push(BigInt(Math.floor(Math.pow(s.rows, next())) - 1));
          splits.push(ids.length);
        }
        features[s.name] = hb.ragged(BigInt64Array.from(ids), Int32Array.from(splits));
        if (s.weighted) {
          const weights = Float32Array.from(ids, () => 0.25 + next());
          if (nanIn === s.name) weights[5] = NaN;
          features[s.name + '_w'] = weights;
        }
      }
      const labels = Float32Array.from({ length: batch }, () => (next() < 0.3 ? 1 : 0));
      return { features, labels };
    };
    const batches = Array.from({ length: 12 }, () => makeBatch());
    batches.push(makeBatch('d'));
    const { features, labels } = await hb.train.inputs(batches);
    const columns = specs.map((s, t) => {
      let categorical = fc.categoricalColumnWithIdentity(s.name, s.rows);
      if (s.weighted) categorical = fc.weightedCategoricalColumn(categorical, s.name + '_w');
      return fc.embeddingColumn(categorical, s.dim, { combiner: s.combiner, maxNorm: s.maxNorm, initializer: hb.initializers.truncatedNormal({ stddev: 0.3, seed: t + 1 }) });
    });
    const x = fc.DenseFeatures(columns)(features);
    const logits = hb.layers.dense(x, 1, { kernelInitializer: hb.initializers.glorotUniform({ seed: 9 }) });
    const loss = hb.losses.sigmoidCrossEntropy(labels, logits);
    const trainOp = new hb.train.AdagradOptimizer({ learningRate: 0.2 }).minimize(loss);
    const sess = new hb.train.MonitoredTrainingSession({ log: () => undefined });
    const losses = [];
    const report = await hb.profile(async () => {
      for (let i = 0; i < 12; i++) losses.push((await sess.run({ trainOp, loss })).loss);
    });
    const before = await Promise.all(columns.map(async (c) => digestOf(await c.embeddingTable.variable.data())));
    let failure = null;
    try {
      await sess.run({ trainOp, loss });
    } catch (e) {
      failure = e.message;
    }
    const unchanged = (await Promise.all(columns.map(async (c) => digestOf(await c.embeddingTable.variable.data())))).every((d, t) => d === before[t]);
    const tables = await Promise.all(columns.map(async (c) => digestOf(await c.embeddingTable.variable.data())));
    const besideOthers = Object.fromEntries(report.kernels.map((k) => [k.kernel, k.besideOthers]));
    await sess.close();
    console.log(JSON.stringify({ losses, tables, failure, unchanged, besideOthers, threads: hb.backend().threads }));
  })().catch((e) => { console.error(e); process.exit(2); });`;

function runWith(sideBySide: boolean) {
  const env: NodeJS.ProcessEnv = { ...process.env, HB_DEVICE: 'cpu' };
  delete env.HB_SIDE_BY_SIDE;
  if (!sideBySide) env.HB_SIDE_BY_SIDE = '0';
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000, env });
  if (child.status !== 0) throw new Error(`HB_SIDE_BY_SIDE=${sideBySide ? 'unset' : '0'}: exit ${child.status}: ${child.stderr}`);
  return JSON.parse(child.stdout.trim());
}

describe('steps side by side (CPU plans)', () => {
  test('tables train to the bits they get one step after another; a failing step among them fails the run alone', () => {
    const together = runWith(true);
    const apart = runWith(false);
    // Six tables' lookups and their backward and update steps each ran side by side
    // (with two threads or more), and not when held apart.
    const expected = together.threads > 1 ? 6 * 12 : 0;
    expect([together.besideOthers.embedding_lookup, together.besideOthers.lookup_backward_apply]).toEqual([expected, expected]);
    expect([apart.besideOthers.embedding_lookup, apart.besideOthers.lookup_backward_apply]).toEqual([0, 0]);
    expect(together.besideOthers.matmul).toBe(0);
    expect(together.losses).toEqual(apart.losses);
    expect(together.tables).toEqual(apart.tables);
    expect(together.losses[11]).toBeLessThan(together.losses[0]);
    // The NaN weight in table d's batch: its lookup's error, before any table changed.
    for (const run of [together, apart]) {
      expect(run.failure).toMatch(/d_w.*weights\[5\] is NaN/);
      expect(run.unchanged).toBe(true);
    }
  });
});

describe('which steps run side by side', () => {
  const plan = (spec: Record<string, unknown>, params: unknown[] = []) =>
    native.planCreate({ version: KERNEL_REGISTRY_VERSION, params: [], feeds: [], steps: [], storageCount: 0, values: [], ...spec } as never, params as never);
  const sideBySide = hb.backend().threads > 1;
  const feeds = [{ name: 'ids', dtype: 'int64', shape: [-2] }, { name: 'splits', dtype: 'int32', shape: [-2] }, { name: 'dy', dtype: 'float32', shape: [-1, 1] }];
  const fed = [BigInt64Array.from([0n, 1n, 2n]), Int32Array.from([0, 1, 2, 3]), Float32Array.from([0.5, 0.25, 1])];
  const lookup = (name: string, weights: number, out: number) => ({ name, kernel: 'embedding_lookup', inputs: [0, 1, 2, weights], outputs: [out], attrs: { combiner: 'sum', maxNorm: 0 } });

  test('lookups: side by side when independent; not when one weighs its ids by the output of another', async () => {
    const table = hb.variable(Float32Array.from([1, 2, 3, 4]), { shape: [4, 1] });
    const values = [
      { kind: 'param', dtype: 'float32', shape: [4, 1], index: 0 },
      { kind: 'feed', dtype: 'int64', shape: [-2], index: 0 },
      { kind: 'feed', dtype: 'int32', shape: [-2], index: 1 },
      { kind: 'temp', dtype: 'float32', shape: [-1, 1], index: 0 },
      { kind: 'alias', dtype: 'float32', shape: [-1], index: 3 },
      { kind: 'temp', dtype: 'float32', shape: [-1, 1], index: 1 },
    ];
    const spec = { params: [{ name: 't', dtype: 'float32', shape: [4, 1] }], feeds: feeds.slice(0, 2), values, storageCount: 2 };
    for (const [steps, beside, second] of [
      [[lookup('a', -1, 3), lookup('b', 4, 5)], 0, [1, 4, 9]], // b's weights are a's output
      [[lookup('a', -1, 3), lookup('b', -1, 5)], 2, [1, 2, 3]],
    ] as const) {
      const p = plan({ ...spec, steps }, [table.handle]);
      const report = await hb.profile(() => native.planRun(p, 3, fed.slice(0, 2) as never, [], [5]));
      expect(report.kernels.map((k) => [k.kernel, k.calls, k.besideOthers])).toEqual([['embedding_lookup', 2, sideBySide ? beside : 0]]);
      expect(Array.from(report.result.outputs[0] as Float32Array)).toEqual(second);
    }
  });

  test('updates: side by side on two tables; not on two parameters over one buffer', async () => {
    const step = (t: number) => ({ name: `u${t}`, kernel: 'lookup_backward_apply', inputs: [2, 3, -1, 4], outputs: [t], attrs: { optimizer: 0, combiners: ['sum'], maxNorms: [0] } });
    const spec = {
      params: ['a', 'b'].map((name) => ({ name, dtype: 'float32', shape: [4, 1] })),
      feeds,
      values: [
        { kind: 'param', dtype: 'float32', shape: [4, 1], index: 0 },
        { kind: 'param', dtype: 'float32', shape: [4, 1], index: 1 },
        { kind: 'feed', dtype: 'int64', shape: [-2], index: 0 },
        { kind: 'feed', dtype: 'int32', shape: [-2], index: 1 },
        { kind: 'feed', dtype: 'float32', shape: [-1, 1], index: 2 },
      ],
      steps: [step(0), step(1)],
    };
    const descent = [{ rule: 'gradientDescent', learningRate: 1 }];
    const one = hb.variable(Float32Array.from([1, 2, 3, 4]), { shape: [4, 1] });
    const shared = await hb.profile(() => native.planRun(plan(spec, [one.handle, one.handle]), 3, fed as never, descent as never, []));
    expect(shared.kernels.map((k) => [k.calls, k.besideOthers])).toEqual([[2, 0]]);
    expect(Array.from((await one.data()) as Float32Array)).toEqual([0, 1.5, 1, 4]); // both updates, one after the other
    const [a, b] = [1, 2].map(() => hb.variable(Float32Array.from([1, 2, 3, 4]), { shape: [4, 1] }));
    const apart = await hb.profile(() => native.planRun(plan(spec, [a.handle, b.handle]), 3, fed as never, descent as never, []));
    expect(apart.kernels.map((k) => [k.calls, k.besideOthers])).toEqual([[2, sideBySide ? 2 : 0]]);
    for (const table of [a, b]) expect(Array.from((await table.data()) as Float32Array)).toEqual([0.5, 1.75, 2, 4]);
  });
});
