// hb.data's columns as the addon's row gathers take them (native/binding/row_block.h):
// each column described over its own arrays (no copy), and each gathered column made back
// into its hb.data kind. The batch op's cut across blocks (concatRowRanges) and the
// shuffle buffer (shuffle.ts) run on these; neither steps through rows in JS.
import { native, NativeRowBlockColumn, NativeRowGatherResult } from '../native';
import { Ragged } from '../tensor/ragged';
import { StringColumn } from '../tensor/string_column';
import type { Column, NumericColumn } from './batch';
import { ListColumn } from './list_column';

function stringsSpec(name: string, strings: StringColumn, rowSplits: Int32Array | null): NativeRowBlockColumn {
  return { name, rowSplits, itemArrays: [strings.valid ?? null], itemOffsets: strings.offsets, bytes: strings.bytes };
}

function describe(name: string, column: Column): NativeRowBlockColumn {
  if (column instanceof Ragged) {
    return { name, rowSplits: column.rowSplits, itemArrays: [column.values, column.weights ?? null], itemOffsets: null, bytes: null };
  }
  if (column instanceof ListColumn) {
    if (column.values instanceof StringColumn) return stringsSpec(name, column.values, column.rowSplits);
    return { name, rowSplits: column.rowSplits, itemArrays: [column.values], itemOffsets: null, bytes: null };
  }
  if (column instanceof StringColumn) return stringsSpec(name, column, null);
  return { name, rowSplits: null, itemArrays: [column], itemOffsets: null, bytes: null };
}

/** A block's columns for the addon, by name (errors name the column). */
export function describeColumns(names: readonly string[], columns: readonly Column[]): NativeRowBlockColumn[] {
  return columns.map((column, c) => describe(names[c], column));
}

type ResultArray = NonNullable<NativeRowGatherResult['itemArrays'][number]>;
const constructors = { Uint8Array, Int32Array, Float32Array, Float64Array, BigInt64Array } as const;

function tagOf(array: ResultArray): keyof typeof constructors {
  return Object.prototype.toString.call(array).slice(8, -1) as keyof typeof constructors;
}

/**
 * The array re-viewed (no copy) through this realm's constructor: arrays the addon makes
 * belong to the realm that loaded it, and the column classes check `instanceof` (which
 * fails across realms, e.g. in a vm context or jest's).
 */
function local<T extends ResultArray>(array: T): T {
  const ctor = constructors[tagOf(array)] as unknown as new (buffer: ArrayBufferLike, offset: number, length: number) => T;
  return array instanceof ctor ? array : new ctor(array.buffer, array.byteOffset, array.length);
}

function stringsOf(r: NativeRowGatherResult): StringColumn {
  // Flags only where a block read had any: else every string is present.
  const flags = r.itemArrays[0];
  return new StringColumn(local(r.bytes!), local(r.itemOffsets!), flags === null ? undefined : (local(flags) as Uint8Array));
}

/**
 * A gathered column as its hb.data kind, read off its shape: strings have byte offsets,
 * lists and ragged columns row splits; integer lists are hb.Ragged, float lists ListColumn.
 */
function columnOf(r: NativeRowGatherResult): Column {
  if (r.rowSplits === null) return r.itemOffsets !== null ? stringsOf(r) : (local(r.itemArrays[0]!) as NumericColumn);
  const splits = local(r.rowSplits);
  if (r.itemOffsets !== null) return new ListColumn(stringsOf(r), splits);
  const values = r.itemArrays[0]!;
  const tag = tagOf(values);
  if (tag === 'Float32Array' || tag === 'Float64Array') return new ListColumn(local(values) as Float32Array | Float64Array, splits);
  // Weights in some blocks only: none come back (as concatenating the blocks in JS gave).
  const weights = r.itemArrays[1];
  const weighted = weights !== null && weights !== undefined && !r.partial[1];
  return new Ragged(local(values) as BigInt64Array | Int32Array, splits, weighted ? (local(weights) as Float32Array) : undefined);
}

/** The addon's gathered columns as hb.data columns. */
export function columnsOf(results: readonly NativeRowGatherResult[]): Column[] {
  return results.map(columnOf);
}

/** Rows of a block's columns: [start, start + count). */
export interface RowRange {
  columns: readonly Column[];
  start: number;
  count: number;
}

function rangesFor(names: readonly string[], pieces: readonly RowRange[]) {
  return pieces.map((p) => ({ columns: describeColumns(names, p.columns), start: p.start, count: p.count }));
}

/** The pieces' rows one after another, copied in one native call before it returns. */
export function concatRowRanges(names: readonly string[], pieces: readonly RowRange[]): Column[] {
  return columnsOf(native.concatRows(rangesFor(names, pieces)));
}

/**
 * The same, copied off the JS thread. The pieces' arrays are read while the promise is
 * pending: only for arrays nothing else can reach (no view of them was handed out).
 */
export async function concatRowRangesOffThread(names: readonly string[], pieces: readonly RowRange[]): Promise<Column[]> {
  return columnsOf(await native.concatRowsAsync(rangesFor(names, pieces)));
}
