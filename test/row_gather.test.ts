// The shuffle's native blocks and row gather (lib/data/row_gather.ts over native rowBlock
// and gatherRows): every column kind hb.data makes, gathered off the JS thread, equals
// picking the rows by hand; bad blocks and picks are Errors naming the column; JS doing
// what it likes with its arrays once a block is made changes nothing; and a shuffle of
// real Criteo rows (strings with missing values) is a permutation of them.
import * as path from 'path';
import * as hb from '../lib';
import { native, NativeRowBlockColumn } from '../lib/native';
import { gatherColumns, rowBlock } from '../lib/data/row_gather';
import { collect, rowsOf } from './support/data';

const { ListColumn } = hb.data;

function strings(values: Array<string | null>): hb.StringColumn {
  const encoder = new TextEncoder();
  const parts = values.map((v) => encoder.encode(v ?? ''));
  const offsets = new Int32Array(values.length + 1);
  parts.forEach((p, i) => (offsets[i + 1] = offsets[i] + p.length));
  const bytes = new Uint8Array(offsets[values.length]);
  parts.forEach((p, i) => bytes.set(p, offsets[i]));
  const anyMissing = values.some((v) => v === null);
  return new hb.StringColumn(bytes, offsets, anyMissing ? Uint8Array.from(values, (v) => (v === null ? 0 : 1)) : undefined);
}

// Row r of a column as plain values, for comparing.
function cellOf(column: hb.data.Column, r: number): unknown {
  if (column instanceof hb.StringColumn) return column.get(r);
  if (column instanceof hb.Ragged) {
    const [s, e] = [column.rowSplits[r], column.rowSplits[r + 1]];
    return { values: Array.from(column.values.subarray(s, e) as ArrayLike<number | bigint>), weights: column.weights && Array.from(column.weights.subarray(s, e)) };
  }
  if (column instanceof ListColumn) return column.toArray()[r];
  return (column as ArrayLike<number | bigint>)[r];
}

function lengthOf(column: hb.data.Column): number {
  return column instanceof hb.Ragged || column instanceof ListColumn ? column.nrows : column.length;
}

describe('gatherRows (the shuffle\'s native gather)', () => {
  // Two blocks of each kind; the second block's strings have no missing values (no flags).
  const blocks: Record<string, hb.data.Column[]> = {
    floats: [Float32Array.of(1.5, -2, 3.25), Float32Array.of(7, 8)],
    doubles: [Float64Array.of(0.1, 0.2, 0.3), Float64Array.of(1e300, -0)],
    ints: [Int32Array.of(-1, 2, 3), Int32Array.of(40, 50)],
    bigints: [BigInt64Array.of(1n, -(2n ** 62n), 3n), BigInt64Array.of(2n ** 40n, 5n)],
    text: [strings(['a', null, 'ccc']), strings(['', 'ééé'])],
    ragged: [
      new hb.Ragged(BigInt64Array.of(1n, 2n, 3n, 4n), Int32Array.of(0, 2, 2, 4), Float32Array.of(0.5, 1, 2, 4)),
      new hb.Ragged(BigInt64Array.of(9n), Int32Array.of(0, 0, 1), Float32Array.of(3)),
    ],
    unweighted: [new hb.Ragged(Int32Array.of(5, 6), Int32Array.of(0, 1, 1, 2)), new hb.Ragged(Int32Array.of(7, 8, 9), Int32Array.of(0, 3, 3))],
    numberLists: [new ListColumn(Float32Array.of(1, 2, 3), Int32Array.of(0, 1, 3, 3)), new ListColumn(Float32Array.of(4), Int32Array.of(0, 0, 1))],
    stringLists: [new ListColumn(strings(['x', null, 'yy']), Int32Array.of(0, 2, 2, 3)), new ListColumn(strings(['z']), Int32Array.of(0, 1, 1))],
  };
  const names = Object.keys(blocks);
  const made = () => [0, 1].map((b) => rowBlock(names, names.map((n) => blocks[n][b])));

  test('every column kind equals the rows picked by hand, in any order, repeats included', async () => {
    const which = Int32Array.of(1, 0, 0, 1, 0, 0);
    const rows = Int32Array.of(1, 2, 0, 0, 1, 2);
    const out = await gatherColumns(made(), which, rows);
    names.forEach((name, c) => {
      expect(lengthOf(out[c])).toBe(6);
      for (let i = 0; i < 6; i++) expect([name, i, cellOf(out[c], i)]).toEqual([name, i, cellOf(blocks[name][which[i]], rows[i])]);
    });
    // Flags only where a block had missing values: the second text block's rows are valid.
    expect(Array.from((out[names.indexOf('text')] as hb.StringColumn).valid!)).toEqual([1, 1, 1, 1, 0, 1]);
    expect((out[names.indexOf('unweighted')] as hb.Ragged).weights).toBeUndefined();
  });

  test('a ragged column whose blocks are not all weighted drops the weights; no picks give empty columns', async () => {
    const mixed = [blocks.ragged[0], new hb.Ragged(BigInt64Array.of(4n), Int32Array.of(0, 1))].map((r) => rowBlock(['mixed'], [r]));
    const [ragged] = await gatherColumns(mixed, Int32Array.of(1, 0), Int32Array.of(0, 0));
    expect((ragged as hb.Ragged).weights).toBeUndefined();
    expect(Array.from((ragged as hb.Ragged).values as BigInt64Array)).toEqual([4n, 1n, 2n]);
    const empty = await gatherColumns(made(), new Int32Array(0), new Int32Array(0));
    empty.forEach((column) => expect(lengthOf(column)).toBe(0));
  });

  test('large blocks come back whole (arrays over native blocks)', async () => {
    const n = 50_000;
    const a = Float64Array.from({ length: n }, (_, i) => i);
    const b = Float64Array.from({ length: n }, (_, i) => -i);
    const which = Int32Array.from({ length: n }, (_, i) => i % 2);
    const rows = Int32Array.from({ length: n }, (_, i) => n - 1 - i);
    const [out] = (await gatherColumns([rowBlock(['big'], [a]), rowBlock(['big'], [b])], which, rows)) as [Float64Array];
    expect(out.length).toBe(n);
    for (let i = 0; i < n; i += 997) expect(out[i]).toBe(i % 2 ? -(n - 1 - i) : n - 1 - i);
  });

  test('strings of every length from 0 to 40 bytes, short ones copied whole-width, come back byte for byte', async () => {
    // Long enough blocks that most strings have 16 bytes after them (the kernel's
    // fixed-width copy) and the last few do not (its exact copy). A string is the first
    // i % 41 characters of one naming its block and row, so each length occurs.
    const text = (block: number, i: number) => `${block}.${i}.`.padEnd(40, String.fromCharCode(97 + (i % 26))).slice(0, i % 41);
    const sizes = [3000, 2000, 50];
    const columns = sizes.map((n, b) => strings(Array.from({ length: n }, (_, i) => text(b, i))));
    const made = columns.map((column) => rowBlock(['s'], [column]));
    const picks = 20_000;
    const which = Int32Array.from({ length: picks }, (_, i) => (i * 7919) % 3);
    const rows = Int32Array.from({ length: picks }, (_, i) => (i * 104729) % sizes[which[i]]);
    const [out] = (await gatherColumns(made, which, rows)) as [hb.StringColumn];
    expect(out.offsets.length).toBe(picks + 1);
    expect(out.bytes.length).toBe(out.offsets[picks]);
    const mismatches: string[] = [];
    for (let i = 0; i < picks; i++) {
      const expected = text(which[i], rows[i]);
      if (out.get(i) !== expected) mismatches.push(`${i}: ${out.get(i)} vs ${expected}`);
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  const spec = (over: Partial<NativeRowBlockColumn> = {}): NativeRowBlockColumn => ({
    name: 'C7', rowSplits: null, itemArrays: [Float32Array.of(1, 2, 3)], itemOffsets: null, bytes: null, ...over,
  });

  test('bad blocks are Errors naming the column when the block is made', () => {
    expect(() => native.rowBlock([spec({ rowSplits: Int32Array.of(0, 2, 1, 3) })])).toThrow(/column 'C7'.*row splits fall at 2/);
    expect(() => native.rowBlock([spec({ rowSplits: Int32Array.of(0, 2, 4) })])).toThrow(/column 'C7'.*end at 4 but it has 3/);
    expect(() => native.rowBlock([spec({ rowSplits: Int32Array.of(-1, 2) })])).toThrow(/column 'C7'.*start at -1/);
    expect(() => native.rowBlock([spec({ itemArrays: [null], itemOffsets: Int32Array.of(0, 5), bytes: new Uint8Array(2) })])).toThrow(/column 'C7'.*string offsets end at 5 but it has 2/);
    expect(() => native.rowBlock([spec({ itemArrays: [Float32Array.of(1), Int32Array.of(1, 2)] })])).toThrow(/column 'C7'.*itemArrays\[1\] has 2 values for 1 items/);
    expect(() => native.rowBlock([spec(), spec({ name: 'C9', itemArrays: [Float32Array.of(1)] })])).toThrow(/column 'C9' has 1 rows but 'C7' 3/);
    expect(() => native.rowBlock([spec({ itemArrays: [null] })])).toThrow(/column 'C7': no values/);
    expect(() => native.rowBlock([spec({ rowSplits: new Int32Array(0) })])).toThrow(/column 'C7': rowSplits is empty/);
    expect(() => native.rowBlock([spec({ itemArrays: [new Float32Array(new SharedArrayBuffer(8))] })])).toThrow(/SharedArrayBuffer/);
    const detached = new Float32Array(4);
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    expect(() => native.rowBlock([spec({ itemArrays: [detached] })])).toThrow(/detached/);
    expect(() => native.rowBlock([spec({ itemArrays: [new Uint16Array(3) as unknown as Uint8Array] })])).toThrow(/column 'C7'.*must be a Uint8Array, Int32Array/);
  });

  test('bad picks and mismatched blocks are Errors naming the column, before anything is read', async () => {
    const block = native.rowBlock([spec()]);
    expect(block.rows).toBe(3);
    await expect(native.gatherRows([block], Int32Array.of(0), Int32Array.of(3))).rejects.toThrow(/column 'C7'.*row 3 of block 0, which has 3/);
    await expect(native.gatherRows([block], Int32Array.of(1), Int32Array.of(0))).rejects.toThrow(/column 'C7'.*names block 1 of 1/);
    await expect(native.gatherRows([block], Int32Array.of(0), Int32Array.of(-1))).rejects.toThrow(/column 'C7'.*pick 0 names row -1 of block 0/);
    expect(() => native.gatherRows([block], Int32Array.of(0, 0), Int32Array.of(0))).toThrow(/which has 2 picks but rows 1/);
    expect(() => native.gatherRows([block, native.rowBlock([spec({ itemArrays: [Int32Array.of(1)] })])], Int32Array.of(0), Int32Array.of(0))).toThrow(/column 'C7' changes type between blocks/);
    expect(() => native.gatherRows([block, native.rowBlock([spec({ name: 'C8' })])], Int32Array.of(0), Int32Array.of(0))).toThrow(/column 0 is 'C8' but block 0's 'C7'/);
    expect(() => native.gatherRows([{ rows: 3 }], Int32Array.of(0), Int32Array.of(0))).toThrow(/not a row block/);
    expect(() => native.gatherRows([], Int32Array.of(), Int32Array.of())).toThrow(/no blocks/);
    await expect(gatherColumns([rowBlock(['C8'], [Float32Array.of(1)]), rowBlock(['C8'], [strings(['a'])])], Int32Array.of(0), Int32Array.of(0))).rejects.toThrow(/changes type/);
  });

  test('an item array of another type in a later block is refused, even where the first block lacks it', () => {
    const ranged = (weights: Float32Array | Float64Array | null) =>
      native.rowBlock([{ name: 'w', rowSplits: Int32Array.of(0, 2), itemArrays: [Int32Array.of(1, 2), weights], itemOffsets: null, bytes: null }]);
    const blocks = [ranged(null), ranged(Float32Array.of(1, 2)), ranged(Float64Array.of(1, 2))];
    expect(() => native.gatherRows(blocks, Int32Array.of(1), Int32Array.of(0))).toThrow(/column 'w' changes type between blocks/);
    expect(() => native.gatherRows([blocks[0], blocks[2], blocks[1]], Int32Array.of(1), Int32Array.of(0))).toThrow(/column 'w' changes type/);
  });

  test('splits and offsets need not start at 0; no picks give empty splits', async () => {
    const bytes = new TextEncoder().encode('..abcde');
    const offsets = Int32Array.of(2, 3, 5, 7);
    const spec: NativeRowBlockColumn = { name: 's', rowSplits: Int32Array.of(1, 2, 3), itemArrays: [null], itemOffsets: offsets, bytes };
    const block = native.rowBlock([spec]);
    expect(block.rows).toBe(2);
    // Row 1 is item 2 ('de', bytes 5..7), row 0 item 1 ('bc', bytes 3..5).
    const [picked] = await native.gatherRows([block], Int32Array.of(0, 0), Int32Array.of(1, 0));
    expect(Array.from(picked.rowSplits!)).toEqual([0, 1, 2]);
    expect(Array.from(picked.itemOffsets!)).toEqual([0, 2, 4]);
    expect(new TextDecoder().decode(picked.bytes!)).toBe('debc');
    const [none] = await native.gatherRows([block], new Int32Array(0), new Int32Array(0));
    expect(Array.from(none.rowSplits!)).toEqual([0]);
    expect(Array.from(none.itemOffsets!)).toEqual([0]);
    expect(none.bytes!.length).toBe(0);
  });

  test('a block released while a gather reads it is kept until the gather ends; later gathers refuse it', async () => {
    const values = Float64Array.from({ length: 30000 }, (_, i) => i * 0.5);
    const block = rowBlock(['v'], [values]);
    const rows = Int32Array.from({ length: 30000 }, (_, i) => 29999 - i);
    const gathered = gatherColumns([block], new Int32Array(30000), rows);
    native.rowBlockRelease(block.native);
    const [out] = (await gathered) as [Float64Array];
    expect(out[0]).toBe(29999 * 0.5);
    expect(out[29999]).toBe(0);
    expect(() => native.gatherRows([block.native], Int32Array.of(0), Int32Array.of(0))).toThrow(/blocks\[0\] was released/);
    expect(() => native.rowBlockRelease({ rows: 1 })).toThrow(/not a row block/);
  });

  test('arrays transferred, shrunk or dropped after the block was made change nothing', async () => {
    // A resizable ArrayBuffer (ES2024; this project's lib setting predates its types).
    type Resizable = ArrayBuffer & { resize(bytes: number): void };
    const resizable = new (ArrayBuffer as unknown as new (bytes: number, options: { maxByteLength: number }) => Resizable)(4 * 4, { maxByteLength: 64 });
    const values = new Float32Array(resizable, 0, 4);
    values.set([1, 2, 3, 4]);
    const moved = Float64Array.of(5, 6, 7, 8);
    const block = rowBlock(['a', 'b'], [values, moved]);
    const gathered = gatherColumns([block], Int32Array.of(0, 0), Int32Array.of(3, 0));
    resizable.resize(0);
    structuredClone(moved.buffer, { transfer: [moved.buffer] });
    const [a, b] = (await gathered) as [Float32Array, Float64Array];
    expect(Array.from(a)).toEqual([4, 1]);
    expect(Array.from(b)).toEqual([8, 5]);
  });

  test('shuffling real Criteo rows (strings with missing values, three reader threads) permutes them', async () => {
    const sample = path.join(__dirname, '..', '..', 'shared', 'data', 'criteo_kaggle_sample.tsv');
    const file = require('fs').existsSync(sample) ? sample : path.join(__dirname, 'fixtures', 'criteo_kaggle_sample.tsv');
    const key = (row: Record<string, unknown>) => JSON.stringify(row);
    const original = rowsOf(await collect(hb.data.Dataset.fromCriteoTsv(file).batch(64))).map(key);
    const shuffled = rowsOf(await collect(hb.data.Dataset.fromCriteoTsv(file, { numWorkers: 3, blockRows: 16 }).shuffle(100, { seed: 5 }).batch(64))).map(key);
    expect(shuffled).not.toEqual(original);
    expect([...shuffled].sort()).toEqual([...original].sort());
    expect(original.some((r) => r.includes('null'))).toBe(true);
  });
});
