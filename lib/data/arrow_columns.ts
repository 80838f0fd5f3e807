// Arrow arrays (what parquet-wasm decodes a row group into) -> wire columns, in the
// reader worker. Arrow already keeps strings as one byte buffer plus int32 offsets,
// which is StringColumn's layout, so most columns pass through as views; only nulls
// (filled with the field's default or dropped from lists) and dictionaries are rewritten.
import * as os from 'node:os';
import type * as arrow from 'apache-arrow';
import type { WireColumn, WireNumeric } from './wire';

// apache-arrow's Type enum, by value (a type-only import keeps arrow out of this
// module's load; the numbers are fixed by the Arrow format).
const T = {
  Int: 2,
  Float: 3,
  Binary: 4,
  Utf8: 5,
  Bool: 6,
  List: 12,
  FixedSizeList: 16,
  LargeBinary: 19,
  LargeUtf8: 20,
  LargeList: 21,
  Dictionary: -1,
} as const;

export type Default = number | bigint;

/** What a column becomes, decided from its Arrow type before any row is read. */
export type ColumnPlan = 'int32' | 'int64' | 'float32' | 'float64' | 'string' | { list: 'int32' | 'int64' | 'float32' | 'float64' | 'string' };

function scalarPlan(type: arrow.DataType): Exclude<ColumnPlan, { list: unknown }> | undefined {
  switch (type.typeId as number) {
    case T.Int: {
      const t = type as arrow.Int;
      return t.bitWidth === 64 || (t.bitWidth === 32 && !t.isSigned) ? 'int64' : 'int32';
    }
    case T.Bool:
      return 'int32';
    case T.Float: {
      const precision = (type as arrow.Float).precision as number; // 0 half, 1 single, 2 double
      return precision === 1 ? 'float32' : precision === 2 ? 'float64' : undefined;
    }
    case T.Utf8:
    case T.Binary:
    case T.LargeUtf8:
    case T.LargeBinary:
      return 'string';
    case T.Dictionary:
      return scalarPlan((type as arrow.Dictionary).dictionary);
    default:
      return undefined;
  }
}

/** The plan for a column, or undefined when hb.data does not read its type. */
export function planColumn(type: arrow.DataType): ColumnPlan | undefined {
  const id = type.typeId as number;
  if (id === T.List || id === T.LargeList || id === T.FixedSizeList) {
    const child = scalarPlan((type as arrow.List).children[0].type);
    return child === undefined ? undefined : { list: child };
  }
  return scalarPlan(type);
}

function validMask(data: arrow.Data): Uint8Array | undefined {
  const bitmap = data.nullBitmap;
  if (data.nullCount === 0 || bitmap === undefined || bitmap === null || bitmap.length === 0) return undefined;
  const n = data.length;
  const valid = new Uint8Array(n);
  let i = 0;
  if ((data.offset & 7) === 0) {
    // Whole bitmap bytes at a time while they are aligned.
    for (let byte = data.offset >> 3; i + 8 <= n; i += 8, byte++) {
      const b = bitmap[byte];
      if (b === 255) valid.fill(1, i, i + 8);
      else for (let k = 0; k < 8; k++) valid[i + k] = (b >> k) & 1;
    }
  }
  for (let bit = data.offset + i; i < n; i++, bit++) valid[i] = (bitmap[bit >> 3] >> (bit & 7)) & 1;
  return valid;
}

function bigintOffsets(offsets: BigInt64Array | Int32Array, name: string): Int32Array {
  if (offsets instanceof Int32Array) return offsets;
  const out = new Int32Array(offsets.length);
  for (let i = 0; i < offsets.length; i++) {
    const v = Number(offsets[i]);
    if (v > 0x7fffffff) throw new RangeError(`column '${name}' holds more than 2 GiB in one block`);
    out[i] = v;
  }
  return out;
}

/**
 * A uint64 of 2^63 or more: it has no int64, and reinterpreting its bits would make it a
 * negative id, which lookups prune and hashing hashes as another number. `row` counts
 * from the start of the Arrow array (the row group, or the block the decoder cut it into).
 */
export class Uint64BeyondInt64 extends RangeError {
  constructor(
    readonly column: string,
    readonly value: bigint,
    readonly row: number,
  ) {
    super(`column '${column}' holds the uint64 value ${value} at row ${row} of its row group, beyond int64 (ids must be below 2^63)`);
  }
}

function isUint64(type: arrow.DataType): boolean {
  if ((type.typeId as number) === T.Dictionary) return isUint64((type as arrow.Dictionary).dictionary);
  return (type.typeId as number) === T.Int && (type as arrow.Int).bitWidth === 64 && !(type as arrow.Int).isSigned;
}

/**
 * The first present value of a uint64 column read as int64 that came out negative (its
 * uint64 was 2^63 or more), or -1. Only present values count: the slot of a null holds
 * whatever the decoder left there (parquet-wasm leaves 2^64 - 1), and it is replaced by
 * the default anyway. The high words are tested as plain numbers, not bigints, to keep
 * the pass cheap.
 */
function firstBeyondInt64(values: BigInt64Array, valid: Uint8Array | undefined): number {
  const words = new Int32Array(values.buffer, values.byteOffset, values.length * 2);
  const high = os.endianness() === 'LE' ? 1 : 0;
  for (let i = 0; i < values.length; i++) if (words[2 * i + high] < 0 && (valid === undefined || valid[i] === 1)) return i;
  return -1;
}

function checkIds(values: BigInt64Array, valid: Uint8Array | undefined, name: string, rowOf: (index: number) => number): void {
  const at = firstBeyondInt64(values, valid);
  if (at !== -1) throw new Uint64BeyondInt64(name, BigInt.asUintN(64, values[at]), rowOf(at));
}

function numericValues(data: arrow.Data, plan: 'int32' | 'int64' | 'float32' | 'float64', name: string): WireNumeric {
  const values = data.values as ArrayLike<number | bigint> & ArrayBufferView;
  const n = data.length;
  if ((data.typeId as number) === T.Bool) {
    const out = new Int32Array(n);
    for (let i = 0, bit = data.offset; i < n; i++, bit++) out[i] = ((values as Uint8Array)[bit >> 3] >> (bit & 7)) & 1;
    return out;
  }
  switch (plan) {
    case 'float32':
    case 'float64':
      return values as Float32Array | Float64Array;
    case 'int32':
      return values instanceof Int32Array ? values : Int32Array.from(values as ArrayLike<number>);
    case 'int64':
      if (values instanceof BigInt64Array) return values;
      // Checked by the callers, which know which values are present and which row each is in.
      if (values instanceof BigUint64Array) return new BigInt64Array(values.buffer, values.byteOffset, values.length);
      return BigInt64Array.from(values as ArrayLike<number>, (v) => BigInt(v));
  }
}

function fillMissing(values: WireNumeric, valid: Uint8Array, fallback: Default): WireNumeric {
  const out = values.slice();
  const fill = out instanceof BigInt64Array ? BigInt(fallback) : Number(fallback);
  for (let i = 0; i < valid.length; i++) if (valid[i] === 0) (out as Float64Array)[i] = fill as number;
  return out;
}

function stringColumn(data: arrow.Data, name: string): WireColumn & { kind: 'string' } {
  const offsets = bigintOffsets(data.valueOffsets as Int32Array | BigInt64Array, name);
  const bytes = data.values as Uint8Array;
  const n = data.length;
  const valid = validMask(data);
  const base = offsets[0];
  const end = offsets[n];
  const rebased = base === 0 && offsets.length === n + 1 ? offsets : offsets.subarray(0, n + 1).map((o) => o - base);
  return { kind: 'string', bytes: bytes.subarray(base, end), offsets: rebased, valid };
}

function dictionaryColumn(data: arrow.Data, plan: ColumnPlan, name: string, fallback: Default, checked: boolean): WireColumn {
  const dictionary = (data as arrow.Data<arrow.Dictionary>).dictionary!;
  const parts = dictionary.data.map((d) => (plan === 'string' ? stringColumn(d, name) : { kind: 'numeric' as const, values: numericValues(d, plan as 'int32', name) }));
  const indices = data.values as ArrayLike<number | bigint>;
  const valid = validMask(data);
  const n = data.length;
  // Dictionary chunks are addressed as one index space.
  const starts: number[] = [0];
  for (const p of parts) starts.push(starts[starts.length - 1] + (p.kind === 'string' ? p.offsets.length - 1 : p.values.length));
  const locate = (index: number): [number, number] => {
    let c = 0;
    while (index >= starts[c + 1]) c++;
    return [c, index - starts[c]];
  };
  if (plan === 'string') {
    const strings = parts as Array<WireColumn & { kind: 'string' }>;
    const offsets = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) {
      let len = 0;
      if (valid === undefined || valid[i]) {
        const [c, k] = locate(Number(indices[i]));
        len = strings[c].offsets[k + 1] - strings[c].offsets[k];
      }
      offsets[i + 1] = offsets[i] + len;
    }
    const bytes = new Uint8Array(offsets[n]);
    for (let i = 0; i < n; i++) {
      if (valid !== undefined && !valid[i]) continue;
      const [c, k] = locate(Number(indices[i]));
      bytes.set(strings[c].bytes.subarray(strings[c].offsets[k], strings[c].offsets[k + 1]), offsets[i]);
    }
    return { kind: 'string', bytes, offsets, valid };
  }
  const numbers = parts as Array<{ kind: 'numeric'; values: WireNumeric }>;
  const out = new (numbers[0].values.constructor as new (n: number) => WireNumeric)(n);
  const fill = out instanceof BigInt64Array ? BigInt(fallback) : Number(fallback);
  for (let i = 0; i < n; i++) {
    if (valid !== undefined && !valid[i]) (out as Float64Array)[i] = fill as number;
    else {
      const [c, k] = locate(Number(indices[i]));
      (out as Float64Array)[i] = (numbers[c].values as Float64Array)[k];
    }
  }
  if (checked && isUint64(data.type)) checkIds(out as BigInt64Array, valid, name, (i) => i);
  return { kind: 'numeric', values: out };
}

// `checked`: whether uint64 ids are checked here; a list's elements are checked once the
// list is assembled, when each element's row is known and dropped nulls are gone.
function scalarColumn(data: arrow.Data, plan: Exclude<ColumnPlan, { list: unknown }>, name: string, fallback: Default, checked = true): WireColumn {
  if ((data.typeId as number) === T.Dictionary) return dictionaryColumn(data, plan, name, fallback, checked);
  if (plan === 'string') return stringColumn(data, name);
  const values = numericValues(data, plan, name);
  const valid = validMask(data);
  if (checked && isUint64(data.type)) checkIds(values as BigInt64Array, valid, name, (i) => i);
  return { kind: 'numeric', values: valid === undefined ? values : fillMissing(values, valid, fallback) };
}

function gatherWire(column: WireColumn, keep: Int32Array): WireColumn {
  if (column.kind === 'numeric') {
    const out = new (column.values.constructor as new (n: number) => WireNumeric)(keep.length);
    for (let i = 0; i < keep.length; i++) (out as Float64Array)[i] = (column.values as Float64Array)[keep[i]];
    return { kind: 'numeric', values: out };
  }
  if (column.kind !== 'string') throw new Error('nested lists are not read');
  const offsets = new Int32Array(keep.length + 1);
  for (let i = 0; i < keep.length; i++) offsets[i + 1] = offsets[i] + column.offsets[keep[i] + 1] - column.offsets[keep[i]];
  const bytes = new Uint8Array(offsets[keep.length]);
  for (let i = 0; i < keep.length; i++) bytes.set(column.bytes.subarray(column.offsets[keep[i]], column.offsets[keep[i] + 1]), offsets[i]);
  return { kind: 'string', bytes, offsets };
}

function listColumn(data: arrow.Data, childPlan: Exclude<ColumnPlan, { list: unknown }>, name: string): WireColumn {
  const n = data.length;
  const child = data.children[0];
  let offsets: Int32Array;
  if ((data.typeId as number) === T.FixedSizeList) {
    const size = (data.type as arrow.FixedSizeList).listSize;
    offsets = new Int32Array(n + 1);
    for (let i = 0; i <= n; i++) offsets[i] = i * size;
  } else {
    offsets = bigintOffsets(data.valueOffsets as Int32Array | BigInt64Array, name);
  }
  const rowValid = validMask(data);
  const childValid = validMask(child);
  let values = scalarColumn(child, childPlan, name, 0, false);
  let splits: Int32Array;
  if (rowValid === undefined && childValid === undefined) {
    const base = offsets[0];
    splits = base === 0 && offsets.length === n + 1 ? offsets : offsets.subarray(0, n + 1).map((o) => o - base);
    if (base !== 0 || offsets[n] !== (values.kind === 'string' ? values.offsets.length - 1 : (values as { values: WireNumeric }).values.length)) {
      const keep = new Int32Array(offsets[n] - base).map((_, k) => base + k);
      values = gatherWire(values, keep);
    }
  } else {
    // A missing list is empty and a missing element inside a list is dropped: neither carries an id.
    splits = new Int32Array(n + 1);
    const keep: number[] = [];
    for (let i = 0; i < n; i++) {
      if (rowValid === undefined || rowValid[i]) {
        for (let k = offsets[i]; k < offsets[i + 1]; k++) if (childValid === undefined || childValid[k]) keep.push(k);
      }
      splits[i + 1] = keep.length;
    }
    values = gatherWire(values, Int32Array.from(keep));
  }
  if (childPlan === 'int32' || childPlan === 'int64') {
    const ids = (values as { values: WireNumeric }).values as BigInt64Array | Int32Array;
    if (isUint64(child.type)) checkIds(ids as BigInt64Array, undefined, name, (k) => rowOfValue(splits, k));
    return { kind: 'ragged', values: ids, rowSplits: splits };
  }
  if (values.kind === 'string') delete values.valid;
  return { kind: 'list', values, rowSplits: splits };
}

/** The row whose values include value k: the last i with splits[i] <= k (rows before it may be empty). */
function rowOfValue(splits: Int32Array, k: number): number {
  let lo = 0;
  let hi = splits.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (splits[mid] <= k) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** One Arrow array as a wire column; `fallback` replaces missing numbers. */
export function wireColumn(data: arrow.Data, plan: ColumnPlan, name: string, fallback: Default): WireColumn {
  if (typeof plan === 'object') return listColumn(data, plan.list, name);
  return scalarColumn(data, plan, name, fallback);
}
