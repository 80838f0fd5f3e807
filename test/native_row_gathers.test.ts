// The input pipeline's native row gathers (lib/data/row_gather.ts over the addon):
//   - concatRows / concatRowsAsync, the batch op's cut across blocks: every column kind
//     equals the rows taken by hand, only the ranges read are checked, bad ranges and
//     mixed types are Errors naming the column;
//   - the shuffle buffer (shuffleBufferNew / Push / Drain / Release): the same order, row
//     for row, as the JS shuffle it replaced (a reference here), every kind and string
//     length through it, its errors, and arrays disturbed after a push changing nothing;
//   - through hb.data: Criteo rows shuffled are a permutation, and a consumer that moves a
//     batch's buffer away gets an Error, not a crash, where a later batch needs those rows.
import * as path from 'path';
import * as hb from '../lib';
import { native, NativeRowBlockColumn } from '../lib/native';
import { columnsOf, concatRowRanges, concatRowRangesOffThread, describeColumns } from '../lib/data/row_gather';
import { RowRandom } from './support/synthetic_reference';
import { passSeed } from '../lib/data/shuffle';
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

// Three blocks of each kind; the second block's strings have no missing values (no flags).
const kinds: Record<string, hb.data.Column[]> = {
  floats: [Float32Array.of(1.5, -2, 3.25), Float32Array.of(7, 8), Float32Array.of(9, 10, 11, 12)],
  doubles: [Float64Array.of(0.1, 0.2, 0.3), Float64Array.of(1e300, -0), Float64Array.of(4, 5, 6, 7)],
  ints: [Int32Array.of(-1, 2, 3), Int32Array.of(40, 50), Int32Array.of(6, 7, 8, 9)],
  bigints: [BigInt64Array.of(1n, -(2n ** 62n), 3n), BigInt64Array.of(2n ** 40n, 5n), BigInt64Array.of(6n, 7n, 8n, 9n)],
  text: [strings(['a', null, 'ccc']), strings(['', 'ééé']), strings(['x', 'yy', null, 'zzzz'])],
  ragged: [
    new hb.Ragged(BigInt64Array.of(1n, 2n, 3n, 4n), Int32Array.of(0, 2, 2, 4), Float32Array.of(0.5, 1, 2, 4)),
    new hb.Ragged(BigInt64Array.of(9n), Int32Array.of(0, 0, 1), Float32Array.of(3)),
    new hb.Ragged(BigInt64Array.of(5n, 6n, 7n), Int32Array.of(0, 1, 1, 2, 3), Float32Array.of(1, 1, 1)),
  ],
  unweighted: [new hb.Ragged(Int32Array.of(5, 6), Int32Array.of(0, 1, 1, 2)), new hb.Ragged(Int32Array.of(7, 8, 9), Int32Array.of(0, 3, 3)), new hb.Ragged(Int32Array.of(1), Int32Array.of(0, 0, 0, 0, 1))],
  numberLists: [new ListColumn(Float32Array.of(1, 2, 3), Int32Array.of(0, 1, 3, 3)), new ListColumn(Float32Array.of(4), Int32Array.of(0, 0, 1)), new ListColumn(Float32Array.of(5, 6), Int32Array.of(0, 2, 2, 2, 2))],
  stringLists: [
    new ListColumn(strings(['x', null, 'yy']), Int32Array.of(0, 2, 2, 3)),
    new ListColumn(strings(['z']), Int32Array.of(0, 1, 1)),
    new ListColumn(strings(['p', 'q']), Int32Array.of(0, 0, 1, 1, 2)),
  ],
};
const names = Object.keys(kinds);
const blockOf = (b: number) => names.map((n) => kinds[n][b]);

describe('concatRows (the batch op\'s cut across blocks)', () => {
  test('every column kind equals the rows taken by hand, synchronously and off the JS thread', async () => {
    const pieces = [
      { columns: blockOf(0), start: 1, count: 2 },
      { columns: blockOf(1), start: 0, count: 0 },
      { columns: blockOf(2), start: 1, count: 3 },
    ];
    const expected = (name: string) => pieces.flatMap((p, b) => Array.from({ length: p.count }, (_, i) => cellOf(kinds[name][b], p.start + i)));
    for (const out of [concatRowRanges(names, pieces), await concatRowRangesOffThread(names, pieces)]) {
      names.forEach((name, c) => {
        expect(lengthOf(out[c])).toBe(5);
        expect([name, Array.from({ length: 5 }, (_, i) => cellOf(out[c], i))]).toEqual([name, expected(name)]);
      });
      expect((out[names.indexOf('unweighted')] as hb.Ragged).weights).toBeUndefined();
      expect((out[names.indexOf('ragged')] as hb.Ragged).weights).toBeDefined();
      expect(Object.prototype.toString.call((out[names.indexOf('ints')]))).toBe('[object Int32Array]');
    }
  });

  test('weights in some blocks only come back dropped; flags only where a block had them', () => {
    const ragged = [kinds.ragged[0] as hb.Ragged, new hb.Ragged(BigInt64Array.of(4n), Int32Array.of(0, 1))];
    const [mixed] = concatRowRanges(['r'], ragged.map((r) => ({ columns: [r], start: 0, count: r.nrows })));
    expect((mixed as hb.Ragged).weights).toBeUndefined();
    expect(Array.from((mixed as hb.Ragged).values as BigInt64Array)).toEqual([1n, 2n, 3n, 4n, 4n]);
    const [noFlags] = concatRowRanges(['s'], [{ columns: [strings(['a'])], start: 0, count: 1 }, { columns: [strings(['b', 'c'])], start: 1, count: 1 }]);
    expect((noFlags as hb.StringColumn).valid).toBeUndefined();
    expect((noFlags as hb.StringColumn).toArray()).toEqual(['a', 'c']);
    const [someFlags] = concatRowRanges(['s'], [{ columns: [strings(['a'])], start: 0, count: 1 }, { columns: [strings([null, 'c'])], start: 0, count: 2 }]);
    expect(Array.from((someFlags as hb.StringColumn).valid!)).toEqual([1, 0, 1]);
  });

  const spec = (over: Partial<NativeRowBlockColumn> = {}): NativeRowBlockColumn => ({
    name: 'C7', rowSplits: null, itemArrays: [Float32Array.of(1, 2, 3)], itemOffsets: null, bytes: null, ...over,
  });
  const piece = (columns: NativeRowBlockColumn[], start = 0, count = 1) => ({ columns, start, count });

  test('only the splits and offsets a range reads are checked; those are, naming the column', async () => {
    // Splits that fall after row 2 do not matter to rows 0..2; they do to rows 1..3.
    const splits = Int32Array.of(0, 1, 2, 1);
    const values = Float32Array.of(5, 6);
    const [ok] = native.concatRows([piece([spec({ rowSplits: splits, itemArrays: [values] })], 0, 2)]);
    expect(Array.from(ok.itemArrays[0] as Float32Array)).toEqual([5, 6]);
    // Positions are the block's, not the range's.
    expect(() => native.concatRows([piece([spec({ rowSplits: splits, itemArrays: [values] })], 1, 2)])).toThrow(/concatenate rows of column 'C7': block 0's row splits fall at 3 \(2 then 1\)/);
    await expect(native.concatRowsAsync([piece([spec({ rowSplits: splits, itemArrays: [values] })], 1, 2)])).rejects.toThrow(/column 'C7'.*row splits fall/);
    expect(() => native.concatRows([piece([spec({ rowSplits: Int32Array.of(0, 2, 4) })], 0, 2)])).toThrow(/column 'C7'.*end at 4 but it has 3/);
    expect(() => native.concatRows([piece([spec({ rowSplits: Int32Array.of(-1, 2) })])])).toThrow(/column 'C7'.*start at -1/);
    expect(() => native.concatRows([piece([spec({ itemArrays: [null], itemOffsets: Int32Array.of(0, 5), bytes: new Uint8Array(2) })])])).toThrow(/column 'C7'.*string offsets end at 5 but it has 2/);
  });

  test('bad pieces are Errors naming the argument or column', () => {
    expect(() => native.concatRows([piece([spec()], 2, 2)])).toThrow(/column 'C7': piece 0 is rows 2..4 of a block of 3/);
    expect(() => native.concatRows([piece([spec()], -1)])).toThrow(/pieces\[0\]\.start must be an integer/);
    expect(() => native.concatRows([piece([spec()], 0, 1.5)])).toThrow(/pieces\[0\]\.count must be an integer/);
    expect(() => native.concatRows([])).toThrow(/no pieces/);
    expect(() => native.concatRows([null as never])).toThrow(/pieces\[0\] must be an object/);
    expect(() => native.concatRows([piece([spec({ itemArrays: [Float32Array.of(1), Int32Array.of(1, 2)] })])])).toThrow(/column 'C7'.*itemArrays\[1\] has 2 values for 1 items/);
    expect(() => native.concatRows([piece([spec(), spec({ name: 'C9', itemArrays: [Float32Array.of(1)] })])])).toThrow(/column 'C9' has 1 rows but 'C7' 3/);
    expect(() => native.concatRows([piece([spec({ itemArrays: [null] })])])).toThrow(/column 'C7': no values/);
    expect(() => native.concatRows([piece([spec({ rowSplits: new Int32Array(0) })])])).toThrow(/column 'C7': rowSplits is empty/);
    expect(() => native.concatRows([piece([spec({ itemArrays: [new Float32Array(new SharedArrayBuffer(8))] })])])).toThrow(/SharedArrayBuffer/);
    const detached = new Float32Array(4);
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    expect(() => native.concatRows([piece([spec({ itemArrays: [detached] })])])).toThrow(/column 'C7'.*detached/);
    expect(() => native.concatRows([piece([spec({ itemArrays: [new Uint16Array(3) as unknown as Uint8Array] })])])).toThrow(/column 'C7'.*must be a Uint8Array, Int32Array/);
    // Blocks of other layouts.
    expect(() => native.concatRows([piece([spec()]), piece([spec({ itemArrays: [Int32Array.of(1)] })])])).toThrow(/column 'C7' changes type between blocks/);
    expect(() => native.concatRows([piece([spec()]), piece([spec({ name: 'C8' })])])).toThrow(/column 0 is 'C8' but the first block's 'C7'/);
    // A TypeError (by name: the addon's errors come from another realm than jest's).
    let mixed: unknown;
    try {
      concatRowRanges(['C8'], [{ columns: [Float32Array.of(1)], start: 0, count: 1 }, { columns: [strings(['a'])], start: 0, count: 1 }]);
    } catch (error) {
      mixed = error;
    }
    expect([(mixed as Error).name, (mixed as Error).message]).toEqual(['TypeError', "column 'C8' changes type between blocks"]);
    // An item array of another type in a later block, even where the first block lacks it.
    const ranged = (weights: Float32Array | Float64Array | null) => piece([{ name: 'w', rowSplits: Int32Array.of(0, 2), itemArrays: [Int32Array.of(1, 2), weights], itemOffsets: null, bytes: null }]);
    expect(() => native.concatRows([ranged(null), ranged(Float32Array.of(1, 2)), ranged(Float64Array.of(1, 2))])).toThrow(/column 'w' changes type between blocks/);
  });

  test('empty pieces and blocks of zero-length arrays, and large blocks, come back whole', () => {
    const empty = [new Float32Array(0), strings([]), new hb.Ragged(new BigInt64Array(0), Int32Array.of(0))];
    const full = [Float32Array.of(1, 2), strings(['a', null]), new hb.Ragged(BigInt64Array.of(5n), Int32Array.of(0, 1, 1))];
    const out = concatRowRanges(['f', 's', 'r'], [{ columns: empty, start: 0, count: 0 }, { columns: full, start: 0, count: 0 }, { columns: full, start: 1, count: 1 }]);
    expect(out.map((column) => cellOf(column, 0))).toEqual([2, null, { values: [], weights: undefined }]);
    expect(out.map(lengthOf)).toEqual([1, 1, 1]);
    const n = 200_000;
    const a = Float64Array.from({ length: n }, (_, i) => i);
    const text = strings(Array.from({ length: n }, (_, i) => `s${i}`));
    const [values, texts] = concatRowRanges(['a', 't'], [{ columns: [a, text], start: n - 5, count: 5 }, { columns: [a, text], start: 0, count: n }]);
    expect(lengthOf(values)).toBe(n + 5);
    expect([(values as Float64Array)[4], (values as Float64Array)[5], (values as Float64Array)[n + 4]]).toEqual([n - 1, 0, n - 1]);
    expect([(texts as hb.StringColumn).get(0), (texts as hb.StringColumn).get(n + 4)]).toEqual([`s${n - 5}`, `s${n - 1}`]);
  });

  test('an array detached by a getter while the arguments are read is an Error, not a read of freed memory', () => {
    const values = Float32Array.of(1, 2, 3);
    const moved = { columns: [spec({ itemArrays: [values] })], count: 1, get start() {
      structuredClone(values.buffer, { transfer: [values.buffer as ArrayBuffer] });
      return 0;
    } };
    expect(() => native.concatRows([moved])).toThrow(/detached or shrunk while the arguments were read/);
    const flags = { name: 's', rowSplits: null, itemArrays: [Int32Array.of(1)], itemOffsets: Int32Array.of(0, 1), bytes: Uint8Array.of(97) };
    expect(() => native.concatRows([piece([flags as NativeRowBlockColumn])])).toThrow(/column 's': itemArrays\[0\] \(valid flags\) must be a Uint8Array/);
  });

  test('splits and offsets need not start at 0', () => {
    const bytes = new TextEncoder().encode('..abcde');
    const [picked] = native.concatRows([piece([{ name: 's', rowSplits: Int32Array.of(1, 2, 3), itemArrays: [null], itemOffsets: Int32Array.of(2, 3, 5, 7), bytes }], 0, 2)]);
    // Row 0 is item 1 ('bc'), row 1 item 2 ('de').
    expect(Array.from(picked.rowSplits!)).toEqual([0, 1, 2]);
    expect(Array.from(picked.itemOffsets!)).toEqual([0, 2, 4]);
    expect(new TextDecoder().decode(picked.bytes!)).toBe('bcde');
    expect(picked.itemArrays[0]).toBeNull();
  });
});

// The shuffle as it ran in JS before the buffer went native: the reference for its order.
function referenceShuffle(blockRows: number[], bufferSize: number, seed: number): Array<Array<[number, number]>> {
  const random = new RowRandom(seed, 0);
  const pick = (n: number) => Math.floor(random.next() * n);
  const buffer: Array<[number, number]> = [];
  const out: Array<Array<[number, number]>> = [];
  blockRows.forEach((rows, b) => {
    const leaving: Array<[number, number]> = [];
    for (let r = 0; r < rows; r++) {
      if (buffer.length < bufferSize) buffer.push([b, r]);
      else {
        const slot = pick(bufferSize);
        leaving.push(buffer[slot]);
        buffer[slot] = [b, r];
      }
    }
    if (leaving.length > 0) out.push(leaving);
  });
  for (let i = buffer.length - 1; i > 0; i--) {
    const j = pick(i + 1);
    [buffer[i], buffer[j]] = [buffer[j], buffer[i]];
  }
  const last = blockRows[blockRows.length - 1];
  for (let s = 0; s < buffer.length; s += last) out.push(buffer.slice(s, s + last));
  return out;
}

// The stats of the latest shuffleThrough's buffer, read before it was released.
let lastStats = { buffered: 0, heldRows: 0, compactions: 0 };

async function shuffleThrough(blocks: hb.data.Column[][], columnNames: string[], bufferSize: number, seed: number, compact = true): Promise<hb.data.Column[][]> {
  const buffer = native.shuffleBufferNew(bufferSize, seed, compact);
  const out: hb.data.Column[][] = [];
  try {
    for (const block of blocks) {
      const leaving = await native.shuffleBufferPush(buffer, describeColumns(columnNames, block));
      if (leaving !== null) out.push(columnsOf(leaving));
    }
    lastStats = native.shuffleBufferStats(buffer);
    const last = lengthOf(blocks[blocks.length - 1][0]);
    for (let rest = await native.shuffleBufferDrain(buffer, last); rest !== null; rest = await native.shuffleBufferDrain(buffer, last)) out.push(columnsOf(rest));
  } finally {
    native.shuffleBufferRelease(buffer);
  }
  return out;
}

describe('the native shuffle buffer', () => {
  test('gives the JS shuffle\'s order row for row, for buffers smaller and larger than a block and than the input', async () => {
    // Each row's value names its block and row.
    const blockRows = [7, 1, 12, 5, 30, 2, 9];
    const blocks = blockRows.map((rows, b) => [Int32Array.from({ length: rows }, (_, r) => b * 1000 + r)]);
    for (const [bufferSize, seed] of [[1, 3], [4, 7], [10, 0], [25, 2 ** 32 - 1], [1000, 99]]) {
      const out = await shuffleThrough(blocks, ['id'], bufferSize, seed);
      const expected = referenceShuffle(blockRows, bufferSize, seed).map((block) => block.map(([b, r]) => b * 1000 + r));
      expect([bufferSize, out.map(([ids]) => Array.from(ids as Int32Array))]).toEqual([bufferSize, expected]);
    }
  });

  test('a long stream (the buffer compacted again and again) keeps the order, values and missing strings', async () => {
    // 300 blocks of 1..40 rows through a 64-row buffer: its rows are moved into one block
    // of their own whenever the blocks hold more than twice them.
    let state = 7;
    const next = () => ((state = (Math.imul(state, 1103515245) + 12345) >>> 0) % 40) + 1;
    const blockRows = Array.from({ length: 300 }, next);
    const label = (b: number, r: number) => (b % 3 === 0 && r % 4 === 1 ? null : `${b}:${r}`);
    const blocks = blockRows.map((rows, b) => [
      Int32Array.from({ length: rows }, (_, r) => b * 1000 + r),
      strings(Array.from({ length: rows }, (_, r) => label(b, r))),
    ]);
    const order = referenceShuffle(blockRows, 64, 12345);
    // The same with the rows left in the blocks they came in (what compaction is measured against).
    for (const compact of [true, false]) {
      const out = await shuffleThrough(blocks, ['id', 'text'], 64, 12345, compact);
      expect(out.map(([ids]) => Array.from(ids as Int32Array))).toEqual(order.map((block) => block.map(([b, r]) => b * 1000 + r)));
      expect(out.flatMap(([, text]) => (text as hb.StringColumn).toArray())).toEqual(order.flat().map(([b, r]) => label(b, r)));
      // Compacted (often) or not at all; either way the blocks hold at most 2 buffers and a block then.
      if (compact) expect(lastStats.compactions).toBeGreaterThan(20);
      else expect(lastStats.compactions).toBe(0);
      if (compact) expect(lastStats.heldRows).toBeLessThanOrEqual(2 * 64 + 40);
    }
  });

  test('every column kind comes through compaction as it does without, weights included; weights in some blocks only stop it', async () => {
    // 60 blocks cycling through the three of each kind, every ragged block weighted.
    const many = Array.from({ length: 60 }, (_, i) => blockOf(i % 3));
    const cells = (out: hb.data.Column[][]) => names.map((name, c) => [name, out.flatMap((block) => Array.from({ length: lengthOf(block[c]) }, (_, i) => cellOf(block[c], i)))]);
    const compacted = await shuffleThrough(many, names, 4, 21, true);
    expect(lastStats.compactions).toBeGreaterThan(0);
    const spread = await shuffleThrough(many, names, 4, 21, false);
    expect(cells(compacted)).toEqual(cells(spread));
    // One block of the stream without weights: while it is held the buffer is not
    // compacted, and what comes out equals the uncompacted buffer's, weights and all.
    const unweighted = new hb.Ragged(BigInt64Array.of(4n), Int32Array.of(0, 1, 1, 1));
    const mixed = many.map((block, i) => (i === 30 ? names.map((n, c) => (n === 'ragged' ? unweighted : block[c])) : block));
    expect(cells(await shuffleThrough(mixed, names, 16, 21, true))).toEqual(cells(await shuffleThrough(mixed, names, 16, 21, false)));
  });

  test('every column kind comes through as the rows it picked', async () => {
    const blocks = [0, 1, 2].map(blockOf);
    const out = await shuffleThrough(blocks, names, 4, 11);
    const order = referenceShuffle([3, 2, 4], 4, 11).flat();
    names.forEach((name, c) => {
      // Weights included: every block of 'ragged' has them.
      const got = out.flatMap((block) => Array.from({ length: lengthOf(block[c]) }, (_, i) => cellOf(block[c], i)));
      expect([name, got]).toEqual([name, order.map(([b, r]) => cellOf(kinds[name][b], r))]);
    });
  });

  test('strings of every length from 0 to 40 bytes, short ones copied whole-width, come back byte for byte', async () => {
    const text = (block: number, i: number) => `${block}.${i}.`.padEnd(40, String.fromCharCode(97 + (i % 26))).slice(0, i % 41);
    const sizes = [3000, 2000, 50, 4000];
    const blocks = sizes.map((n, b) => [strings(Array.from({ length: n }, (_, i) => text(b, i)))]);
    const out = await shuffleThrough(blocks, ['s'], 2500, 5);
    const order = referenceShuffle(sizes, 2500, 5).flat();
    const got = out.flatMap(([s]) => (s as hb.StringColumn).toArray());
    const mismatches = order.map(([b, r], i) => [i, got[i], text(b, r)]).filter(([, a, e]) => a !== e);
    expect(got.length).toBe(order.length);
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  test('arrays transferred, shrunk or dropped after a push settled change nothing: the buffer holds a copy', async () => {
    type Resizable = ArrayBuffer & { resize(bytes: number): void };
    const resizable = new (ArrayBuffer as unknown as new (bytes: number, options: { maxByteLength: number }) => Resizable)(4 * 4, { maxByteLength: 64 });
    const values = new Float32Array(resizable, 0, 4);
    values.set([1, 2, 3, 4]);
    const moved = Float64Array.of(5, 6, 7, 8);
    const buffer = native.shuffleBufferNew(100, 1);
    expect(await native.shuffleBufferPush(buffer, describeColumns(['a', 'b'], [values, moved]))).toBeNull();
    resizable.resize(0);
    structuredClone(moved.buffer, { transfer: [moved.buffer] });
    const rest = await native.shuffleBufferDrain(buffer, 10);
    const [a, b] = columnsOf(rest!) as [Float32Array, Float64Array];
    expect([...a].sort()).toEqual([1, 2, 3, 4]);
    expect(Array.from(b)).toEqual(Array.from(a, (x) => x + 4));
    expect(await native.shuffleBufferDrain(buffer, 10)).toBeNull();
    native.shuffleBufferRelease(buffer);
  });

  test('an array detached by a getter while a push\'s arguments are read is an Error', () => {
    const splits = Int32Array.of(0, 1, 2);
    const buffer = native.shuffleBufferNew(10, 1);
    const column = { name: 'x', rowSplits: splits, itemOffsets: null, bytes: null, get itemArrays() {
      structuredClone(splits.buffer, { transfer: [splits.buffer as ArrayBuffer] });
      return [Int32Array.of(7, 8)];
    } };
    expect(() => native.shuffleBufferPush(buffer, [column as NativeRowBlockColumn])).toThrow(/shuffleBufferPush: an array was detached or shrunk/);
    native.shuffleBufferRelease(buffer);
  });

  test('a buffer released while a push is in flight finishes that push; later calls refuse it', async () => {
    const buffer = native.shuffleBufferNew(10, 1);
    const pushed = native.shuffleBufferPush(buffer, describeColumns(['v'], [Float64Array.from({ length: 30000 }, (_, i) => i)]));
    native.shuffleBufferRelease(buffer);
    const out = await pushed;
    expect(out![0].itemArrays[0]!.length).toBe(29990);
    expect(() => native.shuffleBufferPush(buffer, describeColumns(['v'], [Float64Array.of(1)]))).toThrow(/buffer was released/);
    expect(() => native.shuffleBufferDrain(buffer, 1)).toThrow(/buffer was released/);
  });

  test('bad arguments and blocks are Errors naming the argument or column, and leave the buffer usable', async () => {
    expect(() => native.shuffleBufferNew(0, 1)).toThrow(/bufferSize must be a positive integer/);
    expect(() => native.shuffleBufferNew(1.5, 1)).toThrow(/bufferSize must be a positive integer/);
    expect(() => native.shuffleBufferNew(10, -1)).toThrow(/seed must be an integer in \[0, 2\^32\)/);
    expect(() => native.shuffleBufferNew('8' as never, 1)).toThrow(/bufferSize must be a number/);
    expect(() => native.shuffleBufferNew(8, 1, 1 as never)).toThrow(/compact must be a boolean/);
    const buffer = native.shuffleBufferNew(2, 1);
    expect(() => native.shuffleBufferPush({} as never, [])).toThrow(/not a shuffle buffer/);
    expect(() => native.shuffleBufferPush(buffer, [])).toThrow(/a block needs columns and rows/);
    expect(() => native.shuffleBufferPush(buffer, describeColumns(['x'], [new Float32Array(0)]))).toThrow(/a block needs columns and rows/);
    expect(() => native.shuffleBufferDrain(buffer, 0)).toThrow(/maxRows must be an integer in \[1, 2\^31\)/);
    await expect(native.shuffleBufferPush(buffer, [{ name: 'x', rowSplits: Int32Array.of(0, 2, 1), itemArrays: [Int32Array.of(1, 2)], itemOffsets: null, bytes: null }])).rejects.toThrow(/shuffleBufferPush: .*column 'x'.*row splits fall at 2/);
    expect(await native.shuffleBufferPush(buffer, describeColumns(['x'], [Float32Array.of(1, 2)]))).toBeNull();
    await expect(native.shuffleBufferPush(buffer, describeColumns(['x'], [Int32Array.of(3)]))).rejects.toThrow(/column 'x' changes type between blocks/);
    await expect(native.shuffleBufferPush(buffer, describeColumns(['y'], [Float32Array.of(3)]))).rejects.toThrow(/column 0 is 'y' but the first block's 'x'/);
    // The refused blocks left no trace: the next good one displaces one of the first two rows.
    const out = await native.shuffleBufferPush(buffer, describeColumns(['x'], [Float32Array.of(3)]));
    expect([1, 2]).toContain((out![0].itemArrays[0] as Float32Array)[0]);
    const rest = await native.shuffleBufferDrain(buffer, 5);
    expect(rest![0].itemArrays[0]!.length).toBe(2);
    await expect(native.shuffleBufferPush(buffer, describeColumns(['x'], [Float32Array.of(4)]))).rejects.toThrow(/after the buffer began to drain/);
    native.shuffleBufferRelease(buffer);
  });
});

describe('through hb.data', () => {
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

  test('Dataset.shuffle gives the order the JS shuffle gave for its seed', async () => {
    const source = () => hb.data.Dataset.synthetic({ numDense: 1, tables: [{ name: 'id', vocabularySize: 2 ** 40, hotness: 1, alpha: 0 }], numSamples: 1000, seed: 4, blockRows: 100 });
    const rows = rowsOf(await collect(source().batch(1000)));
    const shuffled = rowsOf(await collect(source().shuffle(250, { seed: 9 }).batch(1000)));
    const order = referenceShuffle(Array(10).fill(100), 250, passSeed(9, 0)).flat();
    expect(shuffled).toEqual(order.map(([b, r]) => rows[b * 100 + r]));
  });

  test('a copy off the JS thread never reads a buffer a batch handed out before (one batch op feeding another)', async () => {
    const synthetic = (blockRows: number) =>
      hb.data.Dataset.synthetic({ numDense: 1, tables: [{ name: 'id', vocabularySize: 1000, hotness: 1 }], numSamples: 2000, seed: 1, blockRows });
    const buffersOf = (column: hb.data.Column): ArrayBufferLike[] =>
      column instanceof hb.Ragged ? [column.values.buffer, column.rowSplits.buffer] : [(column as Float32Array).buffer];
    // Runs the dataset, noting for each copy off the JS thread whether it reads only
    // buffers no batch handed out so far was a view of.
    const run = async (ds: hb.data.Dataset) => {
      const seen = new Set<ArrayBufferLike>();
      const original = native.concatRowsAsync;
      const offThread: boolean[] = [];
      native.concatRowsAsync = (pieces) => {
        offThread.push(pieces.every((p) => p.columns.every((c) => [c.rowSplits, ...c.itemArrays, c.itemOffsets, c.bytes].every((a) => a === null || !seen.has(a.buffer)))));
        return original.call(native, pieces);
      };
      try {
        const got: hb.data.Batch<hb.data.Column>[] = [];
        for await (const batch of ds) {
          got.push(batch);
          for (const column of [...Object.values(batch.features), batch.labels as hb.data.Column]) for (const b of buffersOf(column)) seen.add(b);
        }
        return { rows: rowsOf(got), offThread };
      } finally {
        native.concatRowsAsync = original;
      }
    };
    const plain = rowsOf(await collect(synthetic(4096).batch(70)));
    // The inner op hands the outer views of its source blocks; the outer hands the consumer
    // views of those and cuts across them: those cuts are copied on the JS thread.
    const nested = await run(synthetic(4096).batch(100).batch(70).prefetch(2));
    expect(nested.rows).toEqual(plain);
    expect(nested.offThread).toEqual([]);
    // Blocks of 100 cut into batches of 150: no batch lies inside one block, no view is
    // handed out, and every cut is copied off the JS thread.
    const spanning = await run(synthetic(100).batch(150).prefetch(2));
    expect(spanning.rows).toEqual(rowsOf(await collect(synthetic(100).batch(150))));
    expect(spanning.offThread.length).toBe(13);
    expect(spanning.offThread.every((ok) => ok)).toBe(true);
  });

  test('a consumer that moves a batch\'s buffer away gets an Error naming the column where a later batch needs those rows', async () => {
    // Blocks of 100 rows cut into batches of 60: [0,60) is a view of block 0, [60,120)
    // spans blocks 0 and 1 and reads the rows after the view.
    const ds = hb.data.Dataset.synthetic({ numDense: 1, tables: [{ name: 'id', vocabularySize: 1000, hotness: 1 }], numSamples: 300, seed: 1, blockRows: 100 }).batch(60);
    const plain = rowsOf(await collect(ds));
    const iterator = ds[Symbol.asyncIterator]();
    const first = (await iterator.next()).value!;
    expect(rowsOf([first])).toEqual(plain.slice(0, 60));
    const dense = first.features.I1 as Float32Array;
    structuredClone(dense.buffer, { transfer: [dense.buffer as ArrayBuffer] });
    await expect(iterator.next()).rejects.toThrow(/column 'I1'.*detached/);
    await iterator.return?.(undefined);
  });
});
