// hb.data pipeline operations: batch, rebatch, shuffle, take, prefetch; and batches
// going to native code as they are.
import * as path from 'path';
import * as hb from '../lib';
import { readerThreadsStartedSoFar } from '../lib/data/pool';
import { stopsSettled } from '../lib/data/source';
import { collect, rowsOf } from './support/data';

// A small synthetic source: row identity is recoverable from its ids.
const source = (numSamples: number, extra: Partial<hb.data.SyntheticOptions> = {}) =>
  hb.data.Dataset.synthetic({
    numDense: 2,
    tables: [
      { name: 'id', vocabularySize: 2 ** 40, hotness: 1, alpha: 0 },
      { name: 'tags', vocabularySize: 100, hotness: [0, 3] },
    ],
    numSamples,
    seed: 3,
    blockRows: 100,
    ...extra,
  });

const key = (row: Record<string, unknown>) => JSON.stringify(row, (_, v) => (typeof v === 'bigint' ? v.toString() : v));

describe('hb.data pipeline', () => {
  test('batch cuts rows exactly across blocks; dropRemainder drops the short last batch', async () => {
    const rows = rowsOf(await collect(source(1050)));
    const batches = await collect(source(1050).batch(256));
    expect(batches.map((b) => (b.labels as Float32Array).length)).toEqual([256, 256, 256, 256, 26]);
    expect(rowsOf(batches)).toEqual(rows);
    const dropped = await collect(source(1050).batch(256, { dropRemainder: true }));
    expect(dropped).toHaveLength(4);
    expect(rowsOf(dropped)).toEqual(rows.slice(0, 1024));
    const tags = batches[1].features.tags as hb.Ragged;
    expect(tags.rowSplits[0]).toBe(0);
    expect(tags.rowSplits[256]).toBe(tags.values.length);
  });

  test('rebatch changes the batch size of a batched dataset, rows unchanged', async () => {
    const rows = rowsOf(await collect(source(1000).batch(1000)));
    const rebatched = await collect(source(1000).batch(64).rebatch(300));
    expect(rebatched.map((b) => (b.labels as Float32Array).length)).toEqual([300, 300, 300, 100]);
    expect(rowsOf(rebatched)).toEqual(rows);
  });

  test('shuffle: a permutation of the rows, the same for a seed whatever the threads, another for another seed', async () => {
    const original = rowsOf(await collect(source(2000))).map(key);
    const shuffled = async (seed: number, numWorkers: number) =>
      rowsOf(await collect(source(2000, { numWorkers }).shuffle(500, { seed }).batch(128))).map(key);
    const a = await shuffled(1, 1);
    const b = await shuffled(1, 3);
    const c = await shuffled(2, 2);
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
    expect(a).not.toEqual(original);
    expect([...a].sort()).toEqual([...original].sort());
    expect([...c].sort()).toEqual([...original].sort());
    // A buffer of 500 rows moves rows by hundreds, not across the whole dataset at once.
    const firstBatch = new Set(a.slice(0, 128));
    expect(original.slice(0, 700).filter((r) => firstBatch.has(r)).length).toBe(128);
  });

  test('shuffle reshuffles each pass, and a new dataset with the same seed repeats the passes', async () => {
    const make = () => source(600).shuffle(1000, { seed: 9 }).batch(600);
    const ds = make();
    const pass1 = rowsOf(await collect(ds)).map(key);
    const pass2 = rowsOf(await collect(ds)).map(key);
    expect(pass2).not.toEqual(pass1);
    const again = make();
    expect(rowsOf(await collect(again)).map(key)).toEqual(pass1);
    expect(rowsOf(await collect(again)).map(key)).toEqual(pass2);
    const fixed = source(600).shuffle(1000, { seed: 9, reshuffleEachIteration: false }).batch(600);
    expect(rowsOf(await collect(fixed)).map(key)).toEqual(rowsOf(await collect(fixed)).map(key));
  });

  test('take stops after n batches and ends the pass (threads stop early)', async () => {
    const ds = source(1_000_000, { blockRows: 1000, numWorkers: 2 }).batch(100).take(3);
    const batches = await collect(ds);
    expect(batches).toHaveLength(3);
    expect(ds.stats.rows).toBeLessThan(100_000);
    const rows = rowsOf(await collect(source(300).batch(100)));
    expect(rowsOf(batches)).toEqual(rows);
  });

  test('prefetch yields the same batches', async () => {
    const plain = rowsOf(await collect(source(900).batch(100)));
    const prefetched = await collect(source(900).batch(100).prefetch(4));
    expect(prefetched).toHaveLength(9);
    expect(rowsOf(prefetched)).toEqual(plain);
    const early = await collect(source(900).batch(100).prefetch(3).take(2));
    expect(rowsOf(early)).toEqual(plain.slice(0, 200));
  });

  test('a dataset is an async iterable of { features, labels }, and a pass can stop with break', async () => {
    const ds = source(500).batch(50);
    let n = 0;
    for await (const { features, labels } of ds) {
      expect(features.I1).toBeInstanceOf(Float32Array);
      expect(labels).toBeInstanceOf(Float32Array);
      if (++n === 2) break;
    }
    expect(n).toBe(2);
    expect(await collect(ds)).toHaveLength(10); // a new pass after the early stop
  });

  test('columns go to native code as they are: ids to the embedding lookup, strings to hashing', async () => {
    const [batch] = await collect(
      hb.data.Dataset.synthetic({ numDense: 0, tables: [{ name: 'ids', vocabularySize: 1000, hotness: [0, 4] }], numSamples: 64, seed: 1 }).batch(64),
    );
    const table = hb.variable(hb.initializers.randomUniform({ minval: -1, maxval: 1, seed: 4 }), { shape: [1000, 4], name: 'data_pipeline_lookup' });
    const ids = batch.features.ids as hb.Ragged;
    const out = await hb.nn.embeddingLookupSparse(table, ids, { combiner: 'sum' });
    expect(out.shape).toEqual([64, 4]);
    const [criteo] = await collect(hb.data.Dataset.fromCriteoTsv(path.resolve(__dirname, 'fixtures/criteo_kaggle_sample.tsv')).batch(100));
    const c1 = criteo.features.C1 as hb.StringColumn;
    expect(c1.valid).toBeUndefined(); // C1 is never empty in the sample
    const hashed = hb.strings.toHashBucketFast(c1, 1000);
    expect(Array.from(hashed)).toEqual(Array.from(hb.strings.toHashBucketFast(c1.toArray() as string[], 1000)));
  });

  test('repeat: the passes one after another as one stream, batches across their boundary, each pass reshuffled', async () => {
    const rows = rowsOf(await collect(source(250)));
    const repeated = await collect(source(250).repeat(3).batch(100));
    expect(repeated.map((b) => (b.labels as Float32Array).length)).toEqual([100, 100, 100, 100, 100, 100, 100, 50]);
    expect(rowsOf(repeated)).toEqual([...rows, ...rows, ...rows]);
    // Without a count: as many passes as are read.
    expect(rowsOf(await collect(source(250).repeat().batch(100).take(6)))).toEqual([...rows, ...rows, ...rows].slice(0, 600));
    // A shuffle before repeat reshuffles each pass, as tf.data's does.
    const shuffled = rowsOf(await collect(source(250).shuffle(1000, { seed: 4 }).repeat(2).batch(500))).map(key);
    expect(shuffled.slice(0, 250)).not.toEqual(shuffled.slice(250));
    expect([...shuffled.slice(250)].sort()).toEqual([...shuffled.slice(0, 250)].sort());
    // Nothing repeated is nothing, and ends.
    expect(await collect(source(250).take(0).repeat())).toEqual([]);
    expect(await collect(source(250).repeat(0))).toEqual([]);
  });

  test('reader threads are kept from one pass to the next, whether it read to the end or stopped early', async () => {
    const ds = source(2000, { numWorkers: 2, blockRows: 100 }).batch(500);
    const before = readerThreadsStartedSoFar();
    const all = rowsOf(await collect(ds));
    const afterFirst = readerThreadsStartedSoFar();
    expect(afterFirst - before).toBe(2);
    await collect(ds); // the next epoch: no new threads
    await collect(ds.repeat(2));
    expect(readerThreadsStartedSoFar()).toBe(afterFirst);
    // Stopped early (an evaluation of some steps): the threads stop after the chunk at
    // hand, drop what they had sent, and serve the next pass from its first row.
    for (let i = 0; i < 3; i++) {
      expect(rowsOf(await collect(ds.take(1)))).toEqual(all.slice(0, 500));
      await stopsSettled();
    }
    expect(rowsOf(await collect(ds))).toEqual(all);
    expect(readerThreadsStartedSoFar()).toBe(afterFirst);
    // A pass that starts before the stopped one's threads are back takes new ones.
    await collect(ds.take(1));
    expect(rowsOf(await collect(ds))).toEqual(all);
    await stopsSettled();
    expect(readerThreadsStartedSoFar()).toBe(afterFirst + 2);
    // A file reader stopped mid-file, then read again whole.
    const tsv = hb.data.Dataset.fromCriteoTsv(path.resolve(__dirname, 'fixtures/criteo_kaggle_sample.tsv'), { blockRows: 10, numWorkers: 1 }).batch(25);
    const whole = (await collect(tsv)).map((b) => Array.from(b.labels as Float32Array));
    const tsvThreads = readerThreadsStartedSoFar();
    expect((await collect(tsv.take(1))).map((b) => Array.from(b.labels as Float32Array))).toEqual(whole.slice(0, 1));
    await stopsSettled();
    expect((await collect(tsv)).map((b) => Array.from(b.labels as Float32Array))).toEqual(whole);
    expect(readerThreadsStartedSoFar()).toBe(tsvThreads);
    // Two passes at once do not share threads, and both read every row.
    const [a, b] = await Promise.all([collect(ds), collect(ds)]);
    expect(rowsOf(a)).toEqual(rowsOf(b));
    expect(rowsOf(a)).toHaveLength(2000);
  });

  test('bad arguments are Errors naming them', () => {
    expect(() => source(10).repeat(-1)).toThrow(/Dataset.repeat: count must be a non-negative integer or Infinity, got -1/);
    expect(() => source(10).repeat(1.5)).toThrow(/Dataset.repeat: count/);
    expect(() => source(10).repeat('2' as never)).toThrow(TypeError);
    expect(() => source(10).batch(0)).toThrow(/batchSize/);
    expect(() => source(10).shuffle(-1)).toThrow(/bufferSize/);
    expect(() => source(10).shuffle(10, { seed: 1.5 })).toThrow(/seed/);
    expect(() => source(10).take(-1)).toThrow(/count/);
    expect(() => source(10).prefetch(0)).toThrow(/bufferSize/);
    expect(() => hb.data.Dataset.fromCriteoTsv([])).toThrow(/files/);
    expect(() => hb.data.Dataset.fromParquet('x.parquet', { numWorkers: 0 })).toThrow(/numWorkers/);
    expect(() => hb.data.Dataset.fromCriteoTsv('x.tsv', { defaults: { C1: 1 } })).toThrow(/defaults\.C1/);
  });
});
