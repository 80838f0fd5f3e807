// hb.data.Dataset.synthetic: determinism, the power-law id distribution, hotness, and
// labels that a model can learn.
import * as hb from '../lib';
import { native } from '../lib/native';
import type { SyntheticSpec } from '../lib/data/synthetic_model';
import { collect, rowsOf } from './support/data';
import { referenceRows } from './support/synthetic_reference';

function concatIds(batches: hb.data.Batch[], name: string): { ids: number[]; lengths: number[] } {
  const ids: number[] = [];
  const lengths: number[] = [];
  for (const b of batches) {
    const r = b.features[name] as hb.Ragged;
    for (const v of r.values as BigInt64Array) ids.push(Number(v));
    for (let i = 0; i < r.nrows; i++) lengths.push(r.rowSplits[i + 1] - r.rowSplits[i]);
  }
  return { ids, lengths };
}

/** Area under the ROC curve by ranks (ties averaged). */
function auc(scores: ArrayLike<number>, labels: ArrayLike<number>): number {
  const order = Array.from({ length: scores.length }, (_, i) => i).sort((a, b) => scores[a] - scores[b]);
  let positives = 0;
  let rankSum = 0;
  for (let k = 0; k < order.length; ) {
    let end = k;
    while (end + 1 < order.length && scores[order[end + 1]] === scores[order[k]]) end++;
    const rank = (k + end) / 2 + 1;
    for (let j = k; j <= end; j++) if (labels[order[j]] === 1) (positives++, (rankSum += rank));
    k = end + 1;
  }
  const negatives = order.length - positives;
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
}

const criteoLike = (seed: number, numSamples: number): hb.data.SyntheticOptions => ({
  numDense: 4,
  tables: [
    { name: 'user', vocabularySize: 50_000, hotness: 1, alpha: 1.1 },
    { name: 'item', vocabularySize: 1_000, hotness: [1, 5], alpha: 0.9 },
  ],
  numSamples,
  seed,
});

describe('Dataset.synthetic', () => {
  test('columns: dense I1..In as Float32Array, one hb.Ragged of int64 ids per table, Float32Array labels', async () => {
    const [batch] = await collect(hb.data.Dataset.synthetic(criteoLike(1, 100)).batch(100));
    expect(Object.keys(batch.features)).toEqual(['I1', 'I2', 'I3', 'I4', 'user', 'item']);
    expect(batch.features.I1).toBeInstanceOf(Float32Array);
    expect(batch.labels).toBeInstanceOf(Float32Array);
    const item = batch.features.item as hb.Ragged;
    expect(item).toBeInstanceOf(hb.Ragged);
    expect(item.values).toBeInstanceOf(BigInt64Array);
    expect(item.nrows).toBe(100);
    for (const v of item.values) expect(v >= 0n && v < 1000n).toBe(true);
    expect(new Set(batch.labels as Float32Array)).toEqual(new Set([0, 1]));
  });

  test('deterministic for a seed, whatever the threads and block sizes; another seed differs', async () => {
    const read = async (seed: number, numWorkers: number, blockRows: number) =>
      collect(hb.data.Dataset.synthetic({ ...criteoLike(seed, 3000), numWorkers, blockRows }).batch(3000));
    const [a] = await read(7, 1, 8192);
    const [b] = await read(7, 2, 333);
    const [c] = await read(8, 2, 333);
    expect(b).toEqual(a);
    expect(Array.from(c.labels as Float32Array)).not.toEqual(Array.from(a.labels as Float32Array));
    expect(Array.from((c.features.user as hb.Ragged).values as BigInt64Array)).not.toEqual(Array.from((a.features.user as hb.Ragged).values as BigInt64Array));
  });

  test('partitions get equal shares of the rows (within one), each row once, in order', async () => {
    const whole = rowsOf(await collect(hb.data.Dataset.synthetic(criteoLike(3, 10)).batch(10)));
    const parts = await Promise.all([0, 1, 2, 3].map(async (partitionIndex) => rowsOf(await collect(hb.data.Dataset.synthetic({ ...criteoLike(3, 10), partitionCount: 4, partitionIndex }).batch(10)))));
    expect(parts.map((p) => p.length)).toEqual([3, 3, 2, 2]); // 4, 4, 2, 0 dealt out in blocks before
    expect(parts.flat()).toEqual(whole);
    // Large: blocks of 8192 rows dealt out whole gave 24576 and 16384 of 40960 to 2 partitions.
    for (const [numSamples, partitionCount] of [[40960, 2], [40960, 3], [9, 4]]) {
      const sizes = await Promise.all(
        Array.from({ length: partitionCount }, async (_, partitionIndex) => {
          const ds = hb.data.Dataset.synthetic({ ...criteoLike(3, numSamples), partitionCount, partitionIndex }).batch(8192);
          return (await collect(ds)).reduce((n, b) => n + (b.labels as Float32Array).length, 0);
        }),
      );
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(numSamples);
    }
  });

  test('fixed and variable hotness', async () => {
    const batches = await collect(hb.data.Dataset.synthetic(criteoLike(3, 5000)).batch(1000));
    expect(concatIds(batches, 'user').lengths.every((n) => n === 1)).toBe(true);
    const { lengths } = concatIds(batches, 'item');
    expect(lengths.reduce((a, b) => Math.min(a, b))).toBe(1);
    expect(lengths.reduce((a, b) => Math.max(a, b))).toBe(5);
    const mean = lengths.reduce((a, b) => a + b, 0) / lengths.length;
    expect(mean).toBeGreaterThan(2.9);
    expect(mean).toBeLessThan(3.1);
  });

  test.each([
    [1.1, 100_000],
    [0.8, 100_000],
    [1.5, 20_000],
  ])('power law alpha %p over %p ids: the top 1%% of ids carry the share alpha predicts, and they are not the low ids', async (alpha, vocabularySize) => {
    const numSamples = 200_000;
    const ds = hb.data.Dataset.synthetic({ numDense: 0, tables: [{ name: 't', vocabularySize, alpha }], numSamples, seed: 11 });
    const { ids } = concatIds(await collect(ds), 't');
    expect(ids.length).toBe(numSamples);
    const counts = new Map<number, number>();
    for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
    const sorted = [...counts.entries()].sort((x, y) => y[1] - x[1]);
    const top = sorted.slice(0, vocabularySize / 100);
    const share = top.reduce((s, [, c]) => s + c, 0) / numSamples;
    const predicted = hb.data.powerLawShare(vocabularySize / 100, vocabularySize, alpha);
    expect(Math.abs(share - predicted)).toBeLessThan(0.01);
    // The hottest ids are scattered over the id range: about 1% of them fall in its lowest 1%.
    const low = top.filter(([id]) => id < vocabularySize / 100).length;
    expect(low / top.length).toBeLessThan(0.05);
    expect(sorted[0][0]).not.toBe(0);
    expect(ids.every((id) => Number.isInteger(id) && id >= 0 && id < vocabularySize)).toBe(true);
  });

  test('labels follow the planted model: its logits rank them well and the click rate matches', async () => {
    const options = criteoLike(5, 20_000);
    const [batch] = await collect(hb.data.Dataset.synthetic(options).batch(20_000));
    const logits = hb.data.plantedLogits(options, batch.features);
    const labels = batch.labels as Float32Array;
    expect(auc(logits, labels)).toBeGreaterThan(0.7);
    const rate = labels.reduce((a, b) => a + b, 0) / labels.length;
    const expected = logits.reduce((a, z) => a + 1 / (1 + Math.exp(-z)), 0) / logits.length;
    expect(Math.abs(rate - expected)).toBeLessThan(0.015);
  });

  test('a model trained on it learns: logistic regression on embeddings, through the native lookup and Adagrad', async () => {
    const options: hb.data.SyntheticOptions = {
      numDense: 0,
      tables: [
        { name: 'a', vocabularySize: 2_000, hotness: 1, alpha: 1.05 },
        { name: 'b', vocabularySize: 500, hotness: [1, 3], alpha: 0.9 },
      ],
      numSamples: 40_000,
      seed: 21,
    };
    const batchSize = 1000;
    const tables = options.tables.map((t) => hb.variable(hb.initializers.zeros(), { shape: [t.vocabularySize, 1], name: `synthetic_${t.name}` }));
    const optimizer = new hb.train.AdagradOptimizer({ learningRate: 0.5 });
    const score = async (features: hb.data.Features): Promise<Float32Array> => {
      const z = new Float32Array((features.a as hb.Ragged).nrows);
      for (let t = 0; t < tables.length; t++) {
        const out = (await (await hb.nn.embeddingLookupSparse(tables[t], features[options.tables[t].name!] as hb.Ragged, { combiner: 'mean' })).data()) as Float32Array;
        for (let i = 0; i < z.length; i++) z[i] += out[i];
      }
      return z;
    };
    const batches = await collect(hb.data.Dataset.synthetic(options).batch(batchSize));
    const train = batches.slice(0, 35);
    const held = batches.slice(35);
    const heldAuc = async () => {
      const scores: number[] = [];
      const labels: number[] = [];
      for (const b of held) {
        scores.push(...(await score(b.features)));
        labels.push(...(b.labels as Float32Array));
      }
      return auc(scores, labels);
    };
    expect(await heldAuc()).toBeCloseTo(0.5, 5); // all-zero weights: every score ties
    for (let epoch = 0; epoch < 2; epoch++) {
      for (const b of train) {
        const z = await score(b.features);
        const labels = b.labels as Float32Array;
        // d(mean log loss)/d logit = (sigmoid(z) - y) / batch
        const upstream = hb.tensor(Float32Array.from(z, (v, i) => (1 / (1 + Math.exp(-v)) - labels[i]) / z.length), [z.length, 1]);
        for (let t = 0; t < tables.length; t++) {
          const grad = await hb.nn.embeddingLookupSparseGrad(tables[t], b.features[options.tables[t].name!] as hb.Ragged, upstream, { combiner: 'mean' });
          await optimizer.applyGradients([[grad, tables[t]]]);
        }
      }
    }
    const learned = await heldAuc();
    // The planted model's own logits bound what any model can reach on these rows.
    const plantedScores: number[] = [];
    const heldLabels: number[] = [];
    for (const b of held) {
      plantedScores.push(...hb.data.plantedLogits(options, b.features));
      heldLabels.push(...(b.labels as Float32Array));
    }
    const best = auc(plantedScores, heldLabels);
    expect(learned).toBeGreaterThan(0.62);
    expect(learned).toBeLessThanOrEqual(best + 0.01);
  });

  test("splits by the RANK and WORLD_SIZE hb-ts launch sets, before the job is joined; by nothing when they describe no job", async () => {
    const rows = async () => {
      let n = 0;
      const tables = [{ name: 't', vocabularySize: 10, hotness: 1 }];
      for await (const b of hb.data.Dataset.synthetic({ numDense: 1, tables, numSamples: 4096, seed: 1, blockRows: 256 }).batch(1024)) n += (b.labels as Float32Array).length;
      return n;
    };
    const saved = { RANK: process.env.RANK, WORLD_SIZE: process.env.WORLD_SIZE };
    const set = (env: Record<string, string | undefined>) => {
      for (const [k, v] of Object.entries(env)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    };
    try {
      set({ RANK: '1', WORLD_SIZE: '2' });
      expect(await rows()).toBe(2048);
      // A malformed environment (or only a scheduler's variables) splits nothing and throws nothing.
      for (const env of [{ RANK: '5', WORLD_SIZE: '2' }, { RANK: '0', WORLD_SIZE: 'x' }, { RANK: '1', WORLD_SIZE: undefined }]) {
        set(env);
        expect(await rows()).toBe(4096);
      }
    } finally {
      set(saved);
    }
  });

  test('a dataset of 2^50 rows reads its first batch at once, whole or split (its work is not listed block by block)', async () => {
    const huge = { numDense: 2, tables: [{ vocabularySize: 100 }], numSamples: 2 ** 50, seed: 3 };
    const first = async (ds: ReturnType<typeof hb.data.Dataset.synthetic>) => (await collect(ds.batch(64).take(1)))[0];
    expect((await first(hb.data.Dataset.synthetic(huge))).labels).toHaveLength(64);
    // Rows depend on their index only: the first rows of a 2^50-row set are the first rows of a small one.
    const small = rowsOf([await first(hb.data.Dataset.synthetic({ ...huge, numSamples: 64 }))]);
    expect(rowsOf([await first(hb.data.Dataset.synthetic(huge))])).toEqual(small);
    expect((await first(hb.data.Dataset.synthetic({ ...huge, partitionCount: 3, partitionIndex: 2 }))).labels).toHaveLength(64);
  });

  test('rows are those of the JS generator it replaced, bit for bit (ids, splits, dense values, labels)', () => {
    const table = (vocabularySize: number, hotness: [number, number], alpha: number) => ({ name: 't', vocabularySize, hotness, alpha });
    const specs: Array<[string, SyntheticSpec, number]> = [
      ['the main job (13 dense, 26 tables of 10000)', { numDense: 13, tables: Array.from({ length: 26 }, () => table(10_000, [1, 1], 1.1)), seed: 0 }, 0],
      ['rows past 2^32, another seed', { numDense: 13, tables: [table(10_000, [1, 1], 1.1)], seed: 4_000_000_000 }, 2 ** 40 + 3],
      ['alpha 0, 1 and 2.5; hotness [0, 3], 0 and 4', { numDense: 2, tables: [table(1000, [0, 3], 0), table(777, [0, 0], 1), table(50_000, [4, 4], 2.5)], seed: 7 }, 5],
      ['vocabularies of 1, 2, 2^40 + 7 and 2^52', { numDense: 0, tables: [table(1, [1, 2], 1.1), table(2, [1, 1], 0.5), table(2 ** 40 + 7, [2, 2], 1.05), table(2 ** 52, [1, 1], 0)], seed: 3 }, 11],
    ];
    for (const [what, spec, firstRow] of specs) {
      const n = 1500;
      const want = referenceRows(spec, firstRow, n);
      const label = new Float32Array(n);
      const dense = want.dense.map(() => new Float32Array(n));
      const splits = spec.tables.map(() => new Int32Array(n + 1));
      const ids = spec.tables.map((t) => new BigInt64Array(n * t.hotness[1]));
      native.syntheticRows(spec, firstRow, n, { label, dense, splits, ids });
      expect([what, Array.from(label)]).toEqual([what, Array.from(want.label)]);
      dense.forEach((column, j) => expect([what, j, Array.from(column)]).toEqual([what, j, Array.from(want.dense[j])]));
      splits.forEach((column, t) => {
        expect([what, t, Array.from(column)]).toEqual([what, t, Array.from(want.splits[t])]);
        expect([what, t, Array.from(ids[t].subarray(0, column[n]))]).toEqual([what, t, Array.from(want.ids[t])]);
      });
    }
  });

  test('the native generator checks its arguments before it writes', () => {
    const spec = { seed: 1, numDense: 1, tables: [{ vocabularySize: 10, hotness: [1, 2] as [number, number], alpha: 1.1 }] };
    const outputs = (n: number, idsLength = 2 * n) => ({ label: new Float32Array(n), dense: [new Float32Array(n)], splits: [new Int32Array(n + 1)], ids: [new BigInt64Array(idsLength)] });
    expect(() => native.syntheticRows(spec, 0, 8, outputs(8, 15))).toThrow(/outputs\.ids\[0\] has 15 values; the rows need 16/);
    expect(() => native.syntheticRows(spec, 0, 9, outputs(8))).toThrow(/outputs\.label has 8 values; the rows need 9/);
    expect(() => native.syntheticRows(spec, 0, 8, { ...outputs(8), dense: [] })).toThrow(/outputs\.dense must have 1 entries, got 0/);
    expect(() => native.syntheticRows(spec, 0, 8, { ...outputs(8), splits: [new Float32Array(9) as unknown as Int32Array] })).toThrow(/outputs\.splits\[0\] must be a int32 array, got float32/);
    expect(() => native.syntheticRows(spec, -1, 8, outputs(8))).toThrow(/firstRow must be an integer in \[0, /);
    expect(() => native.syntheticRows(spec, 2 ** 53 - 4, 8, outputs(8))).toThrow(/n must be an integer in \[0, 3\]/);
    expect(() => native.syntheticRows({ ...spec, tables: [{ vocabularySize: 0, hotness: [1, 1], alpha: 1 }] }, 0, 8, outputs(8))).toThrow(/spec\.tables\[0\]\.vocabularySize must be an integer in \[1, /);
    expect(() => native.syntheticRows({ ...spec, tables: [{ vocabularySize: 10, hotness: [2, 1], alpha: 1 }] }, 0, 8, outputs(8))).toThrow(/spec\.tables\[0\]\.hotness\[1\] must be an integer in \[2, /);
    expect(() => native.syntheticRows({ ...spec, tables: [{ vocabularySize: 10, hotness: [1, 2], alpha: NaN }] }, 0, 8, outputs(8))).toThrow(/spec\.tables\[0\]\.alpha must be a number >= 0/);
    expect(() => native.syntheticRows({ ...spec, tables: [{ vocabularySize: 10, hotness: [1, 2 ** 30], alpha: 1 }] }, 0, 8, outputs(8))).toThrow(/make more than 2\^31 - 1 ids/);
    const shared = { ...outputs(8), label: new Float32Array(new SharedArrayBuffer(32)) };
    expect(() => native.syntheticRows(spec, 0, 8, shared)).toThrow(/outputs\.label is backed by a SharedArrayBuffer/);
    // Outputs that share memory: the generator reads back the splits it wrote.
    const memory = new ArrayBuffer(16 * 8);
    const overlapping = { ...outputs(8), splits: [new Int32Array(memory, 0, 9)], ids: [new BigInt64Array(memory, 0, 16)] };
    expect(() => native.syntheticRows(spec, 0, 8, overlapping)).toThrow(/outputs\.splits\[0\] and outputs\.ids\[0\] share memory/);
    // An array changed by JS run while the outputs are read (a getter) is checked as it is after.
    // A resizable ArrayBuffer (ES2024; typed here, as the project's lib is older).
    const Resizable = ArrayBuffer as unknown as new (bytes: number, options: { maxByteLength: number }) => ArrayBuffer & { resize(bytes: number): void };
    const growable = new Resizable(32, { maxByteLength: 64 });
    const shrinking = { ...outputs(8), label: new Float32Array(growable), get splits() {
      growable.resize(0);
      return [new Int32Array(9)];
    } };
    expect(() => native.syntheticRows(spec, 0, 8, shrinking)).toThrow(/outputs\.label has 0 values; the rows need 8/);
    const label = new Float32Array(8);
    const detaching = { ...outputs(8), label, get ids() {
      structuredClone(label.buffer, { transfer: [label.buffer] });
      return [new BigInt64Array(16)];
    } };
    expect(() => native.syntheticRows(spec, 0, 8, detaching)).toThrow(/outputs\.label's ArrayBuffer was transferred or detached/);
  });

  test('bad options are Errors naming the option', () => {
    expect(() => hb.data.Dataset.synthetic({ numDense: 5000, tables: [{ vocabularySize: 10 }], numSamples: 10 })).toThrow(/numDense must be an integer in \[0, 4096\], got 5000/);
    expect(() => hb.data.Dataset.synthetic({ tables: [{ vocabularySize: 10, hotness: 300_000 }], numSamples: 10 })).toThrow(
      /tables\[0\]\.hotness up to 300000 makes up to 2457600000 ids in a block of 8192 rows \(blockRows\), over 2\^31 - 1/,
    );
    expect(() => hb.data.Dataset.synthetic({ tables: [{ vocabularySize: 10 }], numSamples: 2 ** 53 })).toThrow(/numSamples must be a non-negative integer up to 2\^53 - 1/);
    expect(() => hb.data.Dataset.synthetic({ tables: [{ vocabularySize: 0 }], numSamples: 10 })).toThrow(/tables\[0\]\.vocabularySize/);
    expect(() => hb.data.Dataset.synthetic({ tables: [{ vocabularySize: 10, hotness: [3, 1] }], numSamples: 10 })).toThrow(/hotness/);
    expect(() => hb.data.Dataset.synthetic({ tables: [{ vocabularySize: 10, alpha: -1 }], numSamples: 10 })).toThrow(/alpha/);
    expect(() => hb.data.Dataset.synthetic({ tables: [], numSamples: -1 })).toThrow(/numSamples/);
    expect(() => hb.data.Dataset.synthetic({ tables: [], numSamples: 1, partitionCount: 2, partitionIndex: 2 })).toThrow(/partitionIndex 2/);
  });
});
