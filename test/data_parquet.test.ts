// hb.data.Dataset.fromParquet on files written by a Parquet library (parquet-wasm, from
// apache-arrow tables): every supported type, row groups, partitions and errors.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as arrow from 'apache-arrow';
import * as parquet from 'parquet-wasm/node';
import * as hb from '../lib';
import { collect, rowsOf, writeParquetFile } from './support/data';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-data-parquet-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function writeParquet(name: string, columns: Record<string, arrow.Vector>, rowGroupRows: number): string {
  return writeParquetFile(path.join(dir, name), columns, rowGroupRows, parquet.Compression.SNAPPY);
}

const list = (type: arrow.DataType) => new arrow.List(new arrow.Field('item', type, true));

/** n rows of every type hb.data reads, with nulls, and the values each should come back as. */
function everyType(n: number) {
  const source = {
    label: Array.from({ length: n }, (_, i) => (i % 3 === 0 ? 1 : 0)),
    i32: Array.from({ length: n }, (_, i) => (i % 5 === 4 ? null : i * 7 - 100)),
    i64: Array.from({ length: n }, (_, i) => (i % 6 === 5 ? null : BigInt(i) * 1_000_000_007n)),
    f32: Array.from({ length: n }, (_, i) => (i % 4 === 3 ? null : i / 4)),
    f64: Array.from({ length: n }, (_, i) => i * 1e-3),
    str: Array.from({ length: n }, (_, i) => (i % 7 === 6 ? null : `s${i}-é`)),
    bin: Array.from({ length: n }, (_, i) => Uint8Array.from([i & 255, 65, 66])),
    dict: Array.from({ length: n }, (_, i) => (i % 9 === 8 ? null : ['red', 'green', 'blue'][i % 3])),
    ids: Array.from({ length: n }, (_, i) => (i % 8 === 7 ? null : Array.from({ length: i % 4 }, (_, k) => BigInt(i * 10 + k)))),
    small: Array.from({ length: n }, (_, i) => [i, 0 - i]),
    fl: Array.from({ length: n }, (_, i) => Array.from({ length: i % 3 }, (_, k) => i + k / 2)),
    tags: Array.from({ length: n }, (_, i) => (i % 5 === 0 ? [] : [`t${i % 4}`, i % 2 ? null : 'x'])),
  };
  const columns = {
    label: arrow.vectorFromArray(source.label, new arrow.Float32()),
    i32: arrow.vectorFromArray(source.i32, new arrow.Int32()),
    i64: arrow.vectorFromArray(source.i64, new arrow.Int64()),
    f32: arrow.vectorFromArray(source.f32, new arrow.Float32()),
    f64: arrow.vectorFromArray(source.f64, new arrow.Float64()),
    str: arrow.vectorFromArray(source.str, new arrow.Utf8()),
    bin: arrow.vectorFromArray(source.bin, new arrow.Binary()),
    dict: arrow.vectorFromArray(source.dict, new arrow.Dictionary(new arrow.Utf8(), new arrow.Int32())),
    ids: arrow.vectorFromArray(source.ids, list(new arrow.Int64())),
    small: arrow.vectorFromArray(source.small, new arrow.FixedSizeList(2, new arrow.Field('item', new arrow.Int32(), true))),
    fl: arrow.vectorFromArray(source.fl, list(new arrow.Float32())),
    tags: arrow.vectorFromArray(source.tags, list(new arrow.Utf8())),
  };
  const expected = source.label.map((label, i) => ({
    label,
    i32: source.i32[i] ?? -1, // the test's default for i32
    i64: source.i64[i] ?? 0n,
    f32: source.f32[i] ?? 0,
    f64: source.f64[i],
    str: source.str[i],
    bin: new TextDecoder().decode(source.bin[i]),
    dict: source.dict[i],
    ids: source.ids[i] ?? [], // a missing list is empty
    small: source.small[i],
    fl: source.fl[i].map((v) => Math.fround(v)),
    tags: source.tags[i].filter((t) => t !== null), // a missing element inside a list is dropped
  }));
  return { columns, expected };
}

describe('Dataset.fromParquet', () => {
  test('round trip of every type, over several row groups, in batches', async () => {
    const { columns, expected } = everyType(250);
    const file = writeParquet('types.parquet', columns, 60);
    const ds = hb.data.Dataset.fromParquet(file, { labelField: 'label', defaults: { i32: -1 }, numWorkers: 2 }).batch(64);
    const batches = await collect(ds);
    expect(batches.map((b) => (b.labels as Float32Array).length)).toEqual([64, 64, 64, 58]);
    const f = batches[0].features;
    expect(batches[0].labels).toBeInstanceOf(Float32Array);
    expect(f.i32).toBeInstanceOf(Int32Array);
    expect(f.i64).toBeInstanceOf(BigInt64Array);
    expect(f.f32).toBeInstanceOf(Float32Array);
    expect(f.f64).toBeInstanceOf(Float64Array);
    expect(f.str).toBeInstanceOf(hb.StringColumn);
    expect(f.bin).toBeInstanceOf(hb.StringColumn);
    expect(f.dict).toBeInstanceOf(hb.StringColumn);
    expect(f.ids).toBeInstanceOf(hb.Ragged);
    expect((f.ids as hb.Ragged).values).toBeInstanceOf(BigInt64Array);
    expect(f.small).toBeInstanceOf(hb.Ragged);
    expect((f.small as hb.Ragged).values).toBeInstanceOf(Int32Array);
    expect(f.fl).toBeInstanceOf(hb.data.ListColumn);
    expect(f.tags).toBeInstanceOf(hb.data.ListColumn);
    expect((f.str as hb.StringColumn).isMissing(6)).toBe(true);
    expect(rowsOf(batches)).toEqual(expected);
    expect(ds.stats.rows).toBe(250);
    expect(ds.skipped).toBe(0);
  });

  test('fields pick columns; several label fields give a record of labels', async () => {
    const { columns, expected } = everyType(40);
    const file = writeParquet('fields.parquet', columns, 16);
    const [batch] = await collect(hb.data.Dataset.fromParquet([file], { fields: ['str', 'ids'], labelField: ['label', 'f64'] }).batch(100));
    expect(Object.keys(batch.features)).toEqual(['str', 'ids']);
    const labels = batch.labels as Record<string, hb.data.Column>;
    expect(Object.keys(labels).sort()).toEqual(['f64', 'label']);
    expect(Array.from(labels.f64 as Float64Array)).toEqual(expected.map((e) => e.f64));
    expect((batch.features.str as hb.StringColumn).toArray()).toEqual(expected.map((e) => e.str));
    expect((batch.features.ids as hb.Ragged).toArray()).toEqual(expected.map((e) => e.ids));
  });

  test('the order does not depend on the number of threads', async () => {
    const n = 1000;
    const file = writeParquet('order.parquet', { x: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => i)) }, 37);
    for (const numWorkers of [1, 2, 4]) {
      const batches = await collect(hb.data.Dataset.fromParquet(file, { numWorkers }).batch(128));
      const xs = batches.flatMap((b) => Array.from(b.features.x as Int32Array));
      expect(xs).toEqual(Array.from({ length: n }, (_, i) => i));
    }
  });

  test('partitions split the row groups of one file, and of many files: every row exactly once', async () => {
    const single = writeParquet('one.parquet', { x: arrow.vectorFromArray(Int32Array.from({ length: 1000 }, (_, i) => i)) }, 100);
    const many = [0, 1, 2, 3, 4].map((f) =>
      writeParquet(`many${f}.parquet`, { x: arrow.vectorFromArray(Int32Array.from({ length: 150 }, (_, i) => 1000 + f * 150 + i)) }, 50),
    );
    for (const [files, total] of [[[single], 1000], [many, 750], [[single, ...many], 1750]] as Array<[string[], number]>) {
      for (const partitionCount of [2, 3]) {
        const seen: number[] = [];
        for (let partitionIndex = 0; partitionIndex < partitionCount; partitionIndex++) {
          const part = await collect(hb.data.Dataset.fromParquet(files, { partitionCount, partitionIndex, numWorkers: 2 }).batch(64));
          const xs = part.flatMap((b) => Array.from(b.features.x as Int32Array));
          expect(xs.length).toBeGreaterThan(0);
          seen.push(...xs);
        }
        expect(seen.length).toBe(total);
        expect(new Set(seen).size).toBe(total);
      }
    }
  });

  test('a file rewritten between two passes of one dataset is read anew by the threads kept', async () => {
    // The reader threads, and the files they opened, are kept between passes. Before, the
    // second pass planned the old row groups and could not read the changed file.
    const xs = (n: number, from: number) => ({ x: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => from + i)) });
    const file = writeParquet('rewritten.parquet', xs(300, 0), 100);
    const ds = hb.data.Dataset.fromParquet(file, { numWorkers: 2 }).batch(64);
    const values = async () => (await collect(ds)).flatMap((b) => Array.from(b.features.x as Int32Array));
    expect(await values()).toEqual(Array.from({ length: 300 }, (_, i) => i));
    writeParquet('rewritten.parquet', xs(500, 1000), 50);
    expect(await values()).toEqual(Array.from({ length: 500 }, (_, i) => 1000 + i));
  });

  test('a missing file is an Error naming it', async () => {
    const missing = path.join(dir, 'missing.parquet');
    await expect(collect(hb.data.Dataset.fromParquet(missing))).rejects.toThrow(/Dataset\.fromParquet: cannot open .*missing\.parquet: no such file$/);
  });

  test('a column that does not exist is an Error naming the column and the file', async () => {
    const file = writeParquet('cols.parquet', { a: arrow.vectorFromArray(Int32Array.from([1, 2])) }, 10);
    await expect(collect(hb.data.Dataset.fromParquet(file, { fields: ['a', 'nope'] }))).rejects.toThrow(/column 'nope' is not in .*cols\.parquet \(its columns: a\)/);
    await expect(collect(hb.data.Dataset.fromParquet(file, { labelField: 'click' }))).rejects.toThrow(/'click'/);
  });

  test('uint64 ids below 2^63 read as int64; one of 2^63 or more is an Error naming the column, not a negative id', async () => {
    const fits = writeParquet('u64.parquet', { id: arrow.makeVector(BigUint64Array.from([0n, 5n, 2n ** 63n - 1n])) }, 10);
    expect(rowsOf(await collect(hb.data.Dataset.fromParquet(fits))).map((r) => r.id)).toEqual([0n, 5n, 2n ** 63n - 1n]);
    const big = writeParquet('u64big.parquet', { id: arrow.makeVector(BigUint64Array.from([1n, 2n ** 63n + 7n, 3n])) }, 10);
    await expect(collect(hb.data.Dataset.fromParquet(big))).rejects.toThrow(/column 'id' holds the uint64 value 9223372036854775815 at row 1 of its row group, beyond int64 \(ids must be below 2\^63\)/);
  });

  test('partitions take equal spans of the rows, cutting row groups (a file of one row group too); only more partitions than rows leave one empty', async () => {
    const one = writeParquet('one_group.parquet', { x: arrow.vectorFromArray(Int32Array.from({ length: 1000 }, (_, i) => i)) }, 1000);
    const threes = writeParquet('groups_of_300.parquet', { x: arrow.vectorFromArray(Int32Array.from({ length: 1000 }, (_, i) => i)) }, 300);
    // Strings and lists are cut too: a row group's rows split between partitions keep their values.
    const mixed = writeParquet('mixed.parquet', {
      x: arrow.vectorFromArray(Int32Array.from({ length: 50 }, (_, i) => i)),
      s: arrow.vectorFromArray(Array.from({ length: 50 }, (_, i) => `s${i}`.repeat(1 + (i % 3)))),
    }, 50);
    const shares = async (file: string, partitionCount: number) => {
      const parts: Array<Array<Record<string, unknown>>> = [];
      for (let partitionIndex = 0; partitionIndex < partitionCount; partitionIndex++) {
        parts.push(rowsOf(await collect(hb.data.Dataset.fromParquet(file, { partitionCount, partitionIndex, numWorkers: 2 }).batch(64))));
      }
      return parts;
    };
    for (const file of [one, threes]) {
      for (const partitionCount of [2, 3, 4]) {
        const parts = await shares(file, partitionCount);
        const sizes = parts.map((p) => p.length);
        // Before: one group went whole to partition 0 (the others threw), and groups of 300
        // between 4 gave 300, 300, 300, 100.
        expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
        expect(parts.flat().map((r) => r.x)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
      }
    }
    const mixedParts = await shares(mixed, 3);
    expect(mixedParts.map((p) => p.length)).toEqual([17, 17, 16]);
    expect(mixedParts.flat().map((r) => r.s)).toEqual(Array.from({ length: 50 }, (_, i) => `s${i}`.repeat(1 + (i % 3))));
    // Every type (strings with nulls, dictionaries, lists of ids, floats and strings) cut
    // inside row groups of 60 reads back as the whole does.
    const { columns, expected } = everyType(250);
    const types = writeParquet('types_split.parquet', columns, 60);
    const typeParts: Array<Array<Record<string, unknown>>> = [];
    for (let partitionIndex = 0; partitionIndex < 3; partitionIndex++) {
      typeParts.push(rowsOf(await collect(hb.data.Dataset.fromParquet(types, { labelField: 'label', defaults: { i32: -1 }, partitionCount: 3, partitionIndex }).batch(64))));
    }
    expect(typeParts.map((p) => p.length)).toEqual([84, 83, 83]);
    expect(typeParts.flat()).toEqual(expected);
    const tiny = writeParquet('two_rows.parquet', { x: arrow.vectorFromArray(Int32Array.from([0, 1])) }, 10);
    expect(rowsOf(await collect(hb.data.Dataset.fromParquet(tiny, { partitionCount: 3, partitionIndex: 1 }))).map((r) => r.x)).toEqual([1]);
    await expect(collect(hb.data.Dataset.fromParquet(tiny, { partitionCount: 3, partitionIndex: 2 }))).rejects.toThrow(
      'hb.data: partition 2 of 3 gets no rows: the input has only 2 rows to share; use at most 2 partitions',
    );
  });

  test('a column of a type hb.data does not read is an Error naming it', async () => {
    const file = writeParquet('ts.parquet', { when: arrow.vectorFromArray([new Date(0), new Date(1000)], new arrow.TimestampMillisecond()) }, 10);
    await expect(collect(hb.data.Dataset.fromParquet(file))).rejects.toThrow(/column 'when' of .*ts\.parquet has type Timestamp/);
  });

  test('a file that is not Parquet is an Error naming it; skipCorrupted skips it and counts it', async () => {
    const junk = path.join(dir, 'junk.parquet');
    fs.writeFileSync(junk, Buffer.from('this is not a parquet file at all, just some text to fill the bytes'));
    const good = writeParquet('good.parquet', { x: arrow.vectorFromArray(Int32Array.from([1, 2, 3])) }, 10);
    await expect(collect(hb.data.Dataset.fromParquet([good, junk]))).rejects.toThrow(/junk\.parquet is not a readable Parquet file/);
    const ds = hb.data.Dataset.fromParquet([good, junk], { skipCorrupted: true });
    const rows = rowsOf(await collect(ds));
    expect(rows.map((r) => r.x)).toEqual([1, 2, 3]);
    expect(ds.stats.skippedFiles).toBe(1);
    expect(ds.stats.messages[0]).toMatch(/junk\.parquet/);
  });

  test('a corrupt row group is an Error naming the file and the rows; skipCorrupted skips its rows and counts them', async () => {
    const n = 2000;
    const text = Array.from({ length: n }, (_, i) => `value-${(i * 2654435761) >>> 0}-${i}`);
    const file = writeParquet('corrupt.parquet', { s: arrow.vectorFromArray(text, new arrow.Utf8()), i: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => i)) }, 1000);
    const bytes = fs.readFileSync(file);
    // Row group 0's column chunks come first: overwrite bytes inside them.
    for (let k = 200; k < 2200; k++) bytes[k] = (k * 37) & 255;
    fs.writeFileSync(file, bytes);
    await expect(collect(hb.data.Dataset.fromParquet(file))).rejects.toThrow(/corrupt\.parquet, row group 0 \(rows 0\.\.999\)/);
    const ds = hb.data.Dataset.fromParquet(file, { skipCorrupted: true });
    const rows = rowsOf(await collect(ds.batch(500)));
    expect(ds.skipped).toBe(1000);
    expect(rows.map((r) => r.i)).toEqual(Array.from({ length: 1000 }, (_, i) => 1000 + i));
  });
});
